#include "sched/trigger/backfill_planner.hpp"

#include <map>

#include <gtest/gtest.h>

namespace sched::trigger {
namespace {

cron::Schedule Make(const char* type, const char* expr) {
    auto s = cron::Schedule::Make(type, expr, "UTC");
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return *s;
}

constexpr std::int64_t kMinute = 60'000;

TEST(FireTimesInRange, ListsTheTimesInTheHalfOpenRangeUpToTheLimit) {
    const auto every_minute = Make("cron", "0 * * * * ?");
    auto times = cron::FireTimesInRange(every_minute, 10 * kMinute, 15 * kMinute, 100);
    EXPECT_EQ(times.times, (std::vector<std::int64_t>{10 * kMinute, 11 * kMinute, 12 * kMinute, 13 * kMinute,
                                                      14 * kMinute}));  // `to` itself is excluded
    EXPECT_FALSE(times.more);
    times = cron::FireTimesInRange(every_minute, 10 * kMinute + 1, 15 * kMinute, 2);
    EXPECT_EQ(times.times, (std::vector<std::int64_t>{11 * kMinute, 12 * kMinute}));
    EXPECT_TRUE(times.more);
    EXPECT_TRUE(cron::FireTimesInRange(every_minute, 5 * kMinute, 5 * kMinute, 10).times.empty());
    // fixed-delay times follow each run's finish: a backfill has none to run.
    EXPECT_TRUE(cron::FireTimesInRange(Make("fixed-delay", "1m"), 0, 60 * kMinute, 10).times.empty());
    EXPECT_TRUE(cron::FireTimesInRange(Make("manual", ""), 0, 60 * kMinute, 10).times.empty());
}

// Runs a backfill of [from, to) step by step as the master does: each step sees the fires still
// unfinished; `finish_per_step` of them (oldest first) end between steps. Returns the most
// fires ever unfinished at once, and checks that every time got exactly one fire.
int Simulate(const cron::Schedule& schedule, std::int64_t from, std::int64_t to, int max_parallel, int finish_per_step,
             const std::set<std::int64_t>& existing, std::size_t window, std::vector<std::int64_t>* created_out) {
    std::int64_t cursor = from;
    std::vector<std::int64_t> unfinished;
    std::vector<std::int64_t> created;
    int peak = 0;
    for (int steps = 0; steps < 10000; ++steps) {
        const auto times = cron::FireTimesInRange(schedule, cursor, to, window);
        const auto step = PlanBackfillStep(times.times, times.more, existing,
                                           max_parallel - static_cast<int>(unfinished.size()), cursor, to);
        EXPECT_GE(step.cursor, cursor) << "the cursor never moves back";
        for (auto t : step.create) {
            EXPECT_GE(t, cursor);
            unfinished.push_back(t);
            created.push_back(t);
        }
        peak = std::max(peak, static_cast<int>(unfinished.size()));
        cursor = step.cursor;
        if (step.exhausted && unfinished.empty()) break;
        const auto ending = std::min<std::size_t>(unfinished.size(), static_cast<std::size_t>(finish_per_step));
        unfinished.erase(unfinished.begin(), unfinished.begin() + static_cast<std::ptrdiff_t>(ending));
    }
    EXPECT_TRUE(unfinished.empty());
    EXPECT_EQ(cursor, to);
    if (created_out) *created_out = created;
    return peak;
}

TEST(PlanBackfillStep, SerialNeverHasTwoFiresUnfinished) {
    const auto every_minute = Make("cron", "0 * * * * ?");
    std::vector<std::int64_t> created;
    EXPECT_EQ(Simulate(every_minute, 0, 30 * kMinute, 1, 1, {}, 500, &created), 1);
    ASSERT_EQ(created.size(), 30u);
    for (std::size_t i = 0; i < created.size(); ++i) EXPECT_EQ(created[i], static_cast<std::int64_t>(i) * kMinute);
}

TEST(PlanBackfillStep, ParallelHasAtMostMaxParallelUnfinished) {
    const auto every_minute = Make("cron", "0 * * * * ?");
    for (int n : {2, 3, 7}) {
        std::vector<std::int64_t> created;
        EXPECT_EQ(Simulate(every_minute, 0, 50 * kMinute, n, 1, {}, 500, &created), n) << n;
        EXPECT_EQ(created.size(), 50u);
    }
}

TEST(PlanBackfillStep, TimesThatHaveAFireArePassedOverWithoutTakingASlot) {
    const auto every_minute = Make("cron", "0 * * * * ?");
    const std::set<std::int64_t> existing = {0, 1 * kMinute, 2 * kMinute, 5 * kMinute};
    auto step = PlanBackfillStep({0, kMinute, 2 * kMinute, 3 * kMinute, 4 * kMinute, 5 * kMinute, 6 * kMinute}, false,
                                 existing, 1, 0, 7 * kMinute);
    EXPECT_EQ(step.create, (std::vector<std::int64_t>{3 * kMinute}));
    EXPECT_EQ(step.existing, 3);
    EXPECT_EQ(step.cursor, 4 * kMinute) << "stops at the first time without a slot";
    EXPECT_FALSE(step.exhausted);

    std::vector<std::int64_t> created;
    Simulate(every_minute, 0, 7 * kMinute, 2, 2, existing, 500, &created);
    EXPECT_EQ(created, (std::vector<std::int64_t>{3 * kMinute, 4 * kMinute, 6 * kMinute}));
}

TEST(PlanBackfillStep, ACursorResumesWhereTheLastStepStopped) {
    // A small window per step and a fresh planner per step (a failover between any two steps:
    // only the stored cursor carries over) still gives every time exactly one fire, in order.
    const auto every_minute = Make("cron", "0 * * * * ?");
    std::vector<std::int64_t> created;
    EXPECT_LE(Simulate(every_minute, 3 * kMinute + 5, 40 * kMinute, 4, 3, {}, 3, &created), 4);
    ASSERT_EQ(created.size(), 36u);  // minutes 4 .. 39
    for (std::size_t i = 0; i < created.size(); ++i) {
        EXPECT_EQ(created[i], (4 + static_cast<std::int64_t>(i)) * kMinute);
    }
    // With no slot the cursor stays put; nothing is lost.
    auto step = PlanBackfillStep({10 * kMinute, 11 * kMinute}, true, {}, 0, 10 * kMinute, 40 * kMinute);
    EXPECT_TRUE(step.create.empty());
    EXPECT_EQ(step.cursor, 10 * kMinute);
    EXPECT_FALSE(step.exhausted);
}

TEST(PlanBackfillStep, AnEmptyRemainderExhaustsTheRange) {
    auto step = PlanBackfillStep({}, false, {}, 1, 5, 100);
    EXPECT_TRUE(step.exhausted);
    EXPECT_EQ(step.cursor, 100);
}

}  // namespace
}  // namespace sched::trigger
