#include "sched/trigger/fire_planner.hpp"

#include <gtest/gtest.h>

namespace sched::trigger {
namespace {

constexpr std::int64_t kT0 = 1'700'000'040'000;  // a whole minute, UTC

cron::Schedule Make(const char* type, const char* expr) {
    auto s = cron::Schedule::Make(type, expr, "UTC");
    if (!s.ok()) throw std::runtime_error(s.status().ToString());
    return *s;
}

std::vector<std::int64_t> Times(const JobPlan& p) {
    std::vector<std::int64_t> out;
    for (const auto& f : p.fires) out.push_back(f.scheduled_ms - kT0);
    return out;
}

TEST(PlanJobFires, EverySecondCreatesTheDueOneAndTheLookaheadWindow) {
    auto every_second = Make("cron", "* * * * * ?");
    const PlanOptions o{.lookahead_ms = 2000};
    auto plan = PlanJobFires(every_second, kT0, kT0 + 100, o);
    EXPECT_EQ(Times(plan), (std::vector<std::int64_t>{0, 1000, 2000}));
    for (const auto& f : plan.fires) EXPECT_EQ(f.kind, model::FireKind::kSchedule);
    EXPECT_EQ(plan.next_fire_time, kT0 + 3000);
}

TEST(PlanJobFires, NothingDueYetBeyondTheLookahead) {
    auto every_minute = Make("cron", "0 * * * * ?");
    PlanOptions o;
    auto plan = PlanJobFires(every_minute, kT0 + 60'000, kT0, o);
    EXPECT_TRUE(plan.fires.empty());
    EXPECT_EQ(plan.next_fire_time, kT0 + 60'000);
}

TEST(PlanJobFires, DueWithinTheLookaheadIsCreatedAhead) {
    auto every_minute = Make("cron", "0 * * * * ?");
    PlanOptions o;
    auto plan = PlanJobFires(every_minute, kT0 + 60'000, kT0 + 58'500, o);
    EXPECT_EQ(Times(plan), std::vector<std::int64_t>{60'000});
    EXPECT_EQ(plan.next_fire_time, kT0 + 120'000);
}

TEST(PlanJobFires, ClusterDownAnHourWithSkipFiresOnlyWhatIsStillOnTime) {
    auto every_second = Make("cron", "* * * * * ?");
    const PlanOptions o{.lookahead_ms = 1000, .misfire = {.threshold_ms = 2000, .policy = cron::MisfirePolicy::kSkip}};
    const std::int64_t now = kT0 + 3'600'000;
    auto plan = PlanJobFires(every_second, kT0, now, o);
    // On time: now-2s .. now; ahead: now+1s. Nothing older.
    EXPECT_EQ(Times(plan), (std::vector<std::int64_t>{3'598'000, 3'599'000, 3'600'000, 3'601'000}));
    EXPECT_EQ(plan.next_fire_time, now + 2000);
}

TEST(PlanJobFires, FireOnceNowMakesOneMisfireAtNow) {
    auto hourly = Make("cron", "0 0 * * * ?");
    const PlanOptions o{.misfire = {.policy = cron::MisfirePolicy::kFireOnceNow}};
    const std::int64_t now = kT0 + 5 * 3'600'000 + 123;
    auto plan = PlanJobFires(hourly, kT0 + 3'600'000 - (kT0 % 3'600'000), now, o);
    ASSERT_EQ(plan.fires.size(), 1u);
    EXPECT_EQ(plan.fires[0].kind, model::FireKind::kMisfire);
    EXPECT_EQ(plan.fires[0].scheduled_ms, now);
    ASSERT_TRUE(plan.next_fire_time);
    EXPECT_GT(*plan.next_fire_time, now);
}

TEST(PlanJobFires, FireAllCatchesUpBoundedByTheCap) {
    auto every_second = Make("cron", "* * * * * ?");
    const PlanOptions o{.lookahead_ms = 0,
                        .misfire = {.threshold_ms = 0, .policy = cron::MisfirePolicy::kFireAll, .fire_all_cap = 5}};
    auto plan = PlanJobFires(every_second, kT0, kT0 + 60'000, o);
    std::size_t misfires = 0;
    for (const auto& f : plan.fires) misfires += f.kind == model::FireKind::kMisfire ? 1 : 0;
    EXPECT_EQ(misfires, 5u);
    EXPECT_EQ(plan.next_fire_time, kT0 + 61'000);
}

TEST(PlanJobFires, FixedDelayHasOneFireInFlightAndWaits) {
    auto delay = Make("fixed-delay", "10s");
    PlanOptions o;
    auto plan = PlanJobFires(delay, kT0, kT0 + 10, o);
    EXPECT_EQ(Times(plan), std::vector<std::int64_t>{0});
    EXPECT_EQ(plan.next_fire_time, std::nullopt);
    // Not due yet but inside the lookahead: created ahead, still only one.
    auto ahead = PlanJobFires(delay, kT0 + 1500, kT0, o);
    EXPECT_EQ(Times(ahead), std::vector<std::int64_t>{1500});
    EXPECT_EQ(ahead.next_fire_time, std::nullopt);
}

TEST(PlanJobFires, OnceFiresOnceThenHasNoNextTime) {
    auto once = Make("once", std::to_string(kT0 + 500).c_str());
    PlanOptions o;
    auto plan = PlanJobFires(once, kT0 + 500, kT0 + 600, o);
    EXPECT_EQ(Times(plan), std::vector<std::int64_t>{500});
    EXPECT_EQ(plan.next_fire_time, std::nullopt);
}

TEST(PlanJobFires, PerJobCapLeavesTheRestForTheNextScan) {
    auto fast = Make("fixed-rate", "10ms");
    const PlanOptions o{.lookahead_ms = 2000, .max_fires_per_job = 50};
    auto plan = PlanJobFires(fast, kT0, kT0, o);
    ASSERT_EQ(plan.fires.size(), 50u);
    EXPECT_EQ(plan.next_fire_time, kT0 + 500);  // the first one not created
}

}  // namespace
}  // namespace sched::trigger

namespace sched::trigger {
namespace {

cron::Schedule Jittered(const char* expr, std::int64_t job_id, std::int64_t jitter_ms) {
    cron::ScheduleOptions o;
    o.job_id = job_id;
    o.jitter_ms = jitter_ms;
    auto s = cron::Schedule::Make("cron", expr, "UTC", nullptr, o);
    if (!s.ok()) throw std::runtime_error(s.status().ToString());
    return *s;
}

TEST(PlanJobFires, JitterMovesFiresWithinTheBoundAndKeepsNominalTimes) {
    const auto every_second = Jittered("* * * * * ?", 5, 400);
    PlanOptions o;
    o.lookahead_ms = 3000;
    const auto plan = PlanJobFires(every_second, kT0, kT0 + 100, o);
    ASSERT_EQ(plan.fires.size(), 4U);
    bool moved = false;
    for (std::size_t i = 0; i < plan.fires.size(); ++i) {
        const auto& f = plan.fires[i];
        EXPECT_EQ(f.nominal_ms, kT0 + static_cast<std::int64_t>(i) * 1000);
        EXPECT_GE(f.scheduled_ms - f.nominal_ms, 0);
        EXPECT_LE(f.scheduled_ms - f.nominal_ms, 400);
        moved = moved || f.scheduled_ms != f.nominal_ms;
        if (i > 0) {
            EXPECT_GT(f.scheduled_ms, plan.fires[i - 1].scheduled_ms);
        }
    }
    EXPECT_TRUE(moved);
    EXPECT_EQ(plan.next_fire_time, kT0 + 4000);  // nominal: judged and stored without jitter
}

TEST(PlanJobFires, JitterIsTheSameWhenTheSameTimesArePlannedAgain) {
    // A new master re-plans from the stored next_fire_time: the same nominal times get the same
    // fire times, so the fire keys (job, scheduled_time, ...) match and nothing runs twice.
    PlanOptions o;
    o.lookahead_ms = 5000;
    const auto first = PlanJobFires(Jittered("* * * * * ?", 9, 900), kT0, kT0, o);
    const auto again = PlanJobFires(Jittered("* * * * * ?", 9, 900), kT0, kT0 + 50, o);
    ASSERT_EQ(first.fires.size(), again.fires.size());
    for (std::size_t i = 0; i < first.fires.size(); ++i) {
        EXPECT_EQ(first.fires[i].scheduled_ms, again.fires[i].scheduled_ms);
    }
    // A jitter larger than the interval is cut below the next nominal time: never a shared key.
    const auto wide = PlanJobFires(Jittered("* * * * * ?", 9, 3'600'000), kT0, kT0, o);
    for (std::size_t i = 1; i < wide.fires.size(); ++i) {
        EXPECT_GT(wide.fires[i].scheduled_ms, wide.fires[i - 1].scheduled_ms);
        EXPECT_LT(wide.fires[i].scheduled_ms - wide.fires[i].nominal_ms, 1000);
    }
}

}  // namespace
}  // namespace sched::trigger
