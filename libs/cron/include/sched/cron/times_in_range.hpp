#pragma once

/// The fire times of a schedule in a past range (backfills: the API's dry run and bounds, the
/// master's planning in trigger/backfill_planner.hpp).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sched/cron/schedule.hpp"

namespace sched::cron {

struct TimesInRange {
    std::vector<std::int64_t> times;  ///< ascending, in [from, to)
    bool more = false;                ///< the range holds more than `limit` times
};

/// The schedule's fire times in [from, to), at most `limit` (each NextFireTime of the previous).
/// A fixed-delay schedule has no times of its own (they follow each run's finish) and a manual
/// one none at all: empty.
TimesInRange FireTimesInRange(const Schedule& schedule, std::int64_t from, std::int64_t to, std::size_t limit);

}  // namespace sched::cron
