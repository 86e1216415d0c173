#pragma once

/// The `calendars:` section of the declarative file `schedctl apply -f` and `diff -f` read
/// (docs/schedctl.md "Calendars in the file"), beside `jobs:`:
///
///     calendars:
///       - name: business-days-de          # the key: one calendar per name
///         time_zone: Europe/Berlin
///         excluded_weekdays: [sat, sun]
///         excluded_dates: ["2026-12-24..2026-12-26"]
///         excluded_times: ["22:00-06:00"]
///     jobs:
///       - name: nightly-report
///         calendar: business-days-de
///         ...
///
/// Fields are the calendar API's (`CalendarInput` in openapi.json) minus `version`; `id` is
/// refused. Bounded like the jobs part: at most kMaxCalendarsPerFile calendars, each list at most
/// kMaxCalendarEntries entries of at most kMaxCalendarEntryBytes; every problem names the file,
/// the line, the calendar (index and name) and the field. Entries are put in the server's
/// canonical form (trimmed, weekdays as "mon".."sun" in week order), so that diff compares like
/// with like.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "declared_object.hpp"
#include "plan.hpp"
#include "sched/common/status.hpp"

namespace sched::ctl {

inline constexpr std::size_t kMaxCalendarsPerFile = 1000;  ///< the API holds at most 1000
inline constexpr std::size_t kMaxCalendarEntries = 1000;   ///< cron::Calendar::kMaxDates
inline constexpr std::size_t kMaxCalendarEntryBytes = 32;
inline constexpr std::size_t kMaxCalendarNameBytes = 191;
inline constexpr std::size_t kMaxCalendarDescriptionBytes = 4096;

/// One calendar as the file declares it.
using CalendarSpec = DeclaredObject;

/// The `calendars:` section of `text` (the contents of `file_name`). nullopt when the file has
/// no `calendars:` key (then apply leaves the cluster's calendars alone, even with --prune).
/// kInvalidArgument: "jobs.yaml: line 4: calendars[0] (name \"x\"): colour: unknown field".
Result<std::optional<std::vector<CalendarSpec>>> ParseCalendarSection(std::string_view text,
                                                                      std::string_view file_name);

/// Every field a calendar in the file may hold, in the API's order.
const std::vector<std::string>& CalendarFileFields();

/// Compares `desired` with `current` (the API's calendar objects), as PlanChanges does for jobs:
/// a field left out is compared with the API's default ("" / "UTC" / []). With `prune`, current
/// calendars missing from the file are deleted. PUT bodies carry every field but the name.
Plan PlanCalendarChanges(const std::vector<CalendarSpec>& desired, const nlohmann::json& current, bool prune);

/// The deletes of `plan` and the rest, apart: apply creates and updates calendars before the jobs
/// (a job may name a new calendar) and deletes them after (a calendar in use cannot be deleted).
std::pair<Plan, Plan> SplitDeletes(const Plan& plan);

/// A calendar's rules on one line for a table: "sat, sun; 3 dates; 22:00-06:00" ("-" when none).
std::string CalendarRulesSummary(const nlohmann::json& calendar);

}  // namespace sched::ctl
