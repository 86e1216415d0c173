#pragma once

/// The chaos suite's history checker: given what the database recorded (fire rows) and what the
/// executors saw (sink logs of tests/support/sink_executor.cpp), it checks the scheduler's
/// promises over a window of scheduled times:
///
/// 1. **No double**: no (job, scheduled time, attempt) ran twice (two sink lines, on one instance
///    or two) and no (job, scheduled time, attempt, shard) has two fire rows (e.g. a schedule and
///    a misfire row for one second).
/// 2. **None lost**: every expected time of every job in [from, to) either ran (a sink line or a
///    succeeded row), or has fire rows that all ended, the last one with its reason (failed,
///    timeout, lost, skipped, killed + a result message) and with a retry row exactly when the
///    job's policy owes one (failed/timeout below retry_max; lost only for at-least-once jobs),
///    or was dropped by the job's misfire policy (skip: the next row was planned more than the
///    misfire threshold late; fire-once-now: the next row is a misfire row). A fire in the window
///    still pending/dispatching/running when checked is "stuck".
/// 3. **Epochs never go backwards at an executor instance**: in arrival order, no run carries an
///    epoch older than one the instance ran more than `epoch_slack_ms` earlier (the slack covers
///    runs accepted together whose handlers start in another order on the SDK's worker threads).
///
/// CheckWorkflowHistory checks the same promises for workflow runs (docs/workflows.md): every run
/// in the window ended, every step of an ended run ended (no lost step), no step fire ran twice,
/// a step ran only after its parents ended, a succeeded step really ran, and the run's status
/// agrees with its steps.
///
/// Pure functions over values: unit-tested on synthetic histories (history_checker_test.cpp).

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "sched/store/fire.hpp"
#include "sched/store/workflow_run.hpp"

namespace sched::chaos {

/// One line of a sink log: one run an executor instance started.
struct SinkRecord {
    std::int64_t arrival_ms = 0;
    std::int64_t job_id = 0;
    std::int64_t fire_id = 0;
    std::int64_t scheduled_ms = 0;
    std::int64_t attempt = 0;
    std::int64_t epoch = 0;
    std::string instance;
};

/// Reads a sink log. A line that does not parse (the last one, cut by kill -9) is skipped and
/// counted in `*torn`. A missing file is an empty log.
std::vector<SinkRecord> ReadSinkLog(const std::filesystem::path& path, int* torn = nullptr);

/// What the checker needs to know about a job: its schedule (every `period_ms` from
/// `first_ms`) and the policies that decide what a missing or failed time should look like.
struct JobPolicy {
    std::int64_t job_id = 0;
    std::int64_t first_ms = 0;
    std::int64_t period_ms = 1000;
    std::string misfire_policy = "fire-all";  ///< skip | fire-once-now | fire-all
    int retry_max = 0;
    bool at_least_once = false;
};

struct HistoryInput {
    std::vector<JobPolicy> jobs;
    std::vector<model::Fire> fires;  ///< every fire row of those jobs
    std::vector<SinkRecord> runs;    ///< every sink line of every instance
    std::int64_t from_ms = 0;        ///< expected times in [from_ms, to_ms) are checked
    std::int64_t to_ms = 0;
    std::int64_t misfire_threshold_ms = 5000;
    std::int64_t epoch_slack_ms = 100;
};

struct HistoryReport {
    std::vector<std::string> violations;
    int expected = 0;                              ///< (job, time) pairs checked
    int ran = 0;                                   ///< of those, ran at least once
    int misfire_dropped = 0;                       ///< dropped by a skip / fire-once-now policy
    std::map<std::string, int> ended_without_run;  ///< "status (reason)" of the last attempt -> count
    int retries = 0;                               ///< fire rows with attempt > 0
    int runs = 0;                                  ///< sink lines

    bool ok() const { return violations.empty(); }
    /// Counts and the first `max_violations` violations, for a failure message or a log.
    std::string Summary(std::size_t max_violations = 30) const;
};

HistoryReport CheckHistory(const HistoryInput& input);

struct WorkflowHistoryInput {
    std::vector<model::WorkflowRun> runs;  ///< the workflow runs, with their definition copy
    std::vector<model::Fire> fires;        ///< every step fire of those runs (ListForWorkflowRuns)
    std::vector<SinkRecord> sink;          ///< every sink line of every instance
    std::int64_t from_ms = 0;              ///< runs scheduled in [from_ms, to_ms) are checked
    std::int64_t to_ms = 0;
};

struct WorkflowHistoryReport {
    std::vector<std::string> violations;
    std::map<std::string, int> runs;          ///< status of the checked runs -> count
    std::map<std::string, int> failed_steps;  ///< "status (reason)" of a failed step's fire -> count
    int step_fires = 0;                       ///< fire rows of the checked runs
    int step_runs = 0;                        ///< sink lines of the checked runs' step fires

    bool ok() const { return violations.empty(); }
    int Runs(const std::string& status) const {
        const auto it = runs.find(status);
        return it == runs.end() ? 0 : it->second;
    }
    std::string Summary(std::size_t max_violations = 30) const;
};

/// Over the runs scheduled in [from_ms, to_ms), the violations, each naming run, step and fire:
///   stuck        a run still `running`;
///   lost step    a step of a `succeeded` or `failed` run whose state (model::EvaluateRun over
///                the run's fires) is not succeeded, failed or skipped;
///   double       a step fire key (job, scheduled time, attempt) the sinks ran more than once,
///                or two fire rows of one step, attempt and shard in a run;
///   never ran    a succeeded step fire with no sink line;
///   early        a step fire that started (its sink line) before a fire of a parent ended
///                (finished_at; the same host's clock, no slack);
///   status       a run `succeeded` with a failed step, or `failed` with none; a run `skipped`
///                (overlap) with step fires.
/// A `timed-out` run's steps are not checked for an outcome (the timeout ends what it finds).
WorkflowHistoryReport CheckWorkflowHistory(const WorkflowHistoryInput& input);

}  // namespace sched::chaos
