#include "sched/cron/planned_time.hpp"

#include <date/tz.h>

#include "sched/common/name_table.hpp"
#include "sched/cron/time_zone.hpp"

namespace sched::cron {

namespace {

// Offset periods that reach this far are the open ends of a zone's history (date/tz uses the
// extreme representable seconds there): there is no neighbour to compare with.
constexpr std::int64_t kOpenEndS = 100LL * 365 * 86'400 * 100;

std::int64_t Seconds(date::sys_seconds t) {
    return t.time_since_epoch().count();
}

std::int64_t FloorSeconds(std::int64_t ms) {
    return ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
}

}  // namespace

std::string_view DstCaseName(DstCase dst) {
    // kNone spells as "" so that a plain fire carries no DST note.
    static constexpr auto kDstCaseNames = MakeNameTable<DstCase>({"", "after-gap", "overlap-first", "overlap-second"});
    return dst == DstCase::kNone ? std::string_view() : kDstCaseNames.Name(dst);
}

DstCase DstCaseAt(const Schedule& schedule, std::int64_t ms) {
    if (schedule.type() != ScheduleType::kCron || !schedule.zone()) return DstCase::kNone;
    const auto& zone = *schedule.zone();
    const std::int64_t t = FloorSeconds(ms);
    const auto info = ZoneInfoAt(zone, t);
    const std::int64_t begin = Seconds(info.begin);
    const std::int64_t end = Seconds(info.end);
    const std::int64_t offset = info.offset.count();
    if (begin > -kOpenEndS) {
        const std::int64_t before = ZoneInfoAt(zone, begin - 1).offset.count();
        if (before < offset && t - begin < offset - before) return DstCase::kAfterGap;
        if (before > offset && t - begin < before - offset) return DstCase::kOverlapSecond;
    }
    if (end < kOpenEndS) {
        const std::int64_t after = ZoneInfoAt(zone, end).offset.count();
        if (after < offset && end - t <= offset - after) return DstCase::kOverlapFirst;
    }
    return DstCase::kNone;
}

PlannedTime PlanTime(const Schedule& schedule, const Calendar* calendar, std::int64_t nominal_ms) {
    return {.nominal_ms = nominal_ms,
            .fire_ms = schedule.FireTimeMs(nominal_ms),
            .excluded = calendar != nullptr && calendar->IsExcluded(nominal_ms),
            .dst = DstCaseAt(schedule, nominal_ms)};
}

}  // namespace sched::cron
