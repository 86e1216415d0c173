#pragma once

/// A calendar: a named, shared set of excluded periods (holidays, blackout windows, "business days
/// only") that jobs refer to. A job's scheduled time that falls in an excluded period gets no fire;
/// the master records it in the fire ledger (reason `calendar`). docs/schedules.md has examples.
///
/// Rules, all evaluated on the wall clock of the calendar's own IANA zone:
///   excluded_dates     "2026-12-25" (one local day) or "2026-12-24..2026-12-26" (inclusive range);
///                      at most kMaxDates entries, years 1970-2199, a range at most 3660 days.
///   excluded_weekdays  "mon" ... "sun" (also "monday" ...); not all seven.
///   excluded_times     daily local windows "HH:MM-HH:MM", start inclusive, end exclusive; a window
///                      whose end is not after its start runs across midnight ("22:00-06:00" is
///                      22:00-24:00 plus 00:00-06:00 of every day); "24:00" may end a window;
///                      at most kMaxWindows; start and end must differ.
/// An instant is excluded when its local date is an excluded date, its local weekday an excluded
/// weekday, or its local time of day is inside a window. Around a DST change the wall clock decides:
/// in a repeated hour both passes of an excluded local time are excluded; a window ending in a gap
/// ends at the first instant after the gap.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sched/common/status.hpp"

namespace date {
class time_zone;
}  // namespace date

namespace sched::cron {

struct CalendarRules {
    std::string time_zone = "UTC";
    std::vector<std::string> excluded_dates;
    std::vector<std::string> excluded_weekdays;
    std::vector<std::string> excluded_times;
};

/// Immutable and cheap to copy; const members are thread-safe.
class Calendar {
  public:
    static constexpr std::size_t kMaxDates = 1000;
    static constexpr std::size_t kMaxWindows = 24;

    /// Validates the rules. On failure kInvalidArgument whose message starts with the offending
    /// field ("excluded_dates[2]: expected YYYY-MM-DD or YYYY-MM-DD..YYYY-MM-DD, got ..."), and
    /// that field's name ("time_zone", "excluded_dates", "excluded_weekdays", "excluded_times") in
    /// `*error_field` when given.
    static Result<Calendar> Make(const CalendarRules& rules, std::string* error_field = nullptr);

    /// True when the instant (epoch ms) falls in an excluded period.
    bool IsExcluded(std::int64_t epoch_ms) const;

    /// The first instant >= `from_ms` that is not excluded, or nullopt when none is found within
    /// about ten years (the windows cover the whole day, say). Bounded work.
    std::optional<std::int64_t> NextIncluded(std::int64_t from_ms) const;

    /// The first excluded instant in [from_ms, until_ms), if any (the preview's periods). Bounded work.
    std::optional<std::int64_t> NextExcluded(std::int64_t from_ms, std::int64_t until_ms) const;

    /// The calendar's local day (days since 1970-01-01) at the instant `epoch_ms`.
    std::int64_t LocalDay(std::int64_t epoch_ms) const;
    /// The first instant (epoch ms) of local day `local_day` (after a gap at midnight: its end).
    std::int64_t LocalDayStartMs(std::int64_t local_day) const;

    /// The rules in canonical form (trimmed, weekdays as "mon".."sun", zone "UTC" when empty).
    const CalendarRules& rules() const { return rules_; }
    const date::time_zone* zone() const { return zone_; }

  private:
    Calendar() = default;
    /// Local seconds since 1970-01-01T00:00 on the calendar's wall clock.
    std::int64_t LocalSeconds(std::int64_t epoch_s) const;
    bool DayExcluded(std::int64_t local_day) const;
    /// The end (local seconds of day, up to 86400) of the window containing `second_of_day`, if any.
    std::optional<std::int64_t> WindowEnd(std::int64_t second_of_day) const;
    /// The first instant whose local time is >= `local_s` (gap: first instant after it; repeated
    /// time: the earliest occurrence that is after `not_before_s`).
    std::int64_t InstantOf(std::int64_t local_s, std::int64_t not_before_s) const;

    CalendarRules rules_;
    const date::time_zone* zone_ = nullptr;
    std::vector<std::pair<std::int64_t, std::int64_t>> day_ranges_;  ///< inclusive local day numbers
    std::array<bool, 7> weekdays_{};                                 ///< index 0 = Monday
    std::vector<std::pair<std::int64_t, std::int64_t>> windows_;     ///< [start, end) seconds of day, split at midnight
};

}  // namespace sched::cron
