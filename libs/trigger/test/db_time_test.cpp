#include "sched/trigger/db_time.hpp"

#include <gtest/gtest.h>

#include "sched/common/clock.hpp"

namespace sched::trigger {
namespace {

using namespace std::chrono_literals;

std::int64_t WallUs(const Clock& c) {
    return std::chrono::duration_cast<std::chrono::microseconds>(c.System().time_since_epoch()).count();
}

TEST(DbTime, FollowsTheDatabaseClockWhenTheLocalClockIsOff) {
    FakeClock clock;
    const std::int64_t true_now_us = WallUs(clock);
    clock.JumpSystem(-10min);  // this node's wall clock is 10 minutes slow
    // The "database" answers the true time, in the middle of a 4 ms round trip.
    DbTime t(clock, [&]() -> Result<std::int64_t> {
        clock.Advance(2ms);
        const std::int64_t v = WallUs(clock) + 10LL * 60 * 1000 * 1000;
        clock.Advance(2ms);
        return v;
    });
    EXPECT_FALSE(t.Synced());
    ASSERT_TRUE(t.Refresh().ok());
    EXPECT_TRUE(t.Synced());
    EXPECT_EQ(t.Offset(), 10min);
    EXPECT_EQ(t.RoundTrip(), 4ms);
    EXPECT_EQ(t.NowUs(), true_now_us + 4000);  // true time has moved on by the round trip
    clock.Advance(1s);
    EXPECT_EQ(t.NowMs(), (true_now_us + 4000) / 1000 + 1000);
}

TEST(DbTime, PrefersTheSampleWithTheSmallestRoundTrip) {
    FakeClock clock;
    std::chrono::microseconds half_rtt = 50ms;
    std::int64_t skew_us = 0;  // a slow sample sees an asymmetric delay: it misjudges the offset
    DbTime t(clock, [&]() -> Result<std::int64_t> {
        clock.Advance(half_rtt);
        const std::int64_t v = WallUs(clock) + skew_us;
        clock.Advance(half_rtt);
        return v;
    });
    skew_us = 30'000;  // 100 ms round trip, 30 ms error
    ASSERT_TRUE(t.Refresh().ok());
    half_rtt = 1ms;
    skew_us = 0;  // 2 ms round trip, exact
    ASSERT_TRUE(t.Refresh().ok());
    half_rtt = 80ms;
    skew_us = -40'000;
    ASSERT_TRUE(t.Refresh().ok());
    EXPECT_EQ(t.RoundTrip(), 2ms);
    EXPECT_EQ(t.Offset(), 0us);
}

TEST(DbTime, KeepsTheLastOffsetWhenTheDatabaseIsDown) {
    FakeClock clock;
    bool up = true;
    DbTime t(clock, [&]() -> Result<std::int64_t> {
        if (!up) return Unavailable("db down");
        return WallUs(clock) + 5'000'000;
    });
    ASSERT_TRUE(t.Refresh().ok());
    up = false;
    Status s = t.Refresh();
    EXPECT_EQ(s.code(), Code::kUnavailable);
    EXPECT_EQ(t.Offset(), 5s);
}

TEST(DbTime, OldSamplesLeaveTheWindow) {
    FakeClock clock;
    std::chrono::microseconds half_rtt = 1ms;
    std::int64_t offset = 0;
    DbTime t(
        clock,
        [&]() -> Result<std::int64_t> {
            clock.Advance(half_rtt);
            const std::int64_t v = WallUs(clock) + offset;
            clock.Advance(half_rtt);
            return v;
        },
        2);
    ASSERT_TRUE(t.Refresh().ok());  // best: 2 ms rtt, offset 0
    half_rtt = 5ms;
    offset = 7000;
    ASSERT_TRUE(t.Refresh().ok());
    ASSERT_TRUE(t.Refresh().ok());  // the 2 ms sample has left a window of 2
    EXPECT_EQ(t.Offset(), 7ms);
}

}  // namespace
}  // namespace sched::trigger
