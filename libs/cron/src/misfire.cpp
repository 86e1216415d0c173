#include "sched/cron/misfire.hpp"

#include <deque>
#include <limits>
#include <stdexcept>
#include <string>

namespace sched::cron {

namespace {

constexpr std::size_t kMaxOnTimeFires = 10000;
constexpr std::int64_t kMaxCounted = 100000;
constexpr std::size_t kMaxCap = 10000;

/// The scheduled time after `t`. A fixed-delay schedule has none: its next time depends on when
/// the run finishes.
std::optional<std::int64_t> Successor(const Schedule& s, std::int64_t t) {
    if (s.type() == ScheduleType::kFixedDelay) return std::nullopt;
    return s.NextFireTime(t);
}

/// The first scheduled time >= x, for an x after the due time.
std::optional<std::int64_t> FirstAtOrAfter(const Schedule& s, std::int64_t due, std::int64_t x) {
    if (x <= due) return due;
    if (s.type() == ScheduleType::kFixedDelay) return std::nullopt;
    return s.NextFireTime(x - 1);
}

/// The last `keep` scheduled times in [due, before) that `calendar` (nullptr: none) allows, found by
/// widening a window backwards from `before`: there is no reverse search, and the forward scan from
/// `due` may be far too long.
std::deque<std::int64_t> LastTimesBefore(const Schedule& s, std::int64_t due, std::int64_t before, std::size_t keep,
                                         const Calendar* calendar) {
    for (std::int64_t window = 1000;; window = window > std::numeric_limits<std::int64_t>::max() / 2
                                                   ? std::numeric_limits<std::int64_t>::max()
                                                   : window * 2) {
        const std::int64_t start = before - due <= window ? due : before - window;
        std::deque<std::int64_t> found;
        std::size_t count = 0;
        for (auto t = FirstAtOrAfter(s, due, start); t && *t < before; t = Successor(s, *t)) {
            if (calendar && calendar->IsExcluded(*t)) continue;
            found.push_back(*t);
            if (found.size() > keep) found.pop_front();
            ++count;
        }
        if (count >= keep || start == due) return found;
    }
}

/// Gathers excluded times into runs of consecutive ones; an allowed time ends a run.
class ExcludedRuns {
  public:
    void Excluded(std::int64_t t) {
        // Past kMaxExcludedRuns the last run takes the rest, so the ledger stays bounded.
        if (open_ || runs_.size() == kMaxExcludedRuns) {
            runs_.back().last_ms = t;
            ++runs_.back().count;
        } else {
            runs_.push_back({.first_ms = t, .last_ms = t, .count = 1});
        }
        open_ = true;
    }
    void Allowed() { open_ = false; }
    std::vector<ExcludedTimes> Take() { return std::move(runs_); }

