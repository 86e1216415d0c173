#include "sched/trigger/fire_planner.hpp"

#include "sched/cron/planned_time.hpp"

namespace sched::trigger {

JobPlan PlanJobFires(const cron::Schedule& schedule, std::int64_t due_ms, std::int64_t now_ms,
                     const PlanOptions& options) {
    JobPlan plan;
    const auto misfire = cron::PlanMisfire(schedule, due_ms, now_ms, options.misfire, options.calendar);
    for (const auto& f : misfire.fires) {
        plan.fires.push_back({cron::PlanTime(schedule, nullptr, f.scheduled_ms).fire_ms, f.scheduled_ms,
                              f.misfire ? model::FireKind::kMisfire : model::FireKind::kSchedule});
    }
    if (misfire.skipped > 0 && misfire.skipped_first_ms && misfire.skipped_last_ms) {
        plan.skipped = SkippedTimes{.first_ms = *misfire.skipped_first_ms,
                                    .last_ms = *misfire.skipped_last_ms,
                                    .count = misfire.skipped,
                                    .count_is_lower_bound = misfire.skipped_is_lower_bound};
    }
    for (const auto& run : misfire.excluded) {
        plan.excluded.push_back({.first_ms = run.first_ms, .last_ms = run.last_ms, .count = run.count});
    }
    std::optional<std::int64_t> next = misfire.next_fire_time_ms;
    // Create the fires of the lookahead window now; a fixed-delay job has at most one fire in
    // flight (its next time depends on when that one finishes), so it never runs ahead.
    while (next && *next <= now_ms + options.lookahead_ms && plan.fires.size() < options.max_fires_per_job) {
        if (schedule.WaitsForFinish() && !plan.fires.empty()) break;
        plan.fires.push_back({cron::PlanTime(schedule, nullptr, *next).fire_ms, *next, model::FireKind::kSchedule});
        next = schedule.WaitsForFinish() ? std::nullopt : schedule.NextFireTime(*next);
    }
    plan.next_fire_time = next;
    return plan;
}

}  // namespace sched::trigger
