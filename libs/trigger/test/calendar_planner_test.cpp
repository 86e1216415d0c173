#include "sched/trigger/calendar_planner.hpp"

#include <gtest/gtest.h>

namespace sched::trigger {
namespace {

constexpr std::int64_t kSec = 1000;
constexpr std::int64_t kDay = 86'400'000;
constexpr std::int64_t kFri0900 = 1'795'770'000'000;  // 2026-11-27T09:00:00Z, a Friday
constexpr std::int64_t kSat0900 = kFri0900 + kDay;
constexpr std::int64_t kMon0900 = kFri0900 + 3 * kDay;
constexpr std::int64_t kMon2200 = 1'780'351'200'000;  // 2026-06-01T22:00:00Z, a Monday
constexpr std::int64_t kMon1200 = 1'780'315'200'000;  // 2026-06-01T12:00:00Z

cron::Schedule Make(const char* type, const char* expr) {
    auto s = cron::Schedule::Make(type, expr, "UTC");
    if (!s.ok()) throw std::runtime_error(s.status().ToString());
    return *s;
}

cron::Calendar Cal(cron::CalendarRules rules) {
    auto c = cron::Calendar::Make(rules);
    if (!c.ok()) throw std::runtime_error(c.status().ToString());
    return *c;
}

std::vector<std::int64_t> Times(const BoundedPlan& p) {
    std::vector<std::int64_t> out;
    for (const auto& f : p.plan.fires) out.push_back(f.scheduled_ms);
    return out;
}

TEST(PlanBoundedJobFires, ExcludedWeekendIsOneRunAndTheJobMovesToMonday) {
    const auto daily = Make("cron", "0 0 9 * * ?");
    const auto business_days = Cal({.excluded_weekdays = {"sat", "sun"}});
    auto p = PlanBoundedJobFires(daily, &business_days, {}, kSat0900, kSat0900 - 500, PlanOptions{});
    EXPECT_TRUE(p.plan.fires.empty());
    ASSERT_EQ(p.excluded.size(), 1u);
    EXPECT_EQ(p.excluded[0].first_ms, kSat0900);
    EXPECT_EQ(p.excluded[0].last_ms, kSat0900 + kDay);
    EXPECT_EQ(p.excluded[0].count, 2);
    EXPECT_EQ(p.plan.next_fire_time, kMon0900);
    EXPECT_FALSE(p.end);
    // Friday is not excluded: it fires, nothing is recorded.
    auto friday = PlanBoundedJobFires(daily, &business_days, {}, kFri0900, kFri0900 - 500, PlanOptions{});
    EXPECT_EQ(Times(friday), std::vector<std::int64_t>{kFri0900});
    EXPECT_TRUE(friday.excluded.empty());
    EXPECT_EQ(friday.plan.next_fire_time, kSat0900);
}

TEST(PlanBoundedJobFires, RunsBetweenFiresAreSeparateEntries) {
    const auto every_20s = Make("cron", "*/20 * * * * ?");
    const auto lunch = Cal({.excluded_times = {"12:01-12:02"}});
    PlanOptions o;
    o.lookahead_ms = 120 * kSec;
    // 12:00:40 fires, 12:01:00-12:01:40 are excluded, 12:02:00 .. 12:02:40 fire.
    auto p = PlanBoundedJobFires(every_20s, &lunch, {}, kMon1200 + 40 * kSec, kMon1200 + 40 * kSec, o);
    EXPECT_EQ(Times(p), (std::vector<std::int64_t>{kMon1200 + 40 * kSec, kMon1200 + 120 * kSec, kMon1200 + 140 * kSec,
                                                   kMon1200 + 160 * kSec}));
    ASSERT_EQ(p.excluded.size(), 1u);
    EXPECT_EQ(p.excluded[0].first_ms, kMon1200 + 60 * kSec);
    EXPECT_EQ(p.excluded[0].last_ms, kMon1200 + 100 * kSec);
    EXPECT_EQ(p.excluded[0].count, 3);
}

TEST(PlanBoundedJobFires, AnOpenRunGoesOnPastTheLookaheadUpToTheCap) {
    const auto every_second = Make("cron", "* * * * * ?");
    const auto night = Cal({.excluded_times = {"22:00-06:00"}});
    auto p = PlanBoundedJobFires(every_second, &night, {}, kMon2200, kMon2200, PlanOptions{});
    EXPECT_TRUE(p.plan.fires.empty());
    ASSERT_EQ(p.excluded.size(), 1u);
    EXPECT_EQ(p.excluded[0].count, kMaxExcludedPerRun);
    EXPECT_EQ(p.excluded[0].last_ms, kMon2200 + (kMaxExcludedPerRun - 1) * kSec);
    ASSERT_EQ(p.plan.next_fire_time, kMon2200 + kMaxExcludedPerRun * kSec);  // the next planning goes on
    // Near the end of the night the run closes at 05:59:59 and the job's next time is 06:00:00.
    const std::int64_t six = kMon2200 + 8 * 3600 * kSec;
    auto last = PlanBoundedJobFires(every_second, &night, {}, six - 3 * kSec, six - 3 * kSec, PlanOptions{});
    ASSERT_EQ(last.excluded.size(), 1u);
    EXPECT_EQ(last.excluded[0].count, 3);
    EXPECT_EQ(last.excluded[0].last_ms, six - kSec);
    EXPECT_TRUE(last.plan.fires.empty());
    EXPECT_EQ(last.plan.next_fire_time, six);
}

TEST(PlanBoundedJobFires, FixedDelayMovesOnFromAnExcludedTime) {
    const auto hourly = Make("fixed-delay", "1h");
    const auto business_days = Cal({.excluded_weekdays = {"sat", "sun"}});
    auto p = PlanBoundedJobFires(hourly, &business_days, {}, kSat0900, kSat0900, PlanOptions{});
    EXPECT_TRUE(p.plan.fires.empty());
    ASSERT_EQ(p.excluded.size(), 1u);
    EXPECT_EQ(p.excluded[0].count, 15 + 24);                       // Saturday 09:00-23:00 and Sunday
    EXPECT_EQ(p.plan.next_fire_time, kMon0900 - 9 * 3600 * kSec);  // Monday 00:00 (every hour from 09:00)
}

// After an outage the misfire policy decides only about the times the calendar allows; the excluded
// ones are calendar skips dated at their own times.
TEST(PlanBoundedJobFires, AfterAnOutageExcludedTimesAreCalendarSkipsAtTheirTimes) {
    const auto daily = Make("cron", "0 0 9 * * ?");
    const auto business_days = Cal({.excluded_weekdays = {"sat", "sun"}});
    const std::int64_t tue1000 = kMon0900 + kDay + 3600 * kSec;  // down from Friday 08:00 until now
    PlanOptions o;
    o.misfire.policy = cron::MisfirePolicy::kFireOnceNow;
    auto once = PlanBoundedJobFires(daily, &business_days, {}, kFri0900, tue1000, o);
    ASSERT_EQ(once.excluded.size(), 1u);
    EXPECT_EQ(once.excluded[0].first_ms, kSat0900);
    EXPECT_EQ(once.excluded[0].last_ms, kSat0900 + kDay);
    EXPECT_EQ(once.excluded[0].count, 2);
    ASSERT_TRUE(once.plan.skipped);  // Friday, Monday and Tuesday 09:00 fold into the fire at now
    EXPECT_EQ(once.plan.skipped->first_ms, kFri0900);
    EXPECT_EQ(once.plan.skipped->last_ms, kMon0900 + kDay);
    EXPECT_EQ(once.plan.skipped->count, 3);
    ASSERT_EQ(once.plan.fires.size(), 1u);
    EXPECT_EQ(once.plan.fires[0].scheduled_ms, tue1000);
    EXPECT_EQ(once.plan.next_fire_time, kMon0900 + 2 * kDay);

    o.misfire.policy = cron::MisfirePolicy::kSkip;
    auto skip = PlanBoundedJobFires(daily, &business_days, {}, kFri0900, tue1000, o);
    ASSERT_EQ(skip.excluded.size(), 1u);
    EXPECT_EQ(skip.excluded[0].first_ms, kSat0900);
    EXPECT_EQ(skip.excluded[0].count, 2);
    ASSERT_TRUE(skip.plan.skipped);
    EXPECT_EQ(skip.plan.skipped->count, 3);
    EXPECT_TRUE(skip.plan.fires.empty());

    // Back on Sunday: the calendar dates no row at now (not a scheduled time); the one fire
    // stands for Friday, which the calendar allowed.
    const std::int64_t sun1000 = kSat0900 + kDay + 3600 * kSec;
    o.misfire.policy = cron::MisfirePolicy::kFireOnceNow;
    auto sunday = PlanBoundedJobFires(daily, &business_days, {}, kFri0900, sun1000, o);
    ASSERT_EQ(sunday.excluded.size(), 1u);
    EXPECT_EQ(sunday.excluded[0].first_ms, kSat0900);
    EXPECT_EQ(sunday.excluded[0].last_ms, kSat0900 + kDay);
    ASSERT_TRUE(sunday.plan.skipped);
    EXPECT_EQ(sunday.plan.skipped->count, 1);
    EXPECT_EQ(Times(sunday), std::vector<std::int64_t>{sun1000});
}

TEST(PlanBoundedJobFires, NoFireBeforeStartAt) {
    const auto every_second = Make("cron", "* * * * * ?");
    const std::int64_t t = kMon1200;
    JobBounds b{.start_ms = t + 10 * kSec};
    auto early = PlanBoundedJobFires(every_second, nullptr, b, t, t, PlanOptions{});
    EXPECT_TRUE(early.plan.fires.empty());
    EXPECT_TRUE(early.excluded.empty());
    EXPECT_EQ(early.plan.next_fire_time, t + 10 * kSec);
    auto at_start = PlanBoundedJobFires(every_second, nullptr, b, t, t + 9 * kSec, PlanOptions{});
    EXPECT_EQ(Times(at_start), (std::vector<std::int64_t>{t + 10 * kSec, t + 11 * kSec}));
    EXPECT_EQ(FirstBoundedFireTime(every_second, b, t), t + 10 * kSec);
    EXPECT_EQ(FirstBoundedFireTime(every_second, b, t + 20 * kSec), t + 21 * kSec);
}

TEST(PlanBoundedJobFires, EndAtCompletesTheJobWithItsLastFire) {
    const auto every_second = Make("cron", "* * * * * ?");
    const std::int64_t t = kMon1200;
    JobBounds b{.end_ms = t + 1500};
    auto p = PlanBoundedJobFires(every_second, nullptr, b, t, t, PlanOptions{});
    EXPECT_EQ(Times(p), (std::vector<std::int64_t>{t, t + kSec}));
    EXPECT_EQ(p.plan.next_fire_time, std::nullopt);
    EXPECT_EQ(p.end, JobEnd::kEndAt);
    // A due time already past end_at: no fire, completed.
    auto late = PlanBoundedJobFires(every_second, nullptr, b, t + 2 * kSec, t + 2 * kSec, PlanOptions{});
    EXPECT_TRUE(late.plan.fires.empty());
    EXPECT_EQ(late.end, JobEnd::kEndAt);
    EXPECT_EQ(FirstBoundedFireTime(every_second, b, t + 2 * kSec), std::nullopt);
    // Within the bound nothing ends.
    auto early = PlanBoundedJobFires(every_second, nullptr, {.end_ms = t + 60 * kSec}, t, t, PlanOptions{});
    EXPECT_FALSE(early.end);
    EXPECT_EQ(early.plan.next_fire_time, t + 3 * kSec);
}

TEST(PlanBoundedJobFires, EndAtStopsAnExcludedRun) {
    const auto every_second = Make("cron", "* * * * * ?");
    const auto night = Cal({.excluded_times = {"22:00-06:00"}});
    auto p =
        PlanBoundedJobFires(every_second, &night, {.end_ms = kMon2200 + 99 * kSec}, kMon2200, kMon2200, PlanOptions{});
    ASSERT_EQ(p.excluded.size(), 1u);
    EXPECT_EQ(p.excluded[0].count, 100);
    EXPECT_EQ(p.end, JobEnd::kEndAt);
    EXPECT_EQ(p.plan.next_fire_time, std::nullopt);
}

TEST(PlanBoundedJobFires, MaxRunsCountsScheduledFiresOnly) {
    const auto every_second = Make("cron", "* * * * * ?");
    const std::int64_t t = kMon1200;
    PlanOptions o;
    o.lookahead_ms = 5000;
    auto p = PlanBoundedJobFires(every_second, nullptr, {.max_runs = 3, .planned_runs = 1}, t, t, o);
    EXPECT_EQ(Times(p), (std::vector<std::int64_t>{t, t + kSec}));
    EXPECT_EQ(p.end, JobEnd::kMaxRuns);
    EXPECT_EQ(p.plan.next_fire_time, std::nullopt);
    auto done = PlanBoundedJobFires(every_second, nullptr, {.max_runs = 3, .planned_runs = 3}, t, t, o);
    EXPECT_TRUE(done.plan.fires.empty());
    EXPECT_EQ(done.end, JobEnd::kMaxRuns);
    auto more = PlanBoundedJobFires(every_second, nullptr, {.max_runs = 100, .planned_runs = 3}, t, t, o);
    EXPECT_EQ(more.plan.fires.size(), 6u);
    EXPECT_FALSE(more.end);
    // Excluded times are no runs: with 12:01-12:02 excluded the third run is 12:02:00.
    const auto every_20s = Make("cron", "*/20 * * * * ?");
    const auto lunch = Cal({.excluded_times = {"12:01-12:02"}});
    o.lookahead_ms = 300 * kSec;
    auto cal = PlanBoundedJobFires(every_20s, &lunch, {.max_runs = 3}, t + 40 * kSec, t + 40 * kSec, o);
    EXPECT_EQ(Times(cal), (std::vector<std::int64_t>{t + 40 * kSec, t + 120 * kSec, t + 140 * kSec}));
    ASSERT_EQ(cal.excluded.size(), 1u);
    EXPECT_EQ(cal.excluded[0].count, 3);
    EXPECT_EQ(cal.end, JobEnd::kMaxRuns);
}

}  // namespace
}  // namespace sched::trigger
