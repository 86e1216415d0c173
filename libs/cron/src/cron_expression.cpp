#include "sched/cron/cron_expression.hpp"

#include <date/tz.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "impl/civil.hpp"
#include "impl/cron_fields.hpp"
#include "sched/cron/time_zone.hpp"

namespace sched::cron {

namespace impl {

std::optional<std::int64_t> NextLocalMatch(const CronFields& f, std::int64_t from) {
    CivilTime t = CivilFromSeconds(from);
    if (t.year < kMinYear) t = {kMinYear, 1, 1, 0, 0, 0};
    // Every `continue` moves the candidate forward by at least one unit of a coarser field and the
    // year is capped, so the loop ends: in practice after a few passes, at worst after one pass per
    // month up to kMaxYear.
    while (true) {
        if (t.year > kMaxYear) return std::nullopt;
        if (!f.years.Test(t.year)) {
            const auto year = f.years.NextFrom(t.year);
            if (!year) return std::nullopt;
            t = {*year, 1, 1, 0, 0, 0};
        }
        const int month = NextBit(f.months, t.month);
        if (month < 0) {
            t = {t.year + 1, 1, 1, 0, 0, 0};
            continue;
        }
        if (month != t.month) t = {t.year, month, 1, 0, 0, 0};
        const int day = NextBit(f.DayMask(t.year, t.month), t.day);
        if (day < 0) {
            t = t.month == 12 ? CivilTime{t.year + 1, 1, 1, 0, 0, 0} : CivilTime{t.year, t.month + 1, 1, 0, 0, 0};
            continue;
        }
        if (day != t.day) t = {t.year, t.month, day, 0, 0, 0};
        const int hour = NextBit(f.hours, t.hour);
        if (hour < 0) {
            // Day 32 is harmless: no day mask has a bit above the month's length.
            t = {t.year, t.month, t.day + 1, 0, 0, 0};
            continue;
        }
        if (hour != t.hour) t = {t.year, t.month, t.day, hour, 0, 0};
        const int minute = NextBit(f.minutes, t.minute);
        if (minute < 0) {
            t = {t.year, t.month, t.day, t.hour + 1, 0, 0};
            continue;
        }
        if (minute != t.minute) t = {t.year, t.month, t.day, t.hour, minute, 0};
        const int second = NextBit(f.seconds, t.second);
        if (second < 0) {
            t = {t.year, t.month, t.day, t.hour, t.minute + 1, 0};
            continue;
        }
        t.second = second;
        return SecondsFromCivil(t);
    }
}

}  // namespace impl

namespace {

// Anything before 1969 is clamped (fire times start at 1970-01-01 local, at most 14 h earlier in
// UTC) and anything after 2200 has no fire time, which keeps every computation far from overflow.
constexpr std::int64_t kMinAfter = impl::DaysFromCivil(1969, 1, 1) * impl::kSecondsPerDay;
constexpr std::int64_t kMaxAfter = impl::DaysFromCivil(impl::kMaxYear + 1, 1, 2) * impl::kSecondsPerDay;

// UTC offsets differ by less than a day between neighbouring periods, so a local time more than
// two days from both ends of an offset period exists exactly once.
constexpr std::int64_t kTransitionMargin = 2 * impl::kSecondsPerDay;

std::int64_t Sec(date::sys_seconds t) {
    return t.time_since_epoch().count();
}

/// The earliest instant > after that is the first occurrence of a matching local time, or the end
/// of a DST gap that swallowed one.
std::optional<std::int64_t> FirstOccurrenceAfter(const impl::CronFields& f, std::int64_t after,
                                                 const date::time_zone& zone) {
    std::int64_t from = after + 1 + ZoneInfoAt(zone, after).offset.count();
    // Mapping first occurrences to instants is monotonic, so at most the rest of one repeated
    // interval is skipped below; the guard only turns a broken belief into an exception.
    for (int guard = 0; guard < 64; ++guard) {
        const auto local = impl::NextLocalMatch(f, from);
        if (!local) return std::nullopt;
        const date::local_info li = LocalZoneInfoAt(zone, *local);
        const std::int64_t t =
            li.result == date::local_info::nonexistent ? Sec(li.second.begin) : *local - li.first.offset.count();
        if (t > after) return t;
        // Only a local time whose first pass is already over gets here: `after` lies in the second
        // pass of a repeated interval, so continue after that interval.
        from = li.result == date::local_info::ambiguous
                   ? std::max(*local + 1, Sec(li.second.begin) + li.first.offset.count())
                   : *local + 1;
    }
    throw std::logic_error("cron: no progress resolving local times in zone " + zone.name());
}

/// The earliest instant in (after, limit) that lies in the second pass of a repeated interval and
/// whose local time matches.
std::optional<std::int64_t> SecondPassAfter(const impl::CronFields& f, std::int64_t after, std::int64_t limit,
                                            const date::time_zone& zone) {
    date::sys_info period = ZoneInfoAt(zone, after);
    for (int guard = 0; guard < 32 && Sec(period.begin) < limit; ++guard) {
        const std::int64_t begin = Sec(period.begin);
        if (begin > kMinAfter) {
            const date::sys_info previous = ZoneInfoAt(zone, begin - 1);
            const std::int64_t repeated = (previous.offset - period.offset).count();
            if (repeated > 0) {
                const std::int64_t lo = std::max(begin, after + 1);
                const std::int64_t hi = std::min({begin + repeated, Sec(period.end), limit});
                if (lo < hi) {
                    const std::int64_t offset = period.offset.count();
                    const auto local = impl::NextLocalMatch(f, lo + offset);
                    if (local && *local - offset < hi) return *local - offset;
                }
            }
        }
        if (Sec(period.end) >= limit) break;
        period = ZoneInfoAt(zone, Sec(period.end));
    }
    return std::nullopt;
}

std::optional<std::int64_t> NextInZone(const impl::CronFields& f, std::int64_t after, const date::time_zone& zone) {
    const date::sys_info info = ZoneInfoAt(zone, after);
    const std::int64_t offset = info.offset.count();
    if (after - Sec(info.begin) >= kTransitionMargin) {
        // Fast path: the answer lies well inside the current offset period, where local time maps
        // one-to-one onto instants and no DST rule applies.
        const auto local = impl::NextLocalMatch(f, after + 1 + offset);
        if (!local) return std::nullopt;
        const std::int64_t t = *local - offset;
        if (Sec(info.end) - t >= kTransitionMargin) return t;
    }
    const auto first = FirstOccurrenceAfter(f, after, zone);
    if (!f.fires_in_both_passes) return first;
    const auto second = SecondPassAfter(f, after, first ? *first : after + kTransitionMargin, zone);
    if (second && (!first || *second < *first)) return second;
    return first;
}

}  // namespace

std::optional<std::int64_t> CronExpression::Next(std::int64_t after_ms, const date::time_zone* zone) const {
    const std::int64_t after = std::max(impl::FloorDiv(after_ms, 1000), kMinAfter);
    if (after >= kMaxAfter) return std::nullopt;
    const auto next = zone ? NextInZone(*fields_, after, *zone) : impl::NextLocalMatch(*fields_, after + 1);
    if (!next) return std::nullopt;
    return *next * 1000;
}

std::vector<std::int64_t> CronExpression::NextN(std::int64_t after_ms, const date::time_zone* zone,
                                                std::size_t n) const {
    std::vector<std::int64_t> out;
    out.reserve(std::min<std::size_t>(n, 1024));
    for (std::optional<std::int64_t> t = after_ms; out.size() < n;) {
        t = Next(*t, zone);
        if (!t) break;
        out.push_back(*t);
    }
    return out;
}

bool CronExpression::FiresInBothPasses() const {
    return fields_->fires_in_both_passes;
}

}  // namespace sched::cron
