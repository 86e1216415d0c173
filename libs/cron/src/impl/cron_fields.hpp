#pragma once

// The compiled form of a cron expression: one bitset per field, and the day-of-month /
// day-of-week rules folded into a table of day masks, so that finding the next match is a
// handful of bit scans.

#include <array>
#include <bit>
#include <cstdint>
#include <optional>

#include "impl/civil.hpp"

namespace sched::cron::impl {

inline constexpr int kMinYear = 1970;
inline constexpr int kMaxYear = 2199;
inline constexpr int kYearCount = kMaxYear - kMinYear + 1;

/// Lowest set bit of `bits` at or above `from`, or -1.
inline int NextBit(std::uint64_t bits, int from) {
    if (from >= 64) return -1;
    const std::uint64_t masked = bits & (~std::uint64_t{0} << from);
    return masked == 0 ? -1 : std::countr_zero(masked);
}

struct YearSet {
    std::array<std::uint64_t, (kYearCount + 63) / 64> words{};

    void Set(int year) {
        const int i = year - kMinYear;
        words[static_cast<std::size_t>(i / 64)] |= std::uint64_t{1} << (i % 64);
    }
    bool Test(int year) const {
        if (year < kMinYear || year > kMaxYear) return false;
        const int i = year - kMinYear;
        return (words[static_cast<std::size_t>(i / 64)] >> (i % 64)) & 1U;
    }
    /// The first year >= `year` in the set, or nullopt.
    std::optional<int> NextFrom(int year) const {
        if (year < kMinYear) year = kMinYear;
        for (int i = year - kMinYear; i < kYearCount;) {
            const int bit = NextBit(words[static_cast<std::size_t>(i / 64)], i % 64);
            if (bit >= 0) {
                const int found = (i / 64) * 64 + bit;
                return found < kYearCount ? std::optional<int>(kMinYear + found) : std::nullopt;
            }
            i = (i / 64 + 1) * 64;
        }
        return std::nullopt;
    }
};

struct CronFields {
    std::uint64_t seconds = 0;  // bit s, 0-59
    std::uint64_t minutes = 0;  // bit m, 0-59
    std::uint64_t hours = 0;    // bit h, 0-23
    std::uint64_t months = 0;   // bit m, 1-12
    YearSet years;
    // day_masks[days_in_month - 28][weekday of the 1st, 0 = Sunday]: bit d set when day d matches
    // both day fields. Every month is one of these 28 shapes, so the L/W/# rules cost nothing at
    // search time.
    std::array<std::array<std::uint64_t, 7>, 4> day_masks{};
    bool fires_in_both_passes = false;
    bool uses_hash = false;  // some field was written with `H`

    std::uint64_t DayMask(int year, int month) const {
        const int first_weekday = WeekdayFromDays(DaysFromCivil(year, month, 1));
        return day_masks[static_cast<std::size_t>(DaysInMonth(year, month) - 28)]
                        [static_cast<std::size_t>(first_weekday)];
    }
};

/// The smallest local wall-clock second (seconds since 1970-01-01T00:00:00 local) at or after
/// `from` that matches `f`, or nullopt when none exists up to the end of kMaxYear.
std::optional<std::int64_t> NextLocalMatch(const CronFields& f, std::int64_t from);

}  // namespace sched::cron::impl
