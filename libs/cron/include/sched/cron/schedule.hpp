#pragma once

/// A job's schedule: the (schedule_type, schedule_expr, time_zone) columns of the `job` table,
/// validated once and then asked for fire times. All times are epoch milliseconds (UTC).
///
/// Types and their `schedule_expr` (docs/cron.md has examples):
///   cron         a cron expression (CronExpression), evaluated in `time_zone`.
///   fixed-rate   "<interval>[@<anchor>]": fires at anchor + k * interval. Without an anchor the
///                anchor is the epoch, so "1h" fires on the hour (UTC) and "5m" on multiples of
///                five minutes, on every node alike.
///   fixed-delay  "<delay>[@<first>]": fires `delay` after the previous run finished; before the
///                first run, at `first` (when given and still ahead) or `delay` after `after_ms`.
///   once         "<instant>": fires once.
///   manual       "" (empty): never fires on its own; only API triggers run it.
/// <interval>/<delay> is a duration ("250ms", "30s", "1m30s", "2h", "1d") or a bare number of
/// milliseconds ("30000"), from 1 ms to 36500 days, in whole milliseconds.
/// <instant> is epoch milliseconds ("1735689600000") or ISO-8601 "2025-01-01T09:00:00[.250]"
/// with an optional "Z" or "+08:00"/"-0500" offset (a space may replace the "T"). Without an
/// offset it is a local time in `time_zone`, resolved by the cron DST rule (a time in a gap means
/// the first instant after the gap, a repeated time its first occurrence). Years 1970-2199.
/// `time_zone` is an IANA name; empty means "UTC". It is validated for every type.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sched/common/job_vocabulary.hpp"
#include "sched/common/status.hpp"
#include "sched/cron/cron_expression.hpp"

namespace date {
class time_zone;
}  // namespace date

namespace sched::cron {

// The schedule types and their one name table live in the job vocabulary (sched/common).
using sched::ParseScheduleType;
using sched::ScheduleType;
using sched::ScheduleTypeName;

/// Per-job options of a schedule (the job columns jitter_ms, dst_gap, dst_overlap and the id).
struct ScheduleOptions {
    /// The job id: the seed of `H` in a cron expression and of the jitter. nullopt for a job that
    /// has no id yet (validation, the preview of a new job): `H` resolves with the seed "" and the
    /// jitter with the id 0, so such a preview shows where the times may fall, not the final ones.
    std::optional<std::int64_t> job_id;
    /// 0 = none; else every fire runs JitterOffsetMs later than its scheduled (nominal) time.
    std::int64_t jitter_ms = 0;
    DstGap dst_gap = DstGap::kAuto;              ///< cron only
    DstOverlap dst_overlap = DstOverlap::kAuto;  ///< cron only
};

/// Reads a job's option columns into ScheduleOptions. kInvalidArgument whose message starts with
/// the column ("jitter_ms", "dst_gap" or "dst_overlap"), also stored in `*error_field`.
Result<ScheduleOptions> ParseScheduleOptions(std::optional<std::int64_t> job_id, std::int64_t jitter_ms,
                                             std::string_view dst_gap, std::string_view dst_overlap,
                                             std::string* error_field = nullptr);

/// The largest jitter_ms a job may have: one hour.
inline constexpr std::int64_t kMaxJitterMs = 3'600'000;

/// The deterministic jitter of the fire whose nominal time is `nominal_ms`: StableHash of
/// "<job_id>:<nominal_ms>" (decimal) modulo (jitter_ms + 1), so in [0, jitter_ms]; and when the next
/// nominal time is known, also below `next_nominal_ms - nominal_ms`, so jittered fires keep their
/// order and two of them never share a time (a fire's key). 0 when jitter_ms <= 0. The same inputs
/// give the same offset on every node and after every failover, so a re-planned fire has the key
/// it had before.
std::int64_t JitterOffsetMs(std::int64_t job_id, std::int64_t nominal_ms, std::int64_t jitter_ms,
                            std::optional<std::int64_t> next_nominal_ms = std::nullopt);

/// Immutable and cheap to copy; const members are thread-safe.
class Schedule {
  public:
    /// Validates the three job columns. On failure returns kInvalidArgument whose message starts
    /// with the offending column, e.g. "schedule_expr: day-of-month: 32 is out of range 1-31 (at
    /// position 9)" or "time_zone: unknown time zone 'Mars/Olympus' (...)", and stores that column
    /// name ("schedule_type", "schedule_expr" or "time_zone") in `*error_field` when given.
    /// `options` carries the job id (for `H` and jitter), the jitter and the DST choice; a
    /// jitter_ms outside 0..kMaxJitterMs is rejected naming "jitter_ms".
    static Result<Schedule> Make(ScheduleType type, std::string_view expr, std::string_view zone,
                                 std::string* error_field = nullptr, const ScheduleOptions& options = {});
    /// Make with the type as text (ParseScheduleType): an unknown one is rejected naming "schedule_type".
    static Result<Schedule> Make(std::string_view type, std::string_view expr, std::string_view zone,
                                 std::string* error_field = nullptr, const ScheduleOptions& options = {});

