#pragma once

/// The master's workflow work, inside its fenced scan (docs/workflows.md): creating the runs of
/// due workflows, starting and skipping steps as their parents end, ending runs, and the run
/// timeout. Every write is in the scan's transaction, so a deposed master writes nothing, and a
/// new master recomputes every run's state from its stored fires (model::EvaluateRun).
///
/// The overlap policy (max_concurrent_runs) is judged at each run's scheduled time: a time
/// within the lookahead gets its run ahead only when a slot is free; otherwise the workflow's
/// next_fire_time stays at it until a scan at or after that time decides.
///
/// Which runs a scan advances: the runs it creates; the runs of step fires whose follow-up this
/// scan handled (a step ended); running runs with no fire in their generation yet (created or
/// re-run through the API), and every `sweep` interval a batch of running runs (round-robin;
/// the run timeout is checked there).

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <soci/soci.h>

#include "sched/cron/schedule.hpp"
#include "sched/db/dialect.hpp"
#include "sched/protocol/fires_notice.hpp"
#include "sched/trigger/assigner.hpp"
#include "sched/trigger/fire_planner.hpp"
#include "sched/trigger/fire_trace.hpp"

namespace sched::trigger {

struct WorkflowProgressReport {
    int runs_created = 0;
    int runs_overlapped = 0;  ///< scheduled times that got a run `skipped` (reason overlap)
    int runs_ended = 0;       ///< succeeded or failed
    int runs_timed_out = 0;
    int steps_started = 0;                                               ///< step fires inserted (one per shard)
    int steps_skipped = 0;                                               ///< skip rows (upstream, run_timeout)
    std::map<std::string, std::vector<protocol::NoticedFire>> assigned;  ///< new fires per slave node
    std::optional<std::int64_t> earliest_due_ms;                         ///< of any workflow not paused
    std::vector<PendingFireSpan> spans;  ///< the step fires' `planned` spans, when a tracer is installed
};

struct WorkflowPlannerOptions {
    std::int64_t lookahead_ms = 2000;
    int batch = 100;                          ///< due workflows per scan, and runs per advance query
    std::int64_t sweep_ms = 5000;             ///< how often a batch of running runs is re-checked
    cron::MisfireOptions misfire;             ///< threshold and fire-all cap (the policy is the workflow's)
    std::size_t max_runs_per_workflow = 100;  ///< per scan
};

class WorkflowPlanner {
  public:
    explicit WorkflowPlanner(WorkflowPlannerOptions options) : options_(options) {}

    /// Inside the scan's fenced transaction, after the fire follow-ups. `ended_runs`: the runs of
    /// the step fires whose follow-up this scan handled. `live_executors(app)` counts an app's
    /// live instances (sharding-broadcast steps).
    WorkflowProgressReport Advance(soci::session& s, const db::Dialect& dialect, std::int64_t epoch, std::int64_t now,
                                   Assigner& assigner, const std::set<std::int64_t>& ended_runs,
                                   const std::function<int(const std::string& app)>& live_executors);

  private:
    struct CachedSchedule {
        std::string key;
        std::optional<cron::Schedule> schedule;
        std::string error;
    };

    std::vector<std::int64_t> CreateDueRuns(soci::session& s, const db::Dialect& dialect, std::int64_t now,
                                            WorkflowProgressReport& r);

    WorkflowPlannerOptions options_;
    std::map<std::int64_t, CachedSchedule> schedules_;
    std::int64_t next_sweep_ms_ = 0;
    std::int64_t sweep_after_id_ = 0;
};

}  // namespace sched::trigger
