#pragma once

/// Quartz-compatible cron expressions with seconds, also accepting Unix 5-field cron and macros.
///
/// Form (never ambiguous, decided only by the shape of the text):
///   - starts with '@'  -> a macro: @yearly (@annually), @monthly, @weekly, @daily (@midnight), @hourly;
///   - 5 fields         -> Unix cron: minute hour day-of-month month day-of-week, seconds = 0,
///                         day-of-week 0-7 with 0 and 7 = Sunday;
///   - 6 or 7 fields    -> Quartz: second minute hour day-of-month month day-of-week [year],
///                         day-of-week 1-7 with 1 = Sunday.
///   Anything else is rejected. Fields are separated by runs of spaces or tabs.
///
/// Fire times (see docs/cron.md for the full rules and examples) are whole seconds of the local
/// wall clock of a time zone, mapped to instants as follows:
///   - a matching local time inside a DST gap fires at the first instant after the gap;
///   - a matching local time that occurs twice (DST fall back) fires once, at its first occurrence,
///     unless the hour field is `*`, a step (`*/2`, `0/3`, `1-23/2`) or covers all 24 hours: then it
///     fires at every instant whose local time matches, so frequent jobs keep running through both
///     passes of the repeated hour.
/// A job may choose another DST rule (CronOptions::dst_gap / dst_overlap; `auto` is the rule above).
///
/// `H` (Jenkins' hash, docs/cron.md "Spread with H") stands for a value chosen stably from a seed
/// (the job id): `H` one value of the field, `H(a-b)` one value in a-b, `H/n` every n starting at a
/// hashed offset below n, `H(a-b)/n` the same within a-b. Allowed in second, minute, hour,
/// day-of-month (plain `H` picks from 1-28), month and day-of-week (plain `H` picks one of the 7
/// days), not in year. The value is FNV-1a 64 (StableHash) of "<seed>:<field name>" modulo the
/// number of choices, so it is the same on every node, platform and version.
/// Years are limited to 1970-2199: Next() returns nullopt past 2199, which bounds every search.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sched/common/status.hpp"

namespace date {
class time_zone;
}  // namespace date

namespace sched::cron {

namespace impl {
struct CronFields;
}  // namespace impl

/// Why an expression was rejected: which field, which token, where, and why.
struct CronError {
    std::string field;     ///< "second", "minute", "hour", "day-of-month", "month", "day-of-week",
                           ///< "year" or "expression" (the whole text: field count, macros, length)
    std::string token;     ///< the offending text (a value, a list item or a whole field)
    std::size_t position;  ///< 0-based character offset of `token` in the input
    std::string reason;    ///< "32 is out of range 1-31"

    /// "day-of-month: 32 is out of range 1-31 (at position 9)"; this is also the Status message.
    std::string Message() const;
};

/// What a matching local time that falls in a DST gap does (spring forward).
enum class DstGap {
    kAuto,          ///< the default rule: fires at the first instant after the gap
    kSkip,          ///< does not fire that day
    kShiftForward,  ///< fires as late after the gap's start as it was meant to be (02:30 -> 03:30)
};
/// What a matching local time that occurs twice (fall back) does.
enum class DstOverlap {
    kAuto,   ///< the default rule: first occurrence, both for a frequent hour field (FiresInBothPasses)
    kFirst,  ///< first occurrence only, whatever the hour field
    kLast,   ///< second occurrence only
    kBoth,   ///< both occurrences, whatever the hour field
};
/// "auto", "skip", "shift-forward" / "auto", "first", "last", "both" (the stored spelling).
std::string_view DstGapName(DstGap gap);
std::string_view DstOverlapName(DstOverlap overlap);
/// Inverses of the above (exact, lower-case); kInvalidArgument listing the valid names.
Result<DstGap> ParseDstGap(std::string_view name);
Result<DstOverlap> ParseDstOverlap(std::string_view name);

/// FNV-1a 64 (offset basis 0xcbf29ce484222325, prime 0x100000001b3) over the bytes of `text`: the
/// hash behind `H` and jitter. Fixed forever: changing it would move every job's fire times.
std::uint64_t StableHash(std::string_view text);

struct CronOptions {
    /// The seed of `H`: the job id as decimal text. nullopt (a job that has no id yet, being
    /// validated) accepts `H` and resolves it with the seed "".
    std::optional<std::string> hash_seed;
    DstGap dst_gap = DstGap::kAuto;
    DstOverlap dst_overlap = DstOverlap::kAuto;
};

enum class CronForm {
    kQuartz,  ///< 6 or 7 fields, seconds first, day-of-week 1-7 (1 = SUN)
    kUnix,    ///< 5 fields, day-of-week 0-7 (0 and 7 = SUN)
    kMacro,   ///< @yearly, @monthly, @weekly, @daily, @hourly
};

/// An immutable, validated cron expression. Cheap to copy (shares its precomputed tables);
/// all const members are thread-safe.
class CronExpression {
  public:
    /// Parses and validates `text`. On failure returns kInvalidArgument whose message is
    /// CronError::Message(), and fills `*error` when given. Expressions that can never fire
    /// (`0 0 0 30 2 ?`, `0 0 0 29 2 ? 2023`) are rejected here. Inputs longer than 1024 characters
    /// are rejected. Never throws on any input.
    /// `options` gives the seed of `H` and the DST choice.
    static Result<CronExpression> Parse(std::string_view text, CronError* error = nullptr,
                                        const CronOptions& options = {});

    /// The first fire instant strictly after `after_ms` (epoch milliseconds, UTC) in `zone`
    /// (nullptr means UTC). nullopt when there is none up to the end of 2199 (year field exhausted).
    /// Bounded: no input makes it loop for long. Throws std::logic_error only if an internal
    /// invariant of the DST resolution breaks (a bug), never because of the expression or instant.
    std::optional<std::int64_t> Next(std::int64_t after_ms, const date::time_zone* zone) const;

    /// Up to `n` consecutive fire instants after `after_ms` (fewer when the schedule ends).
    std::vector<std::int64_t> NextN(std::int64_t after_ms, const date::time_zone* zone, std::size_t n) const;

    /// True when a repeated local hour (DST fall back) fires in both passes; false when it fires only
    /// in the first pass. Decided from the parsed hour field: true when it is one item that is `*` or
    /// has a step (`*/2`, `/2`, `0/3`, `1/3`, `1-23/2`), or when its hours are all 24 (`0-23`,
    /// `0-11,12-23`); a list of several items fires once even with a step inside (`2-12,1-14/8`).
    bool FiresInBothPasses() const;

    /// True when some field uses `H` (the fire times depend on the seed).
    bool UsesHash() const;

    CronForm form() const { return form_; }
    /// The text as given to Parse().
    const std::string& text() const { return text_; }

  private:
    CronExpression(std::shared_ptr<const impl::CronFields> fields, CronForm form, std::string text,
                   const CronOptions& options);

    std::shared_ptr<const impl::CronFields> fields_;
    CronForm form_;
    std::string text_;
    DstGap dst_gap_ = DstGap::kAuto;
    DstOverlap dst_overlap_ = DstOverlap::kAuto;
};

}  // namespace sched::cron
