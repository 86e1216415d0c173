#include "sched/cron/calendar.hpp"

#include <date/tz.h>

#include <algorithm>
#include <cstdio>

#include "impl/civil.hpp"
#include "sched/cron/time_zone.hpp"

namespace sched::cron {

namespace {

using impl::kSecondsPerDay;

constexpr std::array<std::string_view, 7> kWeekdays = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};
constexpr std::array<std::string_view, 7> kWeekdaysLong = {"monday", "tuesday",  "wednesday", "thursday",
                                                           "friday", "saturday", "sunday"};
constexpr std::int64_t kMaxRangeDays = 3660;
// Ten years of day-sized steps; each step leaves an excluded day or window, so the search ends.
constexpr int kMaxSteps = 8000;

std::string Trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return std::string(s);
}

std::string Lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    return s;
}

// "YYYY-MM-DD" -> local day number; exactly ten characters.
std::optional<std::int64_t> ParseDay(std::string_view s) {
    if (s.size() != 10 || s[4] != '-' || s[7] != '-') return std::nullopt;
    for (std::size_t i : {0, 1, 2, 3, 5, 6, 8, 9}) {
        if (s[i] < '0' || s[i] > '9') return std::nullopt;
    }
    const int y = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0');
    const int m = (s[5] - '0') * 10 + (s[6] - '0');
    const int d = (s[8] - '0') * 10 + (s[9] - '0');
    if (y < 1970 || y > 2199 || m < 1 || m > 12 || d < 1 || d > impl::DaysInMonth(y, m)) return std::nullopt;
    return impl::DaysFromCivil(y, m, d);
}

// "HH:MM" -> seconds of day; 24:00 only when `allow_end`.
std::optional<std::int64_t> ParseClock(std::string_view s, bool allow_end) {
    if (s.size() != 5 || s[2] != ':') return std::nullopt;
    for (std::size_t i : {0, 1, 3, 4}) {
        if (s[i] < '0' || s[i] > '9') return std::nullopt;
    }
    const int h = (s[0] - '0') * 10 + (s[1] - '0');
    const int m = (s[3] - '0') * 10 + (s[4] - '0');
    if (m > 59 || h > 24 || (h == 24 && (m != 0 || !allow_end))) return std::nullopt;
    return (h * 60 + m) * 60;
}

Status Fail(std::string* error_field, std::string_view field, std::string message) {
    if (error_field) *error_field = std::string(field);
    return InvalidArgument(std::move(message));
}

}  // namespace

Result<Calendar> Calendar::Make(const CalendarRules& rules, std::string* error_field) {
    Calendar c;
    c.rules_.time_zone = Trim(rules.time_zone).empty() ? "UTC" : Trim(rules.time_zone);
    auto zone = LookupZone(c.rules_.time_zone);
    if (!zone.ok()) return Fail(error_field, "time_zone", "time_zone: " + zone.status().message());
    c.zone_ = *zone;

    if (rules.excluded_dates.size() > kMaxDates) {
        return Fail(error_field, "excluded_dates", "excluded_dates: at most " + std::to_string(kMaxDates) + " entries");
    }
    for (std::size_t i = 0; i < rules.excluded_dates.size(); ++i) {
        const std::string entry = Trim(rules.excluded_dates[i]);
        const std::string at = "excluded_dates[" + std::to_string(i) + "]: ";
        const auto dots = entry.find("..");
        const auto first = ParseDay(std::string_view(entry).substr(0, dots));
        const auto last = dots == std::string::npos ? first : ParseDay(std::string_view(entry).substr(dots + 2));
        if (!first || !last) {
            return Fail(error_field, "excluded_dates",
                        at + "expected YYYY-MM-DD or YYYY-MM-DD..YYYY-MM-DD (years 1970-2199), got \"" +
                            entry.substr(0, 64) + "\"");
        }
        if (*last < *first) return Fail(error_field, "excluded_dates", at + "the range ends before it starts");
        if (*last - *first >= kMaxRangeDays) {
            return Fail(error_field, "excluded_dates",
                        at + "a range spans at most " + std::to_string(kMaxRangeDays) + " days");
        }
        c.day_ranges_.emplace_back(*first, *last);
        c.rules_.excluded_dates.push_back(entry);
    }

    if (rules.excluded_weekdays.size() > 7) {
        return Fail(error_field, "excluded_weekdays", "excluded_weekdays: at most 7 entries");
    }
    for (std::size_t i = 0; i < rules.excluded_weekdays.size(); ++i) {
        const std::string name = Lower(Trim(rules.excluded_weekdays[i]));
        std::size_t day = 0;
        while (day < 7 && kWeekdays[day] != name && kWeekdaysLong[day] != name) ++day;
        if (day == 7) {
            return Fail(error_field, "excluded_weekdays",
                        "excluded_weekdays[" + std::to_string(i) +
                            "]: expected mon, tue, wed, thu, fri, sat or sun, got \"" + name.substr(0, 32) + "\"");
        }
        c.weekdays_[day] = true;
    }
    if (std::all_of(c.weekdays_.begin(), c.weekdays_.end(), [](bool b) { return b; })) {
        return Fail(error_field, "excluded_weekdays",
                    "excluded_weekdays: excluding every weekday leaves no time to fire");
    }
    for (std::size_t day = 0; day < 7; ++day) {
        if (c.weekdays_[day]) c.rules_.excluded_weekdays.emplace_back(kWeekdays[day]);
    }

    if (rules.excluded_times.size() > kMaxWindows) {
        return Fail(error_field, "excluded_times",
                    "excluded_times: at most " + std::to_string(kMaxWindows) + " windows");
    }
    for (std::size_t i = 0; i < rules.excluded_times.size(); ++i) {
        const std::string entry = Trim(rules.excluded_times[i]);
        const std::string at = "excluded_times[" + std::to_string(i) + "]: ";
        const auto dash = entry.find('-');
        const auto start = dash == std::string::npos ? std::nullopt : ParseClock(entry.substr(0, dash), false);
        const auto end = dash == std::string::npos ? std::nullopt : ParseClock(entry.substr(dash + 1), true);
        if (!start || !end) {
            return Fail(error_field, "excluded_times",
                        at + "expected HH:MM-HH:MM (00:00-24:00), got \"" + entry.substr(0, 64) + "\"");
        }
        if (*start == *end % kSecondsPerDay) {
            return Fail(error_field, "excluded_times", at + "start and end are the same time");
        }
        if (*end > *start) {
            c.windows_.emplace_back(*start, *end);
        } else {  // across midnight
            c.windows_.emplace_back(*start, kSecondsPerDay);
            if (*end > 0) c.windows_.emplace_back(0, *end);
        }
        c.rules_.excluded_times.push_back(entry);
    }
    return c;
}

