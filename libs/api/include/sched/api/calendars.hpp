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

    static constexpr auto Fields() {
        return std::tuple{Field("id", &CalendarView::id),
                          Field("name", &CalendarView::name),
                          Field("description", &CalendarView::description),
                          Field("time_zone", &CalendarView::time_zone),
                          Field("excluded_dates", &CalendarView::excluded_dates),
                          Field("excluded_weekdays", &CalendarView::excluded_weekdays),
                          Field("excluded_times", &CalendarView::excluded_times),
                          Field("version", &CalendarView::version),
                          Field("created_at", &CalendarView::created_at),
                          Field("updated_at", &CalendarView::updated_at)};
    }
};

}  // namespace sched::api
