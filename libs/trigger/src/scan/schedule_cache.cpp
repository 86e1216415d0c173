#include "scan/schedule_cache.hpp"

namespace sched::trigger::impl {

const ScheduleCache::Entry& ScheduleCache::For(const model::Job& job) {
    const std::string key = std::string(ScheduleTypeName(job.schedule_type)) + '\n' + job.schedule_expr + '\n' +
                            job.time_zone + '\n' + std::to_string(job.jitter_ms) + '\n' + job.dst_gap + '\n' +
                            job.dst_overlap;
    auto& entry = entries_[job.id];
    if (entry.key != key || (!entry.schedule && entry.error.empty())) {
        entry.key = key;
        entry.schedule.reset();
        entry.error.clear();
        const auto options = cron::ParseScheduleOptions(job.id, job.jitter_ms, job.dst_gap, job.dst_overlap);
        auto made = options.ok()
                        ? cron::Schedule::Make(job.schedule_type, job.schedule_expr, job.time_zone, nullptr, *options)
                        : Result<cron::Schedule>(options.status());
        if (made.ok()) {
            entry.schedule = *made;
        } else {
            entry.error = made.status().message();
        }
    }
    return entry;
}

}  // namespace sched::trigger::impl
