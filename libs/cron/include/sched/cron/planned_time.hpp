#pragma once

/// How the master plans one scheduled (nominal) time of a job: when its run starts, whether the
/// job's calendar excludes it and whether the job's DST choice decided it. The master's planner
/// (trigger::PlanJobFires, trigger::PlanBoundedJobFires) and the API's previews both ask PlanTime,
/// so a preview shows the times the planner will fire at. Pure; thread-safe.
///
/// `H` and the DST choice are part of the schedule (Schedule::Make with the job's id and options):
/// they decide which nominal times there are. Jitter and the calendar act per nominal time, here.

#include <cstdint>
#include <string_view>

#include "sched/cron/calendar.hpp"
#include "sched/cron/schedule.hpp"

namespace sched::cron {

/// Where a cron time stands against its zone's offset changes (only cron times are local
/// wall-clock times; the other types are always kNone).
enum class DstCase {
    kNone,
    kAfterGap,       ///< within a gap's length after a gap (spring forward): dst_gap decided it
    kOverlapFirst,   ///< its local time occurs again after the fall back: dst_overlap decided it
    kOverlapSecond,  ///< the second occurrence of a repeated local time: dst_overlap decided it
};
/// "after-gap", "overlap-first", "overlap-second"; "" for kNone.
std::string_view DstCaseName(DstCase dst);

struct PlannedTime {
    std::int64_t nominal_ms = 0;  ///< the schedule's time: the job's next_fire_time, the ledger's date
    std::int64_t fire_ms = 0;     ///< when its run starts: nominal + jitter (Schedule::FireTimeMs)
    /// The calendar excludes the nominal time (jitter never moves a time into or out of an
    /// excluded period): it gets no fire, only a calendar skip in the ledger.
    bool excluded = false;
    DstCase dst = DstCase::kNone;
};

/// The plan of `nominal_ms`, a time of `schedule`; `calendar` nullptr = none.
PlannedTime PlanTime(const Schedule& schedule, const Calendar* calendar, std::int64_t nominal_ms);

/// The DstCase of instant `ms` for `schedule` (kNone unless it is a cron schedule in a zone).
DstCase DstCaseAt(const Schedule& schedule, std::int64_t ms);

}  // namespace sched::cron
