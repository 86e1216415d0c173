#include "sched/cron/times_in_range.hpp"

namespace sched::cron {

TimesInRange FireTimesInRange(const Schedule& schedule, std::int64_t from, std::int64_t to, std::size_t limit) {
    TimesInRange out;
    if (schedule.WaitsForFinish() || from >= to) return out;
    std::optional<std::int64_t> next = schedule.NextFireTime(from - 1);
    while (next && *next < to) {
        if (out.times.size() == limit) {
            out.more = true;
            break;
        }
        out.times.push_back(*next);
        next = schedule.NextFireTime(*next);
    }
    return out;
}

}  // namespace sched::cron
