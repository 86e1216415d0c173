#pragma once

/// Misfire math (docs/cron.md): which fire rows to create for a job whose due time has
/// passed, and which next_fire_time to store. Pure functions of their inputs.
///
/// A scheduled time t is *late* when now - t > threshold, otherwise it is *on time*. Late times
/// are what the policy decides about:
///   skip           late times get no fire; on-time ones fire as scheduled.
///   fire-once-now  if any time is late, one fire at `now` (misfire) stands for every scheduled
///                  time up to now, on-time ones included; otherwise on-time ones fire.
///   fire-all       the most recent `fire_all_cap` late times fire (misfire), older late ones are
///                  dropped, and on-time ones fire as scheduled.
/// With a calendar, a time it excludes is not one the policy decides about: it is neither late nor
/// on time and gets no fire, and MisfirePlan::excluded lists it at its own time (a calendar skip,
/// not a misfire). The one fire of fire-once-now stands for the times the calendar allowed, so the
/// calendar does not judge it (`now` is not a scheduled time).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "sched/common/job_vocabulary.hpp"
#include "sched/common/status.hpp"
#include "sched/cron/calendar.hpp"
#include "sched/cron/schedule.hpp"

namespace sched::cron {

// The policies and their one name table live in the job vocabulary (sched/common).
using sched::MisfirePolicy;
using sched::MisfirePolicyName;
using sched::ParseMisfirePolicy;

struct MisfireOptions {
    std::int64_t threshold_ms = 5000;  ///< >= 0; how late a time may be and still fire normally
    MisfirePolicy policy = MisfirePolicy::kSkip;
    std::size_t fire_all_cap = 100;  ///< fire-all: at most this many catch-up fires, 1-10000
};

struct PlannedFire {
    std::int64_t scheduled_ms;
    bool misfire;  ///< created by the policy (job_fire.kind = misfire) rather than on time (schedule)
};

/// A run of consecutive scheduled times up to now that a calendar excluded.
struct ExcludedTimes {
    std::int64_t first_ms = 0;
    std::int64_t last_ms = 0;
    std::int64_t count = 0;
};

/// At most this many ExcludedTimes per plan; the last one then also holds the excluded times after
/// it (its range spans the allowed times between them).
inline constexpr std::size_t kMaxExcludedRuns = 1000;

struct MisfirePlan {
    /// Fire rows to create, ascending by scheduled_ms. At most 10000 on-time fires are planned in
    /// one call; next_fire_time_ms then points at the first one left, so nothing is lost.
    std::vector<PlannedFire> fires;
    /// The job's new next_fire_time: the first scheduled time not covered by `fires` (after now,
    /// or an on-time one left over), or nullopt when the schedule has no more (once, manual,
    /// exhausted cron) or waits for the run to finish (fixed-delay with a fire planned).
    std::optional<std::int64_t> next_fire_time_ms;
    /// Scheduled times up to now that get no fire row of their own (for logs and metrics).
    /// Counting stops at 100000, and then skipped_is_lower_bound is set.
    std::int64_t skipped = 0;
    bool skipped_is_lower_bound = false;
    /// The first and last of those times (both set when skipped > 0): with fire-once-now every
    /// time up to now, folded into the one fire; otherwise the late times that got no fire.
    std::optional<std::int64_t> skipped_first_ms;
    std::optional<std::int64_t> skipped_last_ms;
    /// Scheduled times up to now that `calendar` excluded, ascending, one entry per run of
    /// consecutive ones. They count towards the same 100000 limit as `skipped`: past it the
    /// remaining times are neither counted nor listed (skipped_is_lower_bound is set).
    std::vector<ExcludedTimes> excluded;
};

/// Plans the fires for a job whose stored next_fire_time is `due_ms`, at time `now_ms`.
/// `due_ms` counts as a scheduled time; later ones come from schedule.NextFireTime() (a
/// fixed-delay schedule has only `due_ms`). When due_ms > now_ms nothing is due: no fires and
/// next_fire_time_ms = due_ms. Throws std::invalid_argument when `options` are out of range
/// (they come from validated configuration, so that is a bug). `calendar` (nullptr: none) excludes
/// times as described above.
MisfirePlan PlanMisfire(const Schedule& schedule, std::int64_t due_ms, std::int64_t now_ms,
                        const MisfireOptions& options, const Calendar* calendar = nullptr);

}  // namespace sched::cron
