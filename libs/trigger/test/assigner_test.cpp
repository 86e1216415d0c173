#include "sched/trigger/assigner.hpp"

#include <map>

#include <gtest/gtest.h>

namespace sched::trigger {
namespace {

TEST(Assigner, WeightedRoundRobinInterleavesByCapacity) {
    Assigner a({{"b", 1}, {"a", 2}});
    std::string seq;
    for (int i = 0; i < 6; ++i) seq += *a.Next();
    EXPECT_EQ(seq, "abaaba");
}

TEST(Assigner, EqualWeightsAlternateAndZeroCapacityStillGetsWork) {
    Assigner a({{"x", 0}, {"y", 0}});
    std::map<std::string, int> n;
    for (int i = 0; i < 10; ++i) n[*a.Next()]++;
    EXPECT_EQ(n["x"], 5);
    EXPECT_EQ(n["y"], 5);
}

TEST(Assigner, NoSlavesNoAssignment) {
    Assigner a({});
    EXPECT_TRUE(a.empty());
    EXPECT_EQ(a.Next(), std::nullopt);
}

}  // namespace
}  // namespace sched::trigger
