#include "sched/common/clock.hpp"

#include <gtest/gtest.h>

#include "sched/common/node_id.hpp"

namespace sched {
namespace {

using namespace std::chrono_literals;

TEST(FakeClock, MovesOnlyWhenTold) {
    FakeClock clock;
    const auto s0 = clock.Steady();
    const auto w0 = clock.System();
    EXPECT_EQ(clock.Steady(), s0);
    clock.Advance(1500ms);
    EXPECT_EQ(clock.Steady() - s0, 1500ms);
    EXPECT_EQ(clock.System() - w0, 1500ms);
}

TEST(FakeClock, WallJumpLeavesMonotonicAlone) {
    FakeClock clock;
    const auto s0 = clock.Steady();
    const auto w0 = clock.System();
    clock.JumpSystem(-10min);
    EXPECT_EQ(clock.Steady(), s0);
    EXPECT_EQ(w0 - clock.System(), 10min);
}

TEST(NodeId, HasHostPidAndRandomPartAndDiffersPerCall) {
    const std::string a = MakeNodeId();
    const std::string b = MakeNodeId();
    EXPECT_NE(a, b);
    const auto pid = std::to_string(getpid());
    EXPECT_NE(a.find("-" + pid + "-"), std::string::npos) << a;
    EXPECT_EQ(a.size() - a.rfind('-') - 1, 6u) << a;
}

}  // namespace
}  // namespace sched
