#pragma once

// The POSIX TZ rule string that ends a TZif v2+ file (RFC 8536 section 3.3), e.g.
// `AEST-10AEDT,M10.1.0,M4.1.0/3`: the zone's rule for every instant after its last listed
// transition. The string comes from a file on disk and is treated as untrusted: its length and
// every number are bounded, and a malformed one is an error value, never an exception.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sched/common/status.hpp"

namespace sched::cron::impl {

/// Longest rule string accepted; real ones are under 50 characters.
inline constexpr std::size_t kMaxPosixTzLength = 128;

/// One end of the DST period: a day of the year and a local time of day.
struct PosixTzDate {
    enum class Kind { kJulian1, kJulian0, kMonthWeekDay };  // `Jn` (1-365, no Feb 29), `n` (0-365), `Mm.w.d`
    Kind kind = Kind::kMonthWeekDay;
    int day = 0;                 // n for kJulian1/kJulian0
    int month = 0;               // 1-12
    int week = 0;                // 1-5 (5 = last)
    int weekday = 0;             // 0 = Sunday
    std::int64_t time_s = 7200;  // local time of day, -167h..167h (RFC 8536 extension), default 02:00
};

/// A parsed rule. Offsets are seconds east of UTC (the opposite sign of the string's).
struct PosixTz {
    std::string std_abbrev;
    std::int64_t std_offset_s = 0;
    bool has_dst = false;
    std::string dst_abbrev;
    std::int64_t dst_offset_s = 0;
    PosixTzDate start;  // DST starts (in local standard time)
    PosixTzDate end;    // DST ends (in local daylight time)
};

/// One change of offset: from `at` (epoch seconds) on, `dst` says whether daylight time applies.
struct PosixTzTransition {
    std::int64_t at;
    bool dst;
};

/// Parses a rule string. kInvalidArgument with the reason and position when malformed, too long,
/// or when it names DST without the rule saying when (the default rule is implementation-defined).
Result<PosixTz> ParsePosixTz(std::string_view text);

/// The transitions of `rule` that take effect in the calendar years first..last (clamped to
/// 1..9999), in order; two at one instant cancel out, so DST all year (`0/0,J365/25`) keeps only
/// the window's first start and last end. Empty when the rule has no DST.
std::vector<PosixTzTransition> PosixTzTransitions(const PosixTz& rule, int first_year, int last_year);

}  // namespace sched::cron::impl
