#pragma once

/// A calendar as the API answers it (schema Calendar; docs/schedules.md).

#include <cstdint>
#include <string>
#include <vector>

#include "sched/api/view.hpp"

namespace sched::api {

/// Schema Calendar: the rules in the server's canonical form (weekdays "mon".."sun" in week order).
struct CalendarView {
    std::int64_t id = 0;
    std::string name;
    std::string description;
    std::string time_zone;
    std::vector<std::string> excluded_dates;
    std::vector<std::string> excluded_weekdays;
    std::vector<std::string> excluded_times;
    std::int64_t version = 0;
    std::int64_t created_at = 0;
    std::int64_t updated_at = 0;

    SCHED_API_FIELDS(CalendarView, id, name, description, time_zone, excluded_dates, excluded_weekdays, excluded_times,
                     version, created_at, updated_at)
};

}  // namespace sched::api
