#pragma once

/// The master's schedules, one per job, made from the job's definition (type, expression, zone,
/// jitter and DST choices, with the job's id as the seed of `H` and jitter) and made again only
/// when that definition changes. Shared by the steps that compute fire times (due jobs,
/// fixed-delay follow-ups). Not thread-safe (the master's scan).

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "sched/cron/schedule.hpp"
#include "sched/store/job.hpp"

namespace sched::trigger::impl {

class ScheduleCache {
  public:
    struct Entry {
        std::string key;  // type, expr, zone and schedule options the schedule was made from
        std::optional<cron::Schedule> schedule;
        std::string error;  // why there is no schedule (a definition that no longer parses)
    };
    /// The job's schedule (or why it has none).
    const Entry& For(const model::Job& job);

  private:
    std::map<std::int64_t, Entry> entries_;
};

}  // namespace sched::trigger::impl
