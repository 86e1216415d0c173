#pragma once

/// The job vocabulary shared by every part that reads or writes a job: the schedule type and the
/// misfire policy, each an enum with one name table (the `job` columns' and the API's spelling).
/// Parsed once at the edges (the store's row mapping, the jobs API, schedctl's job file) and
/// compared as enums inside. Here in `common` because the cron library (which computes with them),
/// the store (which maps them to columns) and schedctl (linked with common and http only) all
/// need the one table. docs/cron.md describes the types, DESIGN.md section 5 the policies.

#include <string_view>

#include "sched/common/name_table.hpp"
#include "sched/common/status.hpp"

namespace sched {

/// A job's `schedule_type` (sched/cron/schedule.hpp describes each type's `schedule_expr`).
enum class ScheduleType { kCron, kFixedRate, kFixedDelay, kOnce, kManual };

/// "cron", "fixed-rate", "fixed-delay", "once", "manual" (the stored spelling).
inline constexpr auto kScheduleTypeNames =
    MakeNameTable<ScheduleType>({"cron", "fixed-rate", "fixed-delay", "once", "manual"});

/// A job's `misfire_policy` (sched/cron/misfire.hpp describes what each does).
enum class MisfirePolicy { kSkip, kFireOnceNow, kFireAll };

/// "skip", "fire-once-now", "fire-all" (the stored spelling).
inline constexpr auto kMisfirePolicyNames = MakeNameTable<MisfirePolicy>({"skip", "fire-once-now", "fire-all"});

inline std::string_view ScheduleTypeName(ScheduleType type) {
    return kScheduleTypeNames.Name(type);
}
/// Inverse of ScheduleTypeName (exact, lower-case). kInvalidArgument "unknown schedule type 'x'
/// (expected cron, fixed-rate, fixed-delay, once or manual)"; the text is shown cut to 64
/// characters with control and non-ASCII bytes as '?'.
Result<ScheduleType> ParseScheduleType(std::string_view name);

inline std::string_view MisfirePolicyName(MisfirePolicy policy) {
    return kMisfirePolicyNames.Name(policy);
}
/// Inverse of MisfirePolicyName (exact, lower-case). kInvalidArgument "unknown misfire policy 'x'
/// (expected skip, fire-once-now or fire-all)", the text shown as for ParseScheduleType.
Result<MisfirePolicy> ParseMisfirePolicy(std::string_view name);

}  // namespace sched
