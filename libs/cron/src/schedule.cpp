#include "sched/cron/schedule.hpp"

#include <date/tz.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>
#include <utility>

#include "impl/civil.hpp"
#include "impl/cron_fields.hpp"
#include "sched/common/duration.hpp"
#include "sched/common/quoted.hpp"
#include "sched/cron/time_zone.hpp"

namespace sched::cron {

namespace {

constexpr std::int64_t kMaxInterval = 36500LL * 86400 * 1000;
constexpr std::int64_t kMaxInstant = impl::DaysFromCivil(impl::kMaxYear + 1, 1, 1) * impl::kSecondsPerDay * 1000;
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

bool IsSpace(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool IsDigit(char c) {
    return c >= '0' && c <= '9';
}

std::string_view Trim(std::string_view s) {
    while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
    while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
    return s;
}

bool AllDigits(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s) {
        if (!IsDigit(c)) return false;
    }
    return true;
}

std::optional<std::int64_t> CheckedAdd(std::int64_t a, std::int64_t b) {
    if (b > 0 && a > kInt64Max - b) return std::nullopt;
    return a + b;
}

/// Reads exactly `n` digits at `i` into `out`.
bool Digits(std::string_view s, std::size_t& i, std::size_t n, int& out) {
    if (i + n > s.size()) return false;
    out = 0;
    for (std::size_t k = 0; k < n; ++k) {
        if (!IsDigit(s[i + k])) return false;
        out = out * 10 + (s[i + k] - '0');
    }
    i += n;
    return true;
}

Result<std::int64_t> ParseInterval(std::string_view text) {
    const auto bad = [&](const std::string& why) {
        return InvalidArgument("interval " + QuotedForMessage(text) + " " + why +
                               " (expected a duration like \"30s\", \"1m30s\", \"250ms\" or milliseconds like "
                               "\"30000\")");
    };
    std::int64_t ms = 0;
    if (AllDigits(text)) {
        if (text.size() > 15) return bad("is too large");
        for (char c : text) ms = ms * 10 + (c - '0');
    } else {
        const auto duration = ParseDuration(text);
        if (!duration.ok()) return bad("is not a duration");
        if (duration->count() % 1000 != 0) return bad("is not a whole number of milliseconds");
        ms = duration->count() / 1000;
    }
    if (ms < 1) return bad("must be at least 1ms");
    if (ms > kMaxInterval) return bad("must be at most 36500d");
    return ms;
}

}  // namespace

Result<std::int64_t> ParseInstant(std::string_view text, const date::time_zone* zone) {
    text = Trim(text);
    const auto bad = [&](const std::string& why) {
        return InvalidArgument("instant " + QuotedForMessage(text) + " " + why +
                               " (expected epoch milliseconds or ISO-8601 like \"2025-01-01T09:00:00Z\" or "
                               "\"2025-01-01T09:00:00+08:00\")");
    };
    if (AllDigits(text)) {
        if (text.size() > 15) return bad("is out of range");
        std::int64_t ms = 0;
        for (char c : text) ms = ms * 10 + (c - '0');
        if (ms >= kMaxInstant) return bad("is after the year 2199");
        return ms;
    }
    std::size_t i = 0;
    int year = 0;
    int month = 0;
    int day = 0;
    int hour = 0;
    int minute = 0;
    int second = 0;
    int millis = 0;
    if (!Digits(text, i, 4, year) || i >= text.size() || text[i++] != '-' || !Digits(text, i, 2, month) ||
        i >= text.size() || text[i++] != '-' || !Digits(text, i, 2, day)) {
        return bad("is not a date");
    }
    if (i < text.size()) {
        if (text[i] != 'T' && text[i] != 't' && text[i] != ' ') return bad("has no 'T' between date and time");
        ++i;
        if (!Digits(text, i, 2, hour) || i >= text.size() || text[i++] != ':' || !Digits(text, i, 2, minute)) {
            return bad("has no HH:MM time");
        }
        if (i < text.size() && text[i] == ':') {
            ++i;
            if (!Digits(text, i, 2, second)) return bad("has a malformed seconds part");
            if (i < text.size() && text[i] == '.') {
                ++i;
                int scale = 100;
                const std::size_t start = i;
                while (i < text.size() && IsDigit(text[i])) {
                    if (i - start >= 3) return bad("has more than millisecond precision");
                    millis += (text[i] - '0') * scale;
                    scale /= 10;
                    ++i;
                }
                if (i == start) return bad("has an empty fraction");
            }
        }
    }
    if (year < impl::kMinYear || year > impl::kMaxYear) return bad("is outside the years 1970-2199");
    if (month < 1 || month > 12 || day < 1 || day > impl::DaysInMonth(year, month)) return bad("is not a valid date");
    if (hour > 23 || minute > 59 || second > 59) return bad("is not a valid time of day");

    const std::int64_t local =
        impl::SecondsFromCivil({year, month, day, hour, minute, second}) * 1000 + static_cast<std::int64_t>(millis);
    if (i < text.size()) {
        std::int64_t offset_s = 0;
        if (text[i] == 'Z' || text[i] == 'z') {
            ++i;
        } else if (text[i] == '+' || text[i] == '-') {
            const int sign = text[i] == '-' ? -1 : 1;
            ++i;
            int oh = 0;
            int om = 0;
            if (!Digits(text, i, 2, oh)) return bad("has a malformed UTC offset");
            if (i < text.size() && text[i] == ':') ++i;
            if (i < text.size() && !Digits(text, i, 2, om)) return bad("has a malformed UTC offset");
            if (oh > 18 || om > 59) return bad("has a UTC offset out of range");
            offset_s = static_cast<std::int64_t>(sign) * (oh * 3600 + om * 60);
        } else {
            return bad("has unexpected text after the time");
        }
        if (i != text.size()) return bad("has unexpected text after the offset");
        return local - offset_s * 1000;
    }
    if (!zone) return local;
    const std::int64_t local_s = impl::FloorDiv(local, 1000);
    const date::local_info li = LocalZoneInfoAt(*zone, local_s);
    // The cron DST rule: a time in a gap means the first instant after it, a repeated time its
    // first occurrence.
    if (li.result == date::local_info::nonexistent) return li.second.begin.time_since_epoch().count() * 1000;
    return local - li.first.offset.count() * 1000;
}

Result<ScheduleOptions> ParseScheduleOptions(std::optional<std::int64_t> job_id, std::int64_t jitter_ms,
                                             std::string_view dst_gap, std::string_view dst_overlap,
                                             std::string* error_field) {
    const auto fail = [&](std::string_view field, const std::string& message) -> Result<ScheduleOptions> {
        if (error_field) *error_field = std::string(field);
        return InvalidArgument(std::string(field) + ": " + message);
    };
    ScheduleOptions options;
    options.job_id = job_id;
    if (jitter_ms < 0 || jitter_ms > kMaxJitterMs) {
        return fail("jitter_ms", "must be 0 (none) to " + std::to_string(kMaxJitterMs) + " milliseconds, got " +
                                     std::to_string(jitter_ms));
    }
    options.jitter_ms = jitter_ms;
    const auto gap = ParseDstGap(dst_gap);
    if (!gap.ok()) return fail("dst_gap", gap.status().message());
    options.dst_gap = *gap;
    const auto overlap = ParseDstOverlap(dst_overlap);
    if (!overlap.ok()) return fail("dst_overlap", overlap.status().message());
    options.dst_overlap = *overlap;
    return options;
}

std::optional<OffsetChange> NextOffsetChange(const date::time_zone& zone, std::int64_t after_ms,
                                             std::int64_t within_ms) {
    const std::int64_t after_s = impl::FloorDiv(after_ms, 1000);
    const std::int64_t until_s = after_s + within_ms / 1000;
    date::sys_info info = ZoneInfoAt(zone, after_s);
    // A period may end without changing the offset (a new abbreviation or `save` split); a
    // handful of periods always reaches the next real change or the end of the window.
    for (int guard = 0; guard < 16; ++guard) {
        const std::int64_t end = info.end.time_since_epoch().count();
        if (end > until_s || end >= kMaxInstant / 1000) return std::nullopt;
        const date::sys_info next = ZoneInfoAt(zone, end);
        if (next.offset != info.offset) {
            return OffsetChange{end * 1000, info.offset.count(), next.offset.count()};
        }
        info = next;
    }
    return std::nullopt;
}

std::int64_t JitterOffsetMs(std::int64_t job_id, std::int64_t nominal_ms, std::int64_t jitter_ms,
                            std::optional<std::int64_t> next_nominal_ms) {
    if (jitter_ms <= 0) return 0;
    auto choices = static_cast<std::uint64_t>(jitter_ms) + 1;
    // Strictly below the gap to the next nominal time: fires stay in order and keep distinct keys.
    if (next_nominal_ms && *next_nominal_ms > nominal_ms) {
        choices = std::min(choices, static_cast<std::uint64_t>(*next_nominal_ms - nominal_ms));
    }
    const std::uint64_t hash = StableHash(std::to_string(job_id) + ":" + std::to_string(nominal_ms));
    return static_cast<std::int64_t>(hash % choices);
}

Result<Schedule> Schedule::Make(std::string_view type, std::string_view expr, std::string_view zone,
                                std::string* error_field, const ScheduleOptions& options) {
    const auto parsed_type = ParseScheduleType(type);
    if (!parsed_type.ok()) {
        if (error_field) *error_field = "schedule_type";
        return InvalidArgument("schedule_type: " + parsed_type.status().message());
    }
    return Make(*parsed_type, expr, zone, error_field, options);
}

Result<Schedule> Schedule::Make(ScheduleType type, std::string_view expr, std::string_view zone,
                                std::string* error_field, const ScheduleOptions& options) {
    const auto fail = [&](std::string_view field, const Status& status) -> Result<Schedule> {
        if (error_field) *error_field = std::string(field);
        return InvalidArgument(std::string(field) + ": " + status.message());
    };
    const std::string_view zone_name = zone.empty() ? std::string_view("UTC") : zone;
    const auto tz = LookupZone(zone_name);
    if (!tz.ok()) {
        if (tz.status().code() != Code::kInvalidArgument) return tz.status();
        return fail("time_zone", tz.status());
    }

    if (options.jitter_ms < 0 || options.jitter_ms > kMaxJitterMs) {
        return fail("jitter_ms", InvalidArgument("must be 0 (none) to " + std::to_string(kMaxJitterMs) +
                                                 " milliseconds, got " + std::to_string(options.jitter_ms)));
    }

    Schedule s;
    s.options_ = options;
    s.type_ = type;
    s.zone_name_ = std::string(zone_name);
    s.zone_ = *tz;
    const std::string_view text = Trim(expr);
    s.expression_ = std::string(text);
    switch (s.type_) {
        case ScheduleType::kCron: {
            CronOptions cron_options;
            if (options.job_id) cron_options.hash_seed = std::to_string(*options.job_id);
            cron_options.dst_gap = options.dst_gap;
            cron_options.dst_overlap = options.dst_overlap;
            auto cron = CronExpression::Parse(text, nullptr, cron_options);
            if (!cron.ok()) return fail("schedule_expr", cron.status());
            s.cron_ = std::move(cron).value();
            break;
        }
        case ScheduleType::kFixedRate:
        case ScheduleType::kFixedDelay: {
            const std::size_t at = text.find('@');
            const auto interval = ParseInterval(Trim(text.substr(0, at)));
            if (!interval.ok()) return fail("schedule_expr", interval.status());
            s.interval_ms_ = *interval;
            if (at != std::string_view::npos) {
                const auto instant = ParseInstant(text.substr(at + 1), s.zone_);
                if (!instant.ok()) return fail("schedule_expr", instant.status());
                s.instant_ms_ = *instant;
            } else if (s.type_ == ScheduleType::kFixedRate) {
                s.instant_ms_ = 0;
            }
            break;
        }
        case ScheduleType::kOnce: {
            const auto instant = ParseInstant(text, s.zone_);
            if (!instant.ok()) return fail("schedule_expr", instant.status());
            s.instant_ms_ = *instant;
            break;
        }
        case ScheduleType::kManual:
            if (!text.empty()) {
                return fail("schedule_expr", InvalidArgument("a manual schedule takes no expression, got " +
                                                             QuotedForMessage(text) + "; leave it empty"));
            }
            break;
    }
    return s;
}

std::optional<std::int64_t> Schedule::NextFireTime(std::int64_t after_ms,
                                                   std::optional<std::int64_t> last_finish_ms) const {
    switch (type_) {
        case ScheduleType::kCron:
            return cron_->Next(after_ms, zone_);
        case ScheduleType::kFixedRate: {
            const std::int64_t anchor = instant_ms_.value_or(0);
            if (after_ms < anchor) return anchor;
            const std::int64_t elapsed = (after_ms - anchor) / interval_ms_;
            if (elapsed >= (kInt64Max - anchor) / interval_ms_) return std::nullopt;
            return anchor + (elapsed + 1) * interval_ms_;
        }
        case ScheduleType::kFixedDelay: {
            const auto earliest = CheckedAdd(after_ms, 1);
            if (!earliest) return std::nullopt;
            if (last_finish_ms) {
                const auto due = CheckedAdd(*last_finish_ms, interval_ms_);
                if (!due) return std::nullopt;
                return std::max(*due, *earliest);
            }
            if (instant_ms_ && *instant_ms_ > after_ms) return instant_ms_;
            return CheckedAdd(after_ms, interval_ms_);
        }
        case ScheduleType::kOnce:
            if (*instant_ms_ > after_ms) return instant_ms_;
            return std::nullopt;
        case ScheduleType::kManual:
            return std::nullopt;
    }
    return std::nullopt;
}

std::vector<std::int64_t> Schedule::Preview(std::int64_t after_ms, std::size_t n) const {
    if (type_ == ScheduleType::kCron) return cron_->NextN(after_ms, zone_, n);
    std::vector<std::int64_t> out;
    std::optional<std::int64_t> t = NextFireTime(after_ms);
    while (t && out.size() < n) {
        out.push_back(*t);
        t = type_ == ScheduleType::kFixedDelay ? CheckedAdd(*t, interval_ms_) : NextFireTime(*t);
    }
    return out;
}

std::int64_t Schedule::FireTimeMs(std::int64_t nominal_ms) const {
    if (options_.jitter_ms <= 0) return nominal_ms;
    const auto next = WaitsForFinish() ? std::nullopt : NextFireTime(nominal_ms);
    return nominal_ms + JitterOffsetMs(options_.job_id.value_or(0), nominal_ms, options_.jitter_ms, next);
}

std::vector<std::int64_t> Schedule::PreviewFireTimes(std::int64_t after_ms, std::size_t n) const {
    std::vector<std::int64_t> out = Preview(after_ms, n);
    for (auto& t : out) t = FireTimeMs(t);
    return out;
}

}  // namespace sched::cron
