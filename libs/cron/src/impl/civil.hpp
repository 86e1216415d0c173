#pragma once

// Proleptic Gregorian calendar arithmetic on plain integers (Howard Hinnant's algorithms): the
// cron search converts between epoch seconds and civil fields millions of times a second, so it
// avoids the chrono type machinery and its range checks.

#include <cstdint>

namespace sched::cron::impl {

inline constexpr std::int64_t kSecondsPerDay = 86400;

struct CivilDate {
    int year;
    int month;  // 1-12
    int day;    // 1-31
};

struct CivilTime {
    int year;
    int month;
    int day;
    int hour;
    int minute;
    int second;
};

constexpr std::int64_t FloorDiv(std::int64_t a, std::int64_t b) {
    std::int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

constexpr bool IsLeapYear(int y) {
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

constexpr int DaysInMonth(int y, int m) {
    constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && IsLeapYear(y) ? 29 : kDays[m - 1];
}

constexpr std::int64_t DaysFromCivil(int y, int m, int d) {
    const std::int64_t yy = static_cast<std::int64_t>(y) - (m <= 2 ? 1 : 0);
    const std::int64_t era = FloorDiv(yy, 400);
    const std::int64_t yoe = yy - era * 400;
    const std::int64_t mp = m > 2 ? m - 3 : m + 9;
    const std::int64_t doy = (153 * mp + 2) / 5 + d - 1;
    const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

constexpr CivilDate CivilFromDays(std::int64_t z) {
    z += 719468;
    const std::int64_t era = FloorDiv(z, 146097);
    const std::int64_t doe = z - era * 146097;
    const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const std::int64_t mp = (5 * doy + 2) / 153;
    const int d = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
    const int m = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
    return {static_cast<int>(yoe + era * 400 + (m <= 2 ? 1 : 0)), m, d};
}

/// 0 = Sunday ... 6 = Saturday (1970-01-01 was a Thursday).
constexpr int WeekdayFromDays(std::int64_t days) {
    return static_cast<int>(((days + 4) % 7 + 7) % 7);
}

constexpr CivilTime CivilFromSeconds(std::int64_t s) {
    const std::int64_t days = FloorDiv(s, kSecondsPerDay);
    const std::int64_t rem = s - days * kSecondsPerDay;
    const CivilDate date = CivilFromDays(days);
    return {date.year,
            date.month,
            date.day,
            static_cast<int>(rem / 3600),
            static_cast<int>(rem / 60 % 60),
            static_cast<int>(rem % 60)};
}

constexpr std::int64_t SecondsFromCivil(const CivilTime& t) {
    return DaysFromCivil(t.year, t.month, t.day) * kSecondsPerDay + t.hour * 3600 + t.minute * 60 + t.second;
}

}  // namespace sched::cron::impl
