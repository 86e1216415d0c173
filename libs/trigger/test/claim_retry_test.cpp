#include "sched/trigger/claim_retry.hpp"

#include <set>

#include <gtest/gtest.h>

namespace sched::trigger {
namespace {

using std::chrono::milliseconds;

const Status kConflict = Aborted("deadlock: Deadlock found when trying to get lock");
const Status kOutage = Unavailable("database connection lost");

TEST(ClaimRetry, ConflictsHalveTheGroupAfterTwoInARowDownToOneFire) {
    ClaimRetry retry;
    std::size_t size = 35;
    std::vector<std::size_t> sizes;
    for (int i = 0; i < 14; ++i) {
        size = retry.Next(kConflict, size).claim;
        sizes.push_back(size);
    }
    EXPECT_EQ(sizes, (std::vector<std::size_t>{35, 18, 18, 9, 9, 5, 5, 3, 3, 2, 2, 1, 1, 1}));
}

TEST(ClaimRetry, ConflictWaitsAreShortAndSpread) {
    ClaimRetry retry;
    std::set<std::int64_t> waits;
    for (int i = 0; i < 40; ++i) {
        const Micros wait = retry.Next(kConflict, 1).wait;
        EXPECT_GT(wait, Micros(0));
        EXPECT_LT(wait, milliseconds(ClaimRetry::kConflictCapMs * 3 / 2));
        waits.insert(wait.count());
    }
    EXPECT_GT(waits.size(), 20u) << "a fixed wait can lock into the rhythm of the writers it meets";
}

TEST(ClaimRetry, AnOutageKeepsTheGroupWholeAndBacksOffToAboutASecond) {
    ClaimRetry retry;
    Micros last{0};
    for (int i = 0; i < 12; ++i) {
        const auto step = retry.Next(kOutage, 35);
        EXPECT_EQ(step.claim, 35u);
        last = step.wait;
    }
    EXPECT_GE(last, milliseconds(ClaimRetry::kOtherCapMs / 2));
    EXPECT_LT(last, milliseconds(ClaimRetry::kOtherCapMs * 3 / 2));
}

TEST(ClaimRetry, AnOutageStartsTheCountOfConflictsAgain) {
    ClaimRetry retry;
    EXPECT_EQ(retry.Next(kConflict, 10).claim, 10u);
    EXPECT_EQ(retry.Next(kOutage, 10).claim, 10u);
    EXPECT_EQ(retry.conflicts(), 0);
    EXPECT_EQ(retry.Next(kConflict, 10).claim, 10u) << "one conflict after the outage: not yet halved";
    EXPECT_EQ(retry.Next(kConflict, 10).claim, 5u);
    // After the outage the conflict waits start short again.
    EXPECT_LT(retry.Next(kOutage, 5).wait, milliseconds(ClaimRetry::kOtherFirstMs * 3 / 2));
}

}  // namespace
}  // namespace sched::trigger
