#include "sched/cron/cron_expression.hpp"

#include <date/tz.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "impl/civil.hpp"
#include "impl/cron_fields.hpp"
#include "sched/common/name_table.hpp"
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

/// How one search maps local times to instants (the job's DST choice with `auto` resolved).
struct DstRule {
    DstGap gap = DstGap::kAuto;  // kShiftForward is searched by TransitionMatchAfter; here it skips
    bool last = false;           // a repeated local time maps to its second occurrence
    bool second_pass = false;    // repeated local times fire in both passes (TransitionMatchAfter)
};

/// The earliest instant > after that is the chosen occurrence of a matching local time, or the
/// end of a DST gap that swallowed one (gap kAuto). Each mapping used here is monotonic in the
/// local time, which is why skipping ahead below loses nothing.
std::optional<std::int64_t> FirstOccurrenceAfter(const impl::CronFields& f, std::int64_t after,
                                                 const date::time_zone& zone, const DstRule& rule) {
    std::int64_t from = after + 1 + ZoneInfoAt(zone, after).offset.count();
    // Mapping first occurrences to instants is monotonic, so at most the rest of one repeated
    // interval is skipped below; the guard only turns a broken belief into an exception.
    for (int guard = 0; guard < 64; ++guard) {
        const auto local = impl::NextLocalMatch(f, from);
        if (!local) return std::nullopt;
        const date::local_info li = LocalZoneInfoAt(zone, *local);
        if (li.result == date::local_info::nonexistent && rule.gap != DstGap::kAuto) {
            // skip and shift-forward: continue with the first local time after the gap.
            from = Sec(li.second.begin) + li.second.offset.count();
            continue;
        }
        const bool last = rule.last && li.result == date::local_info::ambiguous;
        const std::int64_t t = li.result == date::local_info::nonexistent ? Sec(li.second.begin)
                               : last                                     ? *local - li.second.offset.count()
                                                                          : *local - li.first.offset.count();
        if (t > after) return t;
        // Only a local time whose first pass is already over gets here: `after` lies in the second
        // pass of a repeated interval, so continue after that interval.
        from = li.result == date::local_info::ambiguous && !last
                   ? std::max(*local + 1, Sec(li.second.begin) + li.first.offset.count())
                   : *local + 1;
    }
    throw std::logic_error("cron: no progress resolving local times in zone " + zone.name());
}

/// The two searches around an offset change, which differ only in the sign of the change and in
/// the offset a local time is read with:
///   kGap (dst_gap shift-forward): a matching local time inside a gap moves to that local time
///     read with the offset before the gap (02:30 in Berlin's 02:00-03:00 gap -> 03:30+02); these
///     instants lie in [transition, transition + gap length).
///   kSecondPass: a matching local time in the second pass of a repeated interval, read with the
///     offset after the change.
enum class Transition { kGap, kSecondPass };

/// The earliest such instant in (after, limit).
std::optional<std::int64_t> TransitionMatchAfter(const impl::CronFields& f, std::int64_t after, std::int64_t limit,
                                                 const date::time_zone& zone, Transition kind) {
    date::sys_info period = ZoneInfoAt(zone, after);
    for (int guard = 0; guard < 32 && Sec(period.begin) < limit; ++guard) {
        const std::int64_t begin = Sec(period.begin);
        if (begin > kMinAfter) {
            const date::sys_info previous = ZoneInfoAt(zone, begin - 1);
            const std::int64_t change = (period.offset - previous.offset).count();
            const std::int64_t length = kind == Transition::kGap ? change : -change;
            if (length > 0) {
                const std::int64_t lo = std::max(begin, after + 1);
                const std::int64_t hi = std::min({begin + length, Sec(period.end), limit});
                if (lo < hi) {
                    const std::int64_t offset =
                        kind == Transition::kGap ? previous.offset.count() : period.offset.count();
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

std::optional<std::int64_t> NextInZone(const impl::CronFields& f, std::int64_t after, const date::time_zone& zone,
                                       const DstRule& rule) {
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
    // The answer is the earliest of the chosen occurrences, the second passes (when they fire)
    // and the shifted gap times (when chosen): each search alone is monotonic, their union is not.
    std::optional<std::int64_t> best = FirstOccurrenceAfter(f, after, zone, rule);
    const std::int64_t limit = best ? *best : after + kTransitionMargin;
    const auto earlier = [&](std::optional<std::int64_t> t) {
        if (t && (!best || *t < *best)) best = t;
    };
    if (rule.second_pass) earlier(TransitionMatchAfter(f, after, limit, zone, Transition::kSecondPass));
    if (rule.gap == DstGap::kShiftForward) {
        earlier(TransitionMatchAfter(f, after, best ? *best : limit, zone, Transition::kGap));
    }
    return best;
}

}  // namespace

std::optional<std::int64_t> CronExpression::Next(std::int64_t after_ms, const date::time_zone* zone) const {
    const std::int64_t after = std::max(impl::FloorDiv(after_ms, 1000), kMinAfter);
    if (after >= kMaxAfter) return std::nullopt;
    DstRule rule;
    rule.gap = dst_gap_;
    rule.last = dst_overlap_ == DstOverlap::kLast;
    rule.second_pass =
        dst_overlap_ == DstOverlap::kBoth || (dst_overlap_ == DstOverlap::kAuto && fields_->fires_in_both_passes);
    const auto next = zone ? NextInZone(*fields_, after, *zone, rule) : impl::NextLocalMatch(*fields_, after + 1);
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

bool CronExpression::UsesHash() const {
    return fields_->uses_hash;
}

std::uint64_t StableHash(std::string_view text) {
    std::uint64_t hash = 0xcbf29ce484222325ULL;
    for (char c : text) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 0x100000001b3ULL;
    }
    return hash;
}

namespace {

constexpr auto kDstGapNames = MakeNameTable<DstGap>({"auto", "skip", "shift-forward"});
constexpr auto kDstOverlapNames = MakeNameTable<DstOverlap>({"auto", "first", "last", "both"});

}  // namespace

std::string_view DstGapName(DstGap gap) {
    return kDstGapNames.Name(gap);
}

std::string_view DstOverlapName(DstOverlap overlap) {
    return kDstOverlapNames.Name(overlap);
}

Result<DstGap> ParseDstGap(std::string_view name) {
    if (auto gap = kDstGapNames.Parse(name)) return *gap;
    // The name is not echoed: it is untrusted text, and the choices are few.
    return InvalidArgument("expected " + kDstGapNames.Expected());
}

Result<DstOverlap> ParseDstOverlap(std::string_view name) {
    if (auto overlap = kDstOverlapNames.Parse(name)) return *overlap;
    return InvalidArgument("expected " + kDstOverlapNames.Expected());
}

}  // namespace sched::cron
