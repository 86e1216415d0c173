#include "sched/cron/misfire.hpp"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <vector>

#include "test_time.hpp"

namespace sched::cron {
namespace {

using testing::At;

constexpr std::int64_t kSecond = 1000;

Schedule MakeOk(std::string_view type, std::string_view expr) {
    auto s = Schedule::Make(type, expr, "UTC");
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return std::move(s).value();
}

std::vector<std::int64_t> Times(const MisfirePlan& plan, bool misfire) {
    std::vector<std::int64_t> out;
    for (const PlannedFire& f : plan.fires) {
        if (f.misfire == misfire) out.push_back(f.scheduled_ms);
    }
    return out;
}

std::vector<std::int64_t> Range(std::int64_t from, std::int64_t to, std::int64_t step) {
    std::vector<std::int64_t> out;
    for (std::int64_t t = from; t <= to; t += step) out.push_back(t);
    return out;
}

// An every-second job that was last due a minute ago; 5 s threshold. Late: due .. now-6s (55
// times); on time: now-5s .. now (6 times).
class EverySecondDownForAMinute : public ::testing::Test {
  protected:
    const Schedule schedule_ = MakeOk("fixed-rate", "1s");
    const std::int64_t due_ = At("2024-01-01T00:00:00Z");
    const std::int64_t now_ = At("2024-01-01T00:01:00Z");

