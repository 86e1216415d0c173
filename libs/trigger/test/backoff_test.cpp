#include "sched/trigger/backoff.hpp"

#include <set>

#include <gtest/gtest.h>

namespace sched::trigger {
namespace {

TEST(RetryDelayMs, DoublesWithinJitterBoundsAndRespectsTheCap) {
    std::mt19937_64 rng(3);
    for (int i = 0; i < 200; ++i) {
        const auto d1 = RetryDelayMs(1000, 1, 60000, rng);
        EXPECT_GE(d1, 500);
        EXPECT_LE(d1, 1000);
        const auto d3 = RetryDelayMs(1000, 3, 60000, rng);
        EXPECT_GE(d3, 2000);
        EXPECT_LE(d3, 4000);
        const auto capped = RetryDelayMs(1000, 100, 60000, rng);
        EXPECT_GE(capped, 30000);
        EXPECT_LE(capped, 60000);
    }
}

TEST(RetryDelayMs, JitterActuallyVaries) {
    std::mt19937_64 rng(5);
    std::set<std::int64_t> seen;
    for (int i = 0; i < 50; ++i) seen.insert(RetryDelayMs(1000, 2, 60000, rng));
    EXPECT_GT(seen.size(), 10u);
}

TEST(RetryDelayMs, SurvivesDegenerateInput) {
    std::mt19937_64 rng(1);
    EXPECT_GE(RetryDelayMs(0, 1, 0, rng), 0);
    EXPECT_LE(RetryDelayMs(1, 1'000'000, 10, rng), 10);
}

}  // namespace
}  // namespace sched::trigger
