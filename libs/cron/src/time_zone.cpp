#include "sched/cron/time_zone.hpp"

#include <date/tz.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "impl/civil.hpp"
#include "impl/posix_tz.hpp"
#include "sched/common/quoted.hpp"

namespace sched::cron {

namespace {

// TZif files are a few kB; anything larger is not one.
constexpr std::size_t kMaxTzifBytes = 1 << 20;

std::uint32_t BigEndian32(const std::string& data, std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(data[at + i]);
    return v;
}

// The footer of a TZif v2+ file (RFC 8536): the text between the newlines after the 64-bit data
// block. Empty when the file is version 1, malformed, or has no footer.
std::string ReadTzifFooter(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return {};
    std::string data;
    data.resize(kMaxTzifBytes + 1);
    in.read(data.data(), static_cast<std::streamsize>(data.size()));
    data.resize(static_cast<std::size_t>(in.gcount()));
    if (data.size() > kMaxTzifBytes) return {};
    constexpr std::size_t kHeader = 44;
    // Sizes of the counted records: 32-bit block, then 64-bit block (transition times widen).
    const auto block_size = [&](std::size_t at, std::uint64_t time_size) -> std::optional<std::uint64_t> {
        if (at + kHeader > data.size() || data.compare(at, 4, "TZif") != 0) return std::nullopt;
        const std::uint64_t isut = BigEndian32(data, at + 20), isstd = BigEndian32(data, at + 24),
                            leap = BigEndian32(data, at + 28), time = BigEndian32(data, at + 32),
                            type = BigEndian32(data, at + 36), chars = BigEndian32(data, at + 40);
        // Each count is below 2^32, so the sum cannot overflow 64 bits.
        return kHeader + time * time_size + time + type * 6 + chars + leap * (time_size + 4) + isstd + isut;
    };
    if (data.size() < kHeader || data[4] < '2') return {};
    const auto v1 = block_size(0, 4);
    if (!v1 || *v1 > data.size()) return {};
    const auto v2 = block_size(static_cast<std::size_t>(*v1), 8);
    if (!v2 || *v1 + *v2 >= data.size()) return {};
    const std::size_t open = static_cast<std::size_t>(*v1 + *v2);
    if (data[open] != '\n') return {};
    const std::size_t close = data.find('\n', open + 1);
    if (close == std::string::npos || close - open - 1 > impl::kMaxPosixTzLength) return {};
    return data.substr(open + 1, close - open - 1);
}

constexpr std::int64_t Sec(date::sys_seconds t) {
    return t.time_since_epoch().count();
}

// date/tz (OS tzdb) ends the last listed period at year 32767; anything past 9999 means "open".
constexpr std::int64_t kOpenEnd = impl::DaysFromCivil(10000, 1, 1) * impl::kSecondsPerDay;

// A zone's rule for the instants after its last listed transition, when the TZif footer has one
// that agrees with that transition.
struct FooterRule {
    impl::PosixTz tz;
    std::int64_t last_listed = 0;  // begin of date/tz's last (open-ended) period
};

date::sys_info FooterInfo(const FooterRule& rule, std::int64_t t) {
    const int year = impl::CivilFromSeconds(t + rule.tz.std_offset_s).year;
    const auto transitions = impl::PosixTzTransitions(rule.tz, year - 1, year + 1);
    const auto next = std::upper_bound(transitions.begin(), transitions.end(), t,
                                       [](std::int64_t v, const impl::PosixTzTransition& x) { return v < x.at; });
    // Year - 1 always holds a transition before t: the rule has DST and t is in year or later.
    const bool dst = next == transitions.begin() ? false : std::prev(next)->dst;
    date::sys_info info;
    info.begin = date::sys_seconds{std::chrono::seconds{
        next == transitions.begin() ? rule.last_listed : std::max(std::prev(next)->at, rule.last_listed)}};
    info.end = date::sys_seconds{std::chrono::seconds{next == transitions.end() ? kOpenEnd : next->at}};
    info.offset = std::chrono::seconds{dst ? rule.tz.dst_offset_s : rule.tz.std_offset_s};
    info.save = std::chrono::minutes{dst ? (rule.tz.dst_offset_s - rule.tz.std_offset_s) / 60 : 0};
    info.abbrev = dst ? rule.tz.dst_abbrev : rule.tz.std_abbrev;
    return info;
}

std::optional<FooterRule> LoadFooterRule(const date::time_zone& zone) {
    // The same directory date/tz reads in its OS-tzdb mode; zone names come from its listing.
    const std::string footer = ReadTzifFooter("/usr/share/zoneinfo/" + zone.name());
    auto tz = impl::ParsePosixTz(footer);
    if (!tz.ok() || !tz->has_dst) return std::nullopt;
    const date::sys_info last = zone.get_info(date::sys_seconds{std::chrono::seconds{kOpenEnd - 1}});
    FooterRule rule{std::move(*tz), Sec(last.begin)};
    // Use the rule only where it continues the listed transitions seamlessly.
    if (FooterInfo(rule, rule.last_listed).offset != last.offset) return std::nullopt;
    return rule;
}

// Null when the zone has no usable footer rule. Entries live as long as the process.
const FooterRule* FooterRuleOf(const date::time_zone& zone) {
    thread_local const date::time_zone* last_zone = nullptr;
    thread_local const FooterRule* last_rule = nullptr;
    if (last_zone == &zone) return last_rule;
    static std::mutex mutex;
    static std::map<const date::time_zone*, std::unique_ptr<const FooterRule>> rules;
    const FooterRule* found = nullptr;
    {
        std::lock_guard lock(mutex);
        auto it = rules.find(&zone);
        if (it == rules.end()) {
            auto loaded = LoadFooterRule(zone);
            it = rules.emplace(&zone, loaded ? std::make_unique<const FooterRule>(std::move(*loaded)) : nullptr).first;
        }
        found = it->second.get();
    }
    last_zone = &zone;
    last_rule = found;
    return found;
}

}  // namespace

date::sys_info ZoneInfoAt(const date::time_zone& zone, std::int64_t epoch_s) {
    date::sys_info info = zone.get_info(date::sys_seconds{std::chrono::seconds{epoch_s}});
    if (Sec(info.end) < kOpenEnd) return info;
    const FooterRule* rule = FooterRuleOf(zone);
    if (!rule || epoch_s < rule->last_listed) return info;
    return FooterInfo(*rule, epoch_s);
}

date::local_info LocalZoneInfoAt(const date::time_zone& zone, std::int64_t local_s) {
    date::local_info li = zone.get_info(date::local_seconds{std::chrono::seconds{local_s}});
    if (li.result != date::local_info::unique || Sec(li.first.end) < kOpenEnd) return li;
    const FooterRule* rule = FooterRuleOf(zone);
    // Within two days of the last listed transition date/tz's answer is exact: the footer's next
    // transition is months away, and offsets differ by less than a day.
    if (!rule || local_s < rule->last_listed + 2 * impl::kSecondsPerDay) return li;
    date::sys_info candidates[2] = {FooterInfo(*rule, local_s - rule->tz.std_offset_s),
                                    FooterInfo(*rule, local_s - rule->tz.dst_offset_s)};
    if (Sec(candidates[1].begin) < Sec(candidates[0].begin)) std::swap(candidates[0], candidates[1]);
    const auto fits = [&](const date::sys_info& i) {
        const std::int64_t t = local_s - i.offset.count();
        return Sec(i.begin) <= t && t < Sec(i.end);
    };
    li = {};
    if (Sec(candidates[0].begin) == Sec(candidates[1].begin)) {
        li.result = date::local_info::unique;
        li.first = candidates[0];
        return li;
    }
    const bool fits0 = fits(candidates[0]);
    const bool fits1 = fits(candidates[1]);
    li.result = fits0 && fits1   ? date::local_info::ambiguous
                : fits0 || fits1 ? date::local_info::unique
                                 : date::local_info::nonexistent;
    if (li.result == date::local_info::unique) {
        li.first = fits0 ? candidates[0] : candidates[1];
    } else {
        li.first = candidates[0];
        li.second = candidates[1];
    }
    return li;
}

Result<const date::time_zone*> LookupZone(std::string_view name) {
    if (name.empty()) return InvalidArgument("time zone name is empty (expected an IANA name such as Europe/Berlin)");
    // Resolves to the host's /etc/localtime: two trigger nodes could disagree about it.
    if (name == "localtime") {
        return InvalidArgument("time zone 'localtime' depends on the host; use an IANA name such as Europe/Berlin");
    }
    try {
        (void)date::get_tzdb();
    } catch (const std::exception& e) {
        return FailedPrecondition(std::string("time-zone database unavailable (is tzdata installed?): ") + e.what());
    }
    try {
        return date::locate_zone(name);
    } catch (const std::exception&) {
        return InvalidArgument("unknown time zone " + QuotedForMessage(name) +
                               " (expected an IANA name such as Europe/Berlin)");
    }
}

const date::time_zone* UtcZone() {
    static const date::time_zone* const utc = date::locate_zone("UTC");
    return utc;
}

}  // namespace sched::cron
