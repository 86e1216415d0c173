#include "sched/cron/planned_time.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace sched::cron {
namespace {

constexpr std::int64_t kHour = 3'600'000;
constexpr std::int64_t kFirst0230 = 1'792'888'200'000;    // 2026-10-25T02:30+02:00 (00:30Z), before fall back
constexpr std::int64_t kSecond0230 = 1'792'891'800'000;   // 2026-10-25T02:30+01:00 (01:30Z), after it
constexpr std::int64_t kShifted0330 = 1'806'197'400'000;  // 2027-03-28T03:30+02:00 (01:30Z), after the gap
constexpr std::int64_t kPlain0230 = 1'792'801'800'000;    // 2026-10-24T02:30+02:00 (00:30Z)

Schedule Make(std::string_view expr, ScheduleOptions options, std::string_view zone = "Europe/Berlin") {
    auto s = Schedule::Make("cron", expr, zone, nullptr, options);
    if (!s.ok()) throw std::runtime_error(s.status().ToString());
    return *s;
}

TEST(PlanTime, FiresAtTheJitteredTimeTheScheduleGives) {
    const auto s = Make("0 H 2 * * ?", {.job_id = 42, .jitter_ms = 600'000});
    for (const auto nominal : s.Preview(kPlain0230 - 10 * 86'400'000, 20)) {
        const auto planned = PlanTime(s, nullptr, nominal);
        EXPECT_EQ(planned.nominal_ms, nominal);
        EXPECT_EQ(planned.fire_ms, nominal + JitterOffsetMs(42, nominal, 600'000, s.NextFireTime(nominal)));
        EXPECT_FALSE(planned.excluded);
    }
    // The seed of H is the job: another id moves the minute.
    const auto other = Make("0 H 2 * * ?", {.job_id = 43, .jitter_ms = 600'000});
    EXPECT_NE(s.Preview(kPlain0230, 1), other.Preview(kPlain0230, 1));
}

TEST(PlanTime, ACalendarExcludesByTheNominalTime) {
    const auto s = Make("0 30 2 * * ?", {.job_id = 7, .jitter_ms = 3'600'000});
    auto saturdays = Calendar::Make({.time_zone = "Europe/Berlin", .excluded_weekdays = {"sat"}});
    ASSERT_TRUE(saturdays.ok());
    EXPECT_TRUE(PlanTime(s, &*saturdays, kPlain0230).excluded);  // 2026-10-24 is a Saturday
    EXPECT_FALSE(PlanTime(s, &*saturdays, kPlain0230 - 86'400'000).excluded);
    EXPECT_FALSE(PlanTime(s, nullptr, kPlain0230).excluded);
}

TEST(PlanTime, NamesTheDstCaseTheJobsChoiceDecided) {
    const auto last = Make("0 30 2 * * ?", {.dst_overlap = DstOverlap::kLast});
    EXPECT_EQ(last.NextFireTime(kPlain0230), kSecond0230);
    EXPECT_EQ(PlanTime(last, nullptr, kSecond0230).dst, DstCase::kOverlapSecond);
    const auto both = Make("0 30 2 * * ?", {.dst_overlap = DstOverlap::kBoth});
    EXPECT_EQ(both.NextFireTime(kPlain0230), kFirst0230);
    EXPECT_EQ(PlanTime(both, nullptr, kFirst0230).dst, DstCase::kOverlapFirst);
    const auto shift = Make("0 30 2 * * ?", {.dst_gap = DstGap::kShiftForward});
    EXPECT_EQ(shift.NextFireTime(kShifted0330 - 10 * kHour), kShifted0330);
    EXPECT_EQ(PlanTime(shift, nullptr, kShifted0330).dst, DstCase::kAfterGap);
    EXPECT_EQ(PlanTime(shift, nullptr, kPlain0230).dst, DstCase::kNone);
    EXPECT_EQ(DstCaseName(DstCase::kOverlapSecond), "overlap-second");
    // Only cron times are local wall-clock times.
    auto rate = Schedule::Make("fixed-rate", "1h", "Europe/Berlin");
    ASSERT_TRUE(rate.ok());
    EXPECT_EQ(PlanTime(*rate, nullptr, kSecond0230).dst, DstCase::kNone);
    EXPECT_EQ(PlanTime(Make("0 30 2 * * ?", {}, "UTC"), nullptr, kSecond0230).dst, DstCase::kNone);
}

}  // namespace
}  // namespace sched::cron