    MisfirePlan Plan(MisfirePolicy policy, std::size_t cap = 100) const {
        return PlanMisfire(schedule_, due_, now_, {5 * kSecond, policy, cap});
    }
};

TEST_F(EverySecondDownForAMinute, SkipFiresOnlyOnTimeOnes) {
    const MisfirePlan plan = Plan(MisfirePolicy::kSkip);
    EXPECT_EQ(Times(plan, false), Range(now_ - 5 * kSecond, now_, kSecond));
    EXPECT_TRUE(Times(plan, true).empty());
    EXPECT_EQ(plan.skipped, 55);
    EXPECT_FALSE(plan.skipped_is_lower_bound);
    EXPECT_EQ(plan.skipped_first_ms, due_);
    EXPECT_EQ(plan.skipped_last_ms, now_ - 6 * kSecond);
    EXPECT_EQ(plan.next_fire_time_ms, now_ + kSecond);
}

TEST_F(EverySecondDownForAMinute, FireOnceNowReplacesEverythingDue) {
    const MisfirePlan plan = Plan(MisfirePolicy::kFireOnceNow);
    ASSERT_EQ(plan.fires.size(), 1U);
    EXPECT_EQ(plan.fires[0].scheduled_ms, now_);
    EXPECT_TRUE(plan.fires[0].misfire);
    // Folded into the one fire, on-time ones included; `now` itself is a scheduled time here, and
    // it is the fire's own: a time is either fired or skipped, never both.
    EXPECT_EQ(plan.skipped, 60);
    EXPECT_EQ(plan.skipped_first_ms, due_);
    EXPECT_EQ(plan.skipped_last_ms, now_ - kSecond);
    EXPECT_EQ(plan.next_fire_time_ms, now_ + kSecond);
}

TEST_F(EverySecondDownForAMinute, FireAllKeepsTheMostRecentUpToTheCap) {
    const MisfirePlan capped = Plan(MisfirePolicy::kFireAll, 10);
    EXPECT_EQ(Times(capped, true), Range(due_ + 45 * kSecond, due_ + 54 * kSecond, kSecond));
    EXPECT_EQ(Times(capped, false), Range(now_ - 5 * kSecond, now_, kSecond));
    EXPECT_EQ(capped.skipped, 45);
    EXPECT_EQ(capped.skipped_first_ms, due_);
    EXPECT_EQ(capped.skipped_last_ms, due_ + 44 * kSecond);  // just before the first kept one
    EXPECT_EQ(capped.next_fire_time_ms, now_ + kSecond);
    // Ascending overall: catch-up fires come before the on-time ones.
    for (std::size_t i = 1; i < capped.fires.size(); ++i) {
        EXPECT_LT(capped.fires[i - 1].scheduled_ms, capped.fires[i].scheduled_ms);
    }

    const MisfirePlan all = Plan(MisfirePolicy::kFireAll, 100);
    EXPECT_EQ(Times(all, true), Range(due_, due_ + 54 * kSecond, kSecond));
    EXPECT_EQ(all.skipped, 0);
    EXPECT_FALSE(all.skipped_first_ms);
    EXPECT_FALSE(all.skipped_last_ms);
}

TEST(PlanMisfire, NothingLateMeansNormalFiresForEveryPolicy) {
    const Schedule s = MakeOk("fixed-rate", "1s");
    const std::int64_t now = At("2024-01-01T00:01:00Z");
    for (MisfirePolicy p : {MisfirePolicy::kSkip, MisfirePolicy::kFireOnceNow, MisfirePolicy::kFireAll}) {
        const MisfirePlan plan = PlanMisfire(s, now - 2 * kSecond, now, {5 * kSecond, p, 10});
        EXPECT_EQ(Times(plan, false), Range(now - 2 * kSecond, now, kSecond)) << MisfirePolicyName(p);
        EXPECT_TRUE(Times(plan, true).empty());
        EXPECT_EQ(plan.skipped, 0);
        EXPECT_EQ(plan.next_fire_time_ms, now + kSecond);
    }
    const MisfirePlan early = PlanMisfire(s, now + kSecond, now, {});
    EXPECT_TRUE(early.fires.empty());
    EXPECT_EQ(early.next_fire_time_ms, now + kSecond);
}

TEST(PlanMisfire, CronDownForADayResumesAtTheNextFutureTime) {
    const Schedule hourly = MakeOk("cron", "0 0 * * * ?");
    const std::int64_t now = At("2024-01-02T00:30:00Z");
    const MisfirePlan plan = PlanMisfire(hourly, At("2024-01-01T00:00:00Z"), now, {60 * kSecond});
    EXPECT_TRUE(plan.fires.empty());
    EXPECT_EQ(plan.skipped, 25);
    EXPECT_EQ(plan.skipped_first_ms, At("2024-01-01T00:00:00Z"));
    EXPECT_EQ(plan.skipped_last_ms, At("2024-01-02T00:00:00Z"));
    EXPECT_EQ(plan.next_fire_time_ms, At("2024-01-02T01:00:00Z"));

    const MisfirePlan all =
        PlanMisfire(hourly, At("2024-01-01T00:00:00Z"), now, {60 * kSecond, MisfirePolicy::kFireAll, 3});
    EXPECT_EQ(Times(all, true), (std::vector<std::int64_t>{At("2024-01-01T22:00:00Z"), At("2024-01-01T23:00:00Z"),
                                                           At("2024-01-02T00:00:00Z")}));
}

TEST(PlanMisfire, LongOutagesAreBoundedAndKeepTheLatestTimes) {
    const Schedule every_second = MakeOk("cron", "* * * * * ?");
    const std::int64_t due = At("2024-01-01T00:00:00Z");
    const std::int64_t now = At("2024-01-03T00:00:00Z");  // 172800 missed seconds
    const MisfirePlan skip = PlanMisfire(every_second, due, now, {5 * kSecond, MisfirePolicy::kSkip, 1});
    EXPECT_EQ(skip.skipped, 100000);
    EXPECT_TRUE(skip.skipped_is_lower_bound);
    // The range is exact even where the count stopped.
    EXPECT_EQ(skip.skipped_first_ms, due);
    EXPECT_EQ(skip.skipped_last_ms, now - 6 * kSecond);
    EXPECT_EQ(Times(skip, false), Range(now - 5 * kSecond, now, kSecond));

    const MisfirePlan all = PlanMisfire(every_second, due, now, {5 * kSecond, MisfirePolicy::kFireAll, 3});
    EXPECT_EQ(Times(all, true), Range(now - 8 * kSecond, now - 6 * kSecond, kSecond));
    EXPECT_TRUE(all.skipped_is_lower_bound);
    EXPECT_EQ(all.next_fire_time_ms, now + kSecond);
}

TEST(PlanMisfire, LargeOnTimeBacklogsAreSplitWithoutLoss) {
    const Schedule every_ms = MakeOk("fixed-rate", "1");
    const std::int64_t now = 1'000'000;
    std::int64_t due = now - 20'000;
    std::vector<std::int64_t> created;
    for (int round = 0; round < 5 && due <= now; ++round) {
        const MisfirePlan plan = PlanMisfire(every_ms, due, now, {60 * kSecond});
        EXPECT_LE(plan.fires.size(), 10000U);
        for (const PlannedFire& f : plan.fires) created.push_back(f.scheduled_ms);
        ASSERT_TRUE(plan.next_fire_time_ms);
        due = *plan.next_fire_time_ms;
    }
    EXPECT_EQ(created, Range(now - 20'000, now, 1));
    EXPECT_EQ(due, now + 1);
}

TEST(PlanMisfire, OnceAndFixedDelay) {
    const Schedule once = MakeOk("once", "2024-01-01T00:00:00Z");
    const std::int64_t at = At("2024-01-01T00:00:00Z");
    const std::int64_t now = at + 3600 * kSecond;
    const MisfirePlan skipped = PlanMisfire(once, at, now, {kSecond, MisfirePolicy::kSkip});
    EXPECT_TRUE(skipped.fires.empty());
    EXPECT_EQ(skipped.skipped, 1);
    EXPECT_EQ(skipped.next_fire_time_ms, std::nullopt);
    const MisfirePlan now_once = PlanMisfire(once, at, now, {kSecond, MisfirePolicy::kFireOnceNow});
    ASSERT_EQ(now_once.fires.size(), 1U);
    EXPECT_EQ(now_once.fires[0].scheduled_ms, now);
    const MisfirePlan all = PlanMisfire(once, at, now, {kSecond, MisfirePolicy::kFireAll, 5});
    EXPECT_EQ(Times(all, true), (std::vector<std::int64_t>{at}));
    EXPECT_EQ(all.next_fire_time_ms, std::nullopt);

    const Schedule delay = MakeOk("fixed-delay", "10s");
    const MisfirePlan resumed = PlanMisfire(delay, at, now, {kSecond, MisfirePolicy::kSkip});
    EXPECT_TRUE(resumed.fires.empty());
    EXPECT_EQ(resumed.next_fire_time_ms, now + 10 * kSecond);
    const MisfirePlan fired = PlanMisfire(delay, at, now, {kSecond, MisfirePolicy::kFireOnceNow});
    ASSERT_EQ(fired.fires.size(), 1U);
    EXPECT_EQ(fired.fires[0].scheduled_ms, now);
    EXPECT_EQ(fired.next_fire_time_ms, std::nullopt) << "waits for the run to finish";
    const MisfirePlan on_time = PlanMisfire(delay, now, now, {kSecond, MisfirePolicy::kSkip});
    EXPECT_EQ(Times(on_time, false), (std::vector<std::int64_t>{now}));
    EXPECT_EQ(on_time.next_fire_time_ms, std::nullopt);
}

TEST(PlanMisfire, RejectsOptionsThatConfigurationShouldHaveCaught) {
    const Schedule s = MakeOk("fixed-rate", "1s");
    EXPECT_THROW((void)PlanMisfire(s, 0, 10, {-1, MisfirePolicy::kSkip}), std::invalid_argument);
    EXPECT_THROW((void)PlanMisfire(s, 0, 10, {0, MisfirePolicy::kFireAll, 0}), std::invalid_argument);
    EXPECT_THROW((void)PlanMisfire(s, 0, 10, {0, MisfirePolicy::kFireAll, 10001}), std::invalid_argument);
}

TEST(MisfirePolicyNames, RoundTrip) {
    for (MisfirePolicy p : {MisfirePolicy::kSkip, MisfirePolicy::kFireOnceNow, MisfirePolicy::kFireAll}) {
        const auto parsed = ParseMisfirePolicy(MisfirePolicyName(p));
        ASSERT_TRUE(parsed.ok());
        EXPECT_EQ(*parsed, p);
    }
    EXPECT_EQ(MisfirePolicyName(MisfirePolicy::kFireOnceNow), "fire-once-now");
    const auto bad = ParseMisfirePolicy("fire_all");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("'fire_all'"), std::string::npos);
}

}  // namespace
}  // namespace sched::cron
