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
/// Pure functions over values: unit-tested on synthetic histories (history_checker_test.cpp).

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "sched/store/fire.hpp"

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
    std::vector<store::Fire> fires;  ///< every fire row of those jobs
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

}  // namespace sched::chaos
