#include "sched/trigger/calendar_planner.hpp"

#include <algorithm>

#include "sched/cron/planned_time.hpp"

namespace sched::trigger {

namespace {

std::optional<std::int64_t> After(const cron::Schedule& schedule, std::int64_t t) {
    // A skipped fixed-delay time counts as a run that finished at once, as the preview assumes.
    return schedule.WaitsForFinish() ? schedule.NextFireTime(t, t) : schedule.NextFireTime(t);
}

}  // namespace

std::string_view JobEndName(JobEnd end) {
    return end == JobEnd::kEndAt ? "end_at" : "max_runs";
}

std::optional<std::int64_t> FirstBoundedFireTime(const cron::Schedule& schedule, const JobBounds& bounds,
                                                 std::int64_t after_ms) {
    std::int64_t from = after_ms;
    if (bounds.start_ms && *bounds.start_ms - 1 > from) from = *bounds.start_ms - 1;
    auto next = schedule.NextFireTime(from);
    if (next && bounds.end_ms && *next > *bounds.end_ms) return std::nullopt;
    return next;
}

BoundedPlan PlanBoundedJobFires(const cron::Schedule& schedule, const cron::Calendar* calendar, const JobBounds& bounds,
                                std::int64_t due_ms, std::int64_t now_ms, const PlanOptions& options) {
    BoundedPlan out;
    const auto past_end = [&](std::int64_t t) {
        return bounds.end_ms && t > *bounds.end_ms;
    };
    if (bounds.max_runs && bounds.planned_runs >= *bounds.max_runs) {
        out.end = JobEnd::kMaxRuns;
        return out;
    }
    std::int64_t due = due_ms;
    if (bounds.start_ms && due < *bounds.start_ms) {
        const auto first = schedule.NextFireTime(*bounds.start_ms - 1);
        if (!first) return out;  // the schedule has no time left: nothing to complete by a bound
        due = *first;
    }
    if (past_end(due)) {
        out.end = JobEnd::kEndAt;
        return out;
    }
    PlanOptions with_calendar = options;
    with_calendar.calendar = calendar;
    out.plan = PlanJobFires(schedule, due, now_ms, with_calendar);
    auto& plan = out.plan;
    // Excluded times up to now, each run dated at its own times (the misfire policy never saw them).
    out.excluded = std::move(plan.excluded);
    plan.excluded.clear();

    auto& fires = plan.fires;
    fires.erase(std::remove_if(fires.begin(), fires.end(), [&](const auto& f) { return past_end(f.nominal_ms); }),
                fires.end());
    std::erase_if(out.excluded, [&](const SkippedTimes& r) { return past_end(r.first_ms); });
    if (plan.next_fire_time && past_end(*plan.next_fire_time)) {
        plan.next_fire_time.reset();
        out.end = JobEnd::kEndAt;
    }

    if (calendar) {
        std::vector<PlannedFireRow> kept;
        std::optional<SkippedTimes> run;
        // A run of excluded times that reaches now goes on into the lookahead as one entry.
        if (!out.excluded.empty()) {
            const auto first_ahead = fires.empty() ? plan.next_fire_time : std::optional(fires.front().nominal_ms);
            if (first_ahead && first_ahead == After(schedule, out.excluded.back().last_ms)) {
                run = out.excluded.back();
                out.excluded.pop_back();
            }
        }
        for (const auto& f : fires) {
            // Only planned times are judged here: PlanJobFires judged the times up to now, and the
            // one fire of fire-once-now stands for times the calendar allowed. Nominal times, as
            // for next_fire_time below (cron::PlanTime): a job's jitter never moves a time into or
            // out of an excluded period or past end_at.
            if (f.kind == model::FireKind::kSchedule && cron::PlanTime(schedule, calendar, f.nominal_ms).excluded) {
                if (!run) run = SkippedTimes{.first_ms = f.nominal_ms};
                run->last_ms = f.nominal_ms;
                ++run->count;
                continue;
            }
            if (run) out.excluded.push_back(*run);
            run.reset();
            kept.push_back(f);
        }
        fires = std::move(kept);
        // The planned fire of a fixed-delay job was excluded: nothing will finish, so its next
        // time follows from the skipped one.
        if (run && !plan.next_fire_time && schedule.WaitsForFinish() && !out.end) {
            plan.next_fire_time = After(schedule, run->last_ms);
        }
        // An open run goes on through the excluded times after the lookahead (one entry per run).
        while (run && plan.next_fire_time && calendar->IsExcluded(*plan.next_fire_time) &&
               !past_end(*plan.next_fire_time) && run->count < kMaxExcludedPerRun) {
            run->last_ms = *plan.next_fire_time;
            ++run->count;
            plan.next_fire_time = After(schedule, *plan.next_fire_time);
        }
        if (run) out.excluded.push_back(*run);
        if (plan.next_fire_time && past_end(*plan.next_fire_time)) {
            plan.next_fire_time.reset();
            out.end = JobEnd::kEndAt;
        }
    }

    if (bounds.max_runs) {
        const auto left = static_cast<std::size_t>(*bounds.max_runs - bounds.planned_runs);
        if (fires.size() >= left) {
            fires.resize(left);
            plan.next_fire_time.reset();
            out.end = JobEnd::kMaxRuns;
            // Excluded times after the last run are not scheduled times any more.
            const std::int64_t last = fires.empty() ? due - 1 : fires.back().nominal_ms;
            std::erase_if(out.excluded, [&](const SkippedTimes& r) { return r.first_ms > last; });
        }
    }
    return out;
}

}  // namespace sched::trigger
