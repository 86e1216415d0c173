#include "sched/trigger/shard_count_watch.hpp"

#include <gtest/gtest.h>

namespace sched::trigger {
namespace {

using namespace std::chrono_literals;
using Clock = ShardCountWatch::Clock;

// Heartbeats every second taking 5 ms each, from `t` on; each answers whether the count is read.
class Beats {
  public:
    explicit Beats(ShardCountWatch& watch) : watch_(watch) {}
    bool Beat(bool ok = true, bool read_ok = true) {
        const auto started = t_;
        t_ += 5ms;
        const bool due = watch_.ReadDue(started, t_, ok);
        if (due && read_ok) watch_.Read(t_);
        t_ += 1s;
        return due;
    }
    void Pause(Clock::duration d) { t_ += d; }

  private:
    ShardCountWatch& watch_;
    Clock::time_point t_{};
};

TEST(ShardCountWatchTest, ReadAtTheFirstHeartbeatThenOncePerMaxAge) {
    ShardCountWatch watch(2s, 30s);
    Beats beats(watch);
    EXPECT_TRUE(beats.Beat());
    int reads = 0;
    for (int i = 0; i < 60; ++i) reads += beats.Beat() ? 1 : 0;
    EXPECT_EQ(reads, 2) << "60 regular heartbeats, a read every 30 s";
}

TEST(ShardCountWatchTest, ReadAfterAGapLongerThanTwoIntervals) {
    ShardCountWatch watch(2s, 30s);
    Beats beats(watch);
    ASSERT_TRUE(beats.Beat());
    EXPECT_FALSE(beats.Beat());
    beats.Pause(500ms);  // a late heartbeat, still within the gap
    EXPECT_FALSE(beats.Beat());
    beats.Pause(1s);  // paused: another node may have found this one dead
    EXPECT_TRUE(beats.Beat());
    EXPECT_FALSE(beats.Beat());
}

TEST(ShardCountWatchTest, ReadAfterAFailedHeartbeatOnceOneSucceeds) {
    ShardCountWatch watch(2s, 30s);
    Beats beats(watch);
    ASSERT_TRUE(beats.Beat());
    EXPECT_FALSE(beats.Beat(/*ok=*/false)) << "no read while the database does not answer";
    EXPECT_TRUE(beats.Beat());
    EXPECT_FALSE(beats.Beat());
}

TEST(ShardCountWatchTest, AReadThatFailedStaysDue) {
    ShardCountWatch watch(2s, 30s);
    Beats beats(watch);
    EXPECT_TRUE(beats.Beat(true, /*read_ok=*/false));
    EXPECT_TRUE(beats.Beat(true, /*read_ok=*/false));
    EXPECT_TRUE(beats.Beat());
    EXPECT_FALSE(beats.Beat());
}

}  // namespace
}  // namespace sched::trigger