    /// The first fire time strictly after `after_ms`, or nullopt when there is none (a `once`
    /// schedule that has passed, a manual schedule, a cron year field that is exhausted).
    /// fixed-delay: max(last_finish_ms + delay, after_ms + 1) when the previous run finished at
    /// `last_finish_ms`; without it (no run yet) `first` if still ahead, else after_ms + delay.
    /// The other types ignore `last_finish_ms`.
    std::optional<std::int64_t> NextFireTime(std::int64_t after_ms,
                                             std::optional<std::int64_t> last_finish_ms = std::nullopt) const;

    /// Up to `n` upcoming nominal fire times after `after_ms`, without jitter. fixed-delay assumes
    /// every run finishes the moment it starts.
    std::vector<std::int64_t> Preview(std::int64_t after_ms, std::size_t n) const;

    /// When the fire of nominal time `nominal_ms` runs: nominal + JitterOffsetMs (bounded by the
    /// next nominal time, NextFireTime(nominal_ms), except for fixed-delay whose next time waits
    /// for the run). Equal to `nominal_ms` without jitter.
    std::int64_t FireTimeMs(std::int64_t nominal_ms) const;

    /// Preview() with FireTimeMs applied: the times the runs will actually start (the web API's preview).
    std::vector<std::int64_t> PreviewFireTimes(std::int64_t after_ms, std::size_t n) const;

    const ScheduleOptions& options() const { return options_; }

    /// True for fixed-delay: after a fire is created the next fire time is unknown until that run
    /// finishes (store NULL, then NextFireTime(finish, finish) on completion).
    bool WaitsForFinish() const { return type_ == ScheduleType::kFixedDelay; }

    ScheduleType type() const { return type_; }
    /// The expression as given, without surrounding whitespace.
    const std::string& expression() const { return expression_; }
    /// The IANA zone name ("UTC" when it was given empty).
    const std::string& zone_name() const { return zone_name_; }
    const date::time_zone* zone() const { return zone_; }
    /// The cron expression of a cron schedule, nullptr for the other types.
    const CronExpression* cron() const { return cron_ ? &*cron_ : nullptr; }
    /// fixed-rate interval or fixed-delay delay; 0 for the other types.
    std::int64_t interval_ms() const { return interval_ms_; }
    /// fixed-rate anchor (0 when not given), fixed-delay first fire (when given), once instant.
    std::optional<std::int64_t> instant_ms() const { return instant_ms_; }

  private:
    Schedule() = default;

    ScheduleType type_ = ScheduleType::kManual;
    std::string expression_;
    std::string zone_name_;
    const date::time_zone* zone_ = nullptr;
    std::optional<CronExpression> cron_;
    std::int64_t interval_ms_ = 0;
    std::optional<std::int64_t> instant_ms_;
    ScheduleOptions options_;
};

/// A change of a zone's UTC offset (a DST transition).
struct OffsetChange {
    std::int64_t at_ms = 0;            ///< the instant the new offset starts
    std::int64_t offset_before_s = 0;  ///< seconds east of UTC before it
    std::int64_t offset_after_s = 0;   ///< and after it: larger = a gap (spring forward), smaller = an overlap
};

/// The zone's first offset change strictly after `after_ms` and at most `within_ms` later, or
/// nullopt (UTC, zones without DST, or none in the window). Follows the same rules as the cron
/// search (ZoneInfoAt, so past 2037 too).
std::optional<OffsetChange> NextOffsetChange(const date::time_zone& zone, std::int64_t after_ms,
                                             std::int64_t within_ms);

/// Parses an <instant> as described above; local times resolve in `zone` (nullptr = UTC).
/// kInvalidArgument saying what was expected.
Result<std::int64_t> ParseInstant(std::string_view text, const date::time_zone* zone);

}  // namespace sched::cron
