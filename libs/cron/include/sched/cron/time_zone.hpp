#pragma once

/// IANA time zones for schedules, backed by Howard Hinnant's date/tz over the system tzdata
/// (/usr/share/zoneinfo; Debian builds the library with USE_OS_TZDB=1).
///
/// Only a forward declaration of date::time_zone is exposed here so that callers that merely pass
/// zones around do not pay for <date/tz.h>. Include <date/tz.h> to inspect a zone.
///
/// Past the last listed transition: Debian's zoneinfo files list transitions explicitly only up to
/// 2037 and date/tz does not evaluate the POSIX TZ rule that ends each TZif file (its "footer", e.g.
/// `AEST-10AEDT,M10.1.0,M4.1.0/3`). ZoneInfoAt and LocalZoneInfoAt do: after the last listed
/// transition they follow that rule, so DST continues in 2038 and later in both hemispheres
/// (Sydney +10:00 in July 2040 and +11:00 in January). The cron search uses them; code that asks
/// date/tz directly (date::make_zoned, time_zone::get_info) still sees the last listed offset
/// forever. A footer that is missing, malformed or disagrees with the last listed transition is
/// ignored (the zone then keeps that transition's offset). docs/cron.md; pinned by time_zone_test.

#include <cstdint>
#include <string_view>

#include "sched/common/status.hpp"

namespace date {
class time_zone;
struct sys_info;
struct local_info;
}  // namespace date

namespace sched::cron {

/// Looks up an IANA zone by name ("Europe/Berlin", "UTC", links such as "US/Eastern" too).
/// Returns kInvalidArgument naming the zone when it is empty, unknown, or host-dependent
/// ("localtime" would mean different things on different nodes), and kFailedPrecondition when the
/// time-zone database itself cannot be loaded (tzdata missing). The pointer stays valid for the
/// life of the process. Thread-safe.
Result<const date::time_zone*> LookupZone(std::string_view name);

/// The zone's offset period containing the instant `epoch_s` (seconds): date/tz's answer up to the
/// last listed transition, the TZif footer's POSIX rule after it (see above). Thread-safe; the
/// first call per zone reads its file once (about 2 kB, bounded to 1 MiB).
date::sys_info ZoneInfoAt(const date::time_zone& zone, std::int64_t epoch_s);

/// The same for a local wall-clock time `local_s` (seconds since 1970-01-01T00:00 local): unique,
/// nonexistent (first = period before the gap, second = after) or ambiguous (first = earlier).
date::local_info LocalZoneInfoAt(const date::time_zone& zone, std::int64_t local_s);

/// The "UTC" zone. Throws std::runtime_error when the time-zone database cannot be loaded.
const date::time_zone* UtcZone();

}  // namespace sched::cron
