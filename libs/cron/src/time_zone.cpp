#include "sched/cron/time_zone.hpp"

#include <date/tz.h>

#include <exception>
#include <string>

namespace sched::cron {

namespace {

std::string Quoted(std::string_view name) {
    std::string out = "'";
    for (char c : name.substr(0, 64)) {
        const auto u = static_cast<unsigned char>(c);
        out += (u >= 0x20 && u < 0x7f) ? c : '?';
    }
    if (name.size() > 64) out += "...";
    return out + "'";
}

}  // namespace

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
        return InvalidArgument("unknown time zone " + Quoted(name) + " (expected an IANA name such as Europe/Berlin)");
    }
}

const date::time_zone* UtcZone() {
    static const date::time_zone* const utc = date::locate_zone("UTC");
    return utc;
}

}  // namespace sched::cron
