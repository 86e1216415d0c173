#pragma once

/// Planning for a job with a calendar or bounds (docs/schedules.md): PlanJobFires, then
///   - no fire before `start_at`: a due time before it moves to the first scheduled time at or
///     after start_at (times before start_at are not scheduled times, so the ledger has nothing);
///   - a scheduled time in an excluded period of the calendar gets no fire: each run of
///     consecutive excluded times becomes one ledger entry (SkippedTimes). A run still open at the
///     end of the lookahead goes on through the following excluded times (at most
///     kMaxExcludedPerRun per plan; the rest continues at the next planning), so a weekend of a
///     job that fires every minute is one entry, not one per scan;
///   - no fire after `end_at`; the job ends (JobEnd::kEndAt) once its next time would pass it;
///   - at most `max_runs - planned_runs` fires; the job ends (kMaxRuns) with its last one.
/// Pure (no I/O), unit-tested with fixed times.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "sched/cron/calendar.hpp"
#include "sched/trigger/fire_planner.hpp"

namespace sched::trigger {

/// A job's bounds as stored (model::Job start_at, end_at, max_runs, planned_runs).
struct JobBounds {
    std::optional<std::int64_t> start_ms;
    std::optional<std::int64_t> end_ms;
    std::optional<std::int64_t> max_runs;
    std::int64_t planned_runs = 0;

    bool any() const { return start_ms || end_ms || max_runs; }
};

enum class JobEnd { kEndAt, kMaxRuns };
/// "end_at", "max_runs" (model::Job::completed_reason).
std::string_view JobEndName(JobEnd end);

struct BoundedPlan {
    JobPlan plan;  ///< the fires left and the job's new next_fire_time (nullopt when it ends)
    /// Runs of consecutive scheduled times the calendar excluded, ascending; exact counts.
    std::vector<SkippedTimes> excluded;
    /// Set when the job completes with this plan.
    std::optional<JobEnd> end;
};

inline constexpr std::int64_t kMaxExcludedPerRun = 10000;

/// Plans a job whose stored next_fire_time is `due_ms`, with `calendar` (nullptr: none) and
/// `bounds` applied as described above.
BoundedPlan PlanBoundedJobFires(const cron::Schedule& schedule, const cron::Calendar* calendar, const JobBounds& bounds,
                                std::int64_t due_ms, std::int64_t now_ms, const PlanOptions& options);

/// The first scheduled time of a job that is not before `start_ms` and after `after_ms`, or
/// nullopt (none, or past `end_ms`). The web API's next_fire_time for a bounded job.
std::optional<std::int64_t> FirstBoundedFireTime(const cron::Schedule& schedule, const JobBounds& bounds,
                                                 std::int64_t after_ms);

}  // namespace sched::trigger