std::int64_t Calendar::LocalSeconds(std::int64_t epoch_s) const {
    return epoch_s + ZoneInfoAt(*zone_, epoch_s).offset.count();
}

bool Calendar::DayExcluded(std::int64_t local_day) const {
    // 1970-01-01 was a Thursday (index 3 with Monday = 0).
    if (weekdays_[static_cast<std::size_t>(((local_day + 3) % 7 + 7) % 7)]) return true;
    return std::any_of(day_ranges_.begin(), day_ranges_.end(),
                       [&](const auto& r) { return local_day >= r.first && local_day <= r.second; });
}

std::optional<std::int64_t> Calendar::WindowEnd(std::int64_t second_of_day) const {
    std::optional<std::int64_t> end;
    for (const auto& [from, to] : windows_) {
        if (second_of_day >= from && second_of_day < to) end = std::max(end.value_or(0), to);
    }
    return end;
}

bool Calendar::IsExcluded(std::int64_t epoch_ms) const {
    const std::int64_t local_s = LocalSeconds(impl::FloorDiv(epoch_ms, 1000));
    const std::int64_t day = impl::FloorDiv(local_s, kSecondsPerDay);
    if (DayExcluded(day)) return true;
    return WindowEnd(local_s - day * kSecondsPerDay).has_value();
}

std::int64_t Calendar::InstantOf(std::int64_t local_s, std::int64_t not_before_s) const {
    const date::local_info li = LocalZoneInfoAt(*zone_, local_s);
    if (li.result == date::local_info::nonexistent) return li.second.begin.time_since_epoch().count();
    const std::int64_t earlier = local_s - li.first.offset.count();
    if (li.result == date::local_info::ambiguous && earlier <= not_before_s) {
        return local_s - li.second.offset.count();
    }
    return earlier;
}

std::optional<std::int64_t> Calendar::NextIncluded(std::int64_t from_ms) const {
    std::int64_t t_ms = from_ms;
    for (int step = 0; step < kMaxSteps; ++step) {
        if (!IsExcluded(t_ms)) return t_ms;
        const std::int64_t epoch_s = impl::FloorDiv(t_ms, 1000);
        const std::int64_t local_s = LocalSeconds(epoch_s);
        const std::int64_t day = impl::FloorDiv(local_s, kSecondsPerDay);
        // Leave the excluded day, or the window, at its local end; both are whole seconds.
        std::int64_t end_local = (day + 1) * kSecondsPerDay;
        if (!DayExcluded(day)) {
            if (auto end = WindowEnd(local_s - day * kSecondsPerDay)) end_local = day * kSecondsPerDay + *end;
        }
        const std::int64_t next_s = InstantOf(end_local, epoch_s);
        // A local end that maps to this instant or before (a fall-back hour) moves on by one second.
        t_ms = std::max(next_s, epoch_s + 1) * 1000;
    }
    return std::nullopt;
}

std::int64_t Calendar::LocalDay(std::int64_t epoch_ms) const {
    return impl::FloorDiv(LocalSeconds(impl::FloorDiv(epoch_ms, 1000)), kSecondsPerDay);
}

std::int64_t Calendar::LocalDayStartMs(std::int64_t local_day) const {
    return InstantOf(local_day * kSecondsPerDay, INT64_MIN) * 1000;
}

std::optional<std::int64_t> Calendar::NextExcluded(std::int64_t from_ms, std::int64_t until_ms) const {
    std::int64_t t_ms = from_ms;
    for (int step = 0; step < kMaxSteps && t_ms < until_ms; ++step) {
        if (IsExcluded(t_ms)) return t_ms;
        const std::int64_t epoch_s = impl::FloorDiv(t_ms, 1000);
        const std::int64_t local_s = LocalSeconds(epoch_s);
        const std::int64_t day = impl::FloorDiv(local_s, kSecondsPerDay);
        const std::int64_t second_of_day = local_s - day * kSecondsPerDay;
        // The next local moment something could start: a window's start today, else tomorrow.
        std::int64_t next_local = (day + 1) * kSecondsPerDay;
        for (const auto& [from, to] : windows_) {
            if (from > second_of_day) next_local = std::min(next_local, day * kSecondsPerDay + from);
        }
        t_ms = std::max(InstantOf(next_local, epoch_s), epoch_s + 1) * 1000;
    }
    return std::nullopt;
}

}  // namespace sched::cron
