#pragma once

/// IANA time zones for schedules, backed by Howard Hinnant's date/tz over the system tzdata
/// (/usr/share/zoneinfo; Debian builds the library with USE_OS_TZDB=1).
///
/// Only a forward declaration of date::time_zone is exposed here so that callers that merely pass
/// zones around do not pay for <date/tz.h>. Include <date/tz.h> to inspect a zone.
///
/// Known limitation of the OS-tzdb build: Debian's zoneinfo files list explicit transitions only
/// up to 2037 and date/tz does not evaluate the POSIX rule that follows them, so for instants
/// after the last listed transition (late 2037) every zone keeps the offset that transition set:
/// standard time in the northern hemisphere, summer time in the southern one (Sydney +11:00,
/// Auckland +13:00, Santiago -03:00 in July 2038). docs/cron.md; pinned by time_zone_test.

#include <string_view>

#include "sched/common/status.hpp"

namespace date {
class time_zone;
}  // namespace date

namespace sched::cron {

/// Looks up an IANA zone by name ("Europe/Berlin", "UTC", links such as "US/Eastern" too).
/// Returns kInvalidArgument naming the zone when it is empty, unknown, or host-dependent
/// ("localtime" would mean different things on different nodes), and kFailedPrecondition when the
/// time-zone database itself cannot be loaded (tzdata missing). The pointer stays valid for the
/// life of the process. Thread-safe.
Result<const date::time_zone*> LookupZone(std::string_view name);

/// The "UTC" zone. Throws std::runtime_error when the time-zone database cannot be loaded.
const date::time_zone* UtcZone();

}  // namespace sched::cron