  private:
    std::vector<ExcludedTimes> runs_;
    bool open_ = false;
};

}  // namespace

MisfirePlan PlanMisfire(const Schedule& schedule, std::int64_t due_ms, std::int64_t now_ms,
                        const MisfireOptions& options, const Calendar* calendar) {
    if (options.threshold_ms < 0) {
        throw std::invalid_argument("misfire threshold must be >= 0, got " + std::to_string(options.threshold_ms));
    }
    if (options.policy == MisfirePolicy::kFireAll && (options.fire_all_cap < 1 || options.fire_all_cap > kMaxCap)) {
        throw std::invalid_argument("fire-all cap must be 1-10000, got " + std::to_string(options.fire_all_cap));
    }
    MisfirePlan plan;
    if (due_ms > now_ms) {
        plan.next_fire_time_ms = due_ms;
        return plan;
    }
    // Times before `late_before` are late (now - t > threshold).
    const std::int64_t late_before = now_ms < std::numeric_limits<std::int64_t>::min() + options.threshold_ms
                                         ? std::numeric_limits<std::int64_t>::min()
                                         : now_ms - options.threshold_ms;
    const std::size_t keep = options.policy == MisfirePolicy::kFireAll ? options.fire_all_cap : 0;

    const auto excluded = [&](std::int64_t t) {
        return calendar != nullptr && calendar->IsExcluded(t);
    };
    ExcludedRuns runs;
    std::int64_t late = 0;
    std::int64_t counted = 0;  // late and excluded times: the misfire count limit covers both
    bool counted_all = true;
    std::optional<std::int64_t> first_late;
    std::deque<std::int64_t> kept;
    for (std::optional<std::int64_t> t = due_ms; t && *t < late_before; t = Successor(schedule, *t)) {
        if (counted == kMaxCounted) {
            counted_all = false;
            break;
        }
        ++counted;
        if (excluded(*t)) {
            runs.Excluded(*t);
            continue;
        }
        runs.Allowed();
        if (!first_late) first_late = *t;
        ++late;
        if (keep > 0) {
            kept.push_back(*t);
            if (kept.size() > keep) kept.pop_front();
        }
    }
    if (!counted_all) {
        runs.Allowed();  // the times not counted lie between
        if (keep > 0) kept = LastTimesBefore(schedule, due_ms, late_before, keep, calendar);
    }

    std::vector<std::int64_t> on_time;
    std::optional<std::int64_t> next = FirstAtOrAfter(schedule, due_ms, late_before);
    for (std::size_t scanned = 0; next && *next <= now_ms && scanned < kMaxOnTimeFires; ++scanned) {
        if (excluded(*next)) {
            runs.Excluded(*next);
        } else {
            runs.Allowed();
            on_time.push_back(*next);
        }
        next = Successor(schedule, *next);
    }
    plan.excluded = runs.Take();

    switch (options.policy) {
        case MisfirePolicy::kSkip:
            for (std::int64_t t : on_time) plan.fires.push_back({t, false});
            plan.skipped = late;
            break;
        case MisfirePolicy::kFireOnceNow:
            if (late > 0) {
                plan.fires.push_back({now_ms, true});
                // The one fire stands for every time before now, including on-time ones not listed;
                // a scheduled time exactly at now is that fire's own, not skipped.
                plan.skipped = late + static_cast<std::int64_t>(on_time.size()) -
                               (!on_time.empty() && on_time.back() == now_ms ? 1 : 0);
                if (next && *next <= now_ms) counted_all = false;
                next = Successor(schedule, now_ms);
            } else {
                for (std::int64_t t : on_time) plan.fires.push_back({t, false});
            }
            break;
        case MisfirePolicy::kFireAll:
            for (std::int64_t t : kept) plan.fires.push_back({t, true});
            for (std::int64_t t : on_time) plan.fires.push_back({t, false});
            plan.skipped = late - static_cast<std::int64_t>(kept.size());
            break;
    }
    plan.skipped_is_lower_bound = !counted_all;
    if (plan.skipped > 0) {
        // Skipped times always start at the first late time the calendar allows (fire-all drops the
        // oldest late ones); the last is found backwards from where the skipped run ends.
        std::int64_t end = late_before;  // skip: every late time
        if (options.policy == MisfirePolicy::kFireOnceNow) end = now_ms;
        if (options.policy == MisfirePolicy::kFireAll && !kept.empty()) end = kept.front();
        const auto last = LastTimesBefore(schedule, due_ms, end, 1, calendar);
        plan.skipped_first_ms = first_late.value_or(due_ms);
        plan.skipped_last_ms = last.empty() ? due_ms : last.back();
    }
    if (schedule.type() == ScheduleType::kFixedDelay) {
        // With a run planned, the next time depends on when it finishes; without one, the delay
        // restarts from now.
        next = plan.fires.empty() ? schedule.NextFireTime(now_ms) : std::nullopt;
    }
    plan.next_fire_time_ms = next;
    return plan;
}

}  // namespace sched::cron
