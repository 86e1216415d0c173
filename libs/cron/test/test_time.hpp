#pragma once

// Test helpers that turn readable timestamps into epoch milliseconds and back, using date/tz
// directly so that expectations do not go through the code under test.

#include <date/tz.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>

#include "sched/cron/time_zone.hpp"

namespace sched::cron::testing {

using Ms = std::chrono::milliseconds;
using SysMs = date::sys_time<Ms>;

/// "2024-03-31T01:00:00Z" or "2024-03-31T03:00:00+0200" (offset required) -> epoch ms.
/// (Not date::parse: g++ 12 reports a false -Wmaybe-uninitialized inside it.)
inline std::int64_t At(std::string_view text) {
    const std::string s(text);
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, consumed = 0;
    if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &consumed) != 6) {
        throw std::invalid_argument("bad test timestamp " + s);
    }
    const std::string zone = s.substr(static_cast<std::size_t>(consumed));
    int offset_minutes = 0;
    if (zone != "Z") {
        int oh = 0, om = 0;
        if (zone.size() != 5 || std::sscanf(zone.c_str() + 1, "%2d%2d", &oh, &om) != 2) {
            throw std::invalid_argument("bad test timestamp offset " + s);
        }
        offset_minutes = (zone[0] == '-' ? -1 : 1) * (oh * 60 + om);
    }
    const date::sys_days day{date::year{y} / mo / d};
    const auto t = day + std::chrono::hours{h} + std::chrono::minutes{mi - offset_minutes} + std::chrono::seconds{sec};
    return std::chrono::duration_cast<Ms>(t.time_since_epoch()).count();
}

/// epoch ms -> "2024-03-31T03:00:00+0200" in `zone` (nullptr: UTC, "...Z").
inline std::string Show(std::int64_t ms, const date::time_zone* zone) {
    const SysMs t{Ms{ms}};
    const auto secs = date::floor<std::chrono::seconds>(t);
    if (!zone) return date::format("%FT%TZ", secs);
    return date::format("%FT%T%z", date::make_zoned(zone, secs));
}

inline const date::time_zone* Zone(std::string_view name) {
    if (name == "nullptr") return nullptr;
    auto zone = LookupZone(name);
    if (!zone.ok()) throw std::invalid_argument(zone.status().ToString());
    return *zone;
}

}  // namespace sched::cron::testing
