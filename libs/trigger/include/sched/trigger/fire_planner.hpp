#pragma once

/// What the master creates for one due job in one scan: the fire rows and the job's new
/// next_fire_time. Pure (no I/O), so every case is unit-tested with fixed times.
///
/// Fire times up to `now` go through the job's misfire policy (cron::PlanMisfire); fire times
/// after `now` but within the lookahead are created ahead, so that the slave holding them fires
/// each at its exact time instead of waiting for the next scan.

#include <cstdint>
#include <optional>
#include <vector>

#include "sched/cron/calendar.hpp"
#include "sched/cron/misfire.hpp"
#include "sched/cron/schedule.hpp"
#include "sched/store/fire.hpp"

namespace sched::trigger {

struct PlannedFireRow {
    /// When it runs: the nominal time plus the job's deterministic jitter (cron::PlanTime, as the
    /// API's preview shows it), so planning the same nominal time twice (after a failover) gives
    /// the same fire key.
    std::int64_t scheduled_ms = 0;
    std::int64_t nominal_ms = 0;  ///< the schedule's time, before jitter
    model::FireKind kind = model::FireKind::kSchedule;
};

/// Scheduled times up to now that get no fire of their own (the misfire policy skipped them,
/// or fire-once-now folded them into its one fire): one ledger row stands for the run.
struct SkippedTimes {
    std::int64_t first_ms = 0;
    std::int64_t last_ms = 0;
    std::int64_t count = 0;
    bool count_is_lower_bound = false;  ///< counting stopped at 100,000
};

struct JobPlan {
    std::vector<PlannedFireRow> fires;  ///< ascending by time
    std::optional<SkippedTimes> skipped;
    /// Scheduled times up to now that PlanOptions::calendar excluded, one entry per run of
    /// consecutive ones (cron::MisfirePlan::excluded): calendar skips at their own times.
    std::vector<SkippedTimes> excluded;
    /// The job's new next_fire_time (nullopt: none, or a fixed-delay job waits for its run).
    std::optional<std::int64_t> next_fire_time;
};

struct PlanOptions {
    std::int64_t lookahead_ms = 2000;
    cron::MisfireOptions misfire;          ///< policy comes from the job; threshold and cap from config
    std::size_t max_fires_per_job = 1000;  ///< per scan; the rest waits for the next scan
    /// The job's calendar (nullptr: none). Only times up to now are judged here, so that the misfire
    /// policy never decides about an excluded time; PlanBoundedJobFires judges the lookahead.
    const cron::Calendar* calendar = nullptr;
};

/// Plans the fires of a job whose stored next_fire_time is `due_ms`. next_fire_time (stored and
/// returned) is always a nominal time; only the fire rows carry the jitter, and whether a time is
/// due or late is judged by its nominal time.
JobPlan PlanJobFires(const cron::Schedule& schedule, std::int64_t due_ms, std::int64_t now_ms,
                     const PlanOptions& options);

}  // namespace sched::trigger
