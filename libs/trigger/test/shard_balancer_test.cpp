// How one node's shard electors are gated (ShardBalancer): a node below its fair share takes a
// free shard at once, one at or above it only after the shard stayed free for a tick; a node
// above its share (or two above the least loaded) yields one shard, only after the imbalance
// held for `hold`, only if it is the first of the most loaded, its highest shard first; a
// disabled node takes nothing and yields everything.

#include "sched/trigger/shard_balancer.hpp"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sched::trigger {
namespace {

using namespace std::chrono_literals;

class ShardBalancerTest : public ::testing::Test {
  protected:
    static constexpr auto kTick = 1s;
    static constexpr auto kHold = 3s;

    std::unique_ptr<ShardBalancer> Make(int shards, const std::string& self) {
        names_.clear();
        for (int i = 0; i < shards; ++i) names_.push_back(i == 0 ? "master" : "master/" + std::to_string(i));
        return std::make_unique<ShardBalancer>(
            names_, self, kTick, kHold,
            [this](int shard) -> std::optional<std::string> {
                const auto it = holders_.find(shard);
                return it == holders_.end() ? std::nullopt : std::optional(it->second);
            },
            clock_);
    }
    const std::string& Name(int shard) const { return names_.at(static_cast<std::size_t>(shard)); }

    FakeClock clock_;
    std::vector<std::string> names_;
    std::map<int, std::string> holders_;
};

TEST_F(ShardBalancerTest, ANodeBelowItsShareTakesAFreeShardAtOnce) {
    auto b = Make(6, "b");
    b->SetParticipants({"a", "b", "c"});
    holders_ = {{0, "a"}, {1, "a"}, {2, "c"}};
    EXPECT_EQ(b->FairShare(), 2);
    EXPECT_TRUE(b->MayAcquire(Name(3), clock_.Steady()));
}

TEST_F(ShardBalancerTest, ANodeAtItsShareWaitsATickBeforeTakingAFreeShard) {
    auto a = Make(6, "a");
    a->SetParticipants({"a", "b", "c"});
    holders_ = {{0, "a"}, {1, "a"}, {2, "b"}, {3, "b"}};
    const auto free_since = clock_.Steady();
    EXPECT_FALSE(a->MayAcquire(Name(4), free_since));
    clock_.Advance(999ms);
    EXPECT_FALSE(a->MayAcquire(Name(4), free_since));
    clock_.Advance(1ms);
    // Nobody below its share took it in a round (c is dead but still counted): a takes it.
    EXPECT_TRUE(a->MayAcquire(Name(4), free_since));
}

TEST_F(ShardBalancerTest, ElectorsDecidingTogetherDoNotAllTakeAShard) {
    auto a = Make(6, "a");
    a->SetParticipants({"a", "b", "c"});
    const auto now = clock_.Steady();
    // A grant counts as a's own for a tick: a second elector deciding at the same moment finds
    // a ahead of b and c, and waits.
    EXPECT_TRUE(a->MayAcquire(Name(0), now));
    EXPECT_FALSE(a->MayAcquire(Name(1), now));
    // Once b and c lead one each, a (still within its share of 2) takes a second at once.
    holders_ = {{0, "a"}, {2, "b"}, {3, "c"}};
    EXPECT_TRUE(a->MayAcquire(Name(1), now));
    EXPECT_FALSE(a->MayAcquire(Name(4), now));  // the grant of shard 1 puts a at its share
}

TEST_F(ShardBalancerTest, TheMostLoadedNodeYieldsItsHighestShardAfterTheHold) {
    auto a = Make(6, "a");
    a->SetParticipants({"a", "b", "c"});
    holders_ = {{0, "a"}, {1, "a"}, {2, "a"}, {3, "a"}, {4, "b"}, {5, "b"}};
    EXPECT_FALSE(a->ShouldYield(Name(3)));  // over its share, but not for `hold` yet
    clock_.Advance(2s);
    EXPECT_FALSE(a->ShouldYield(Name(3)));
    clock_.Advance(1s);
    EXPECT_FALSE(a->ShouldYield(Name(0)));  // never shard 0 while it leads another
    EXPECT_FALSE(a->ShouldYield(Name(1)));
    EXPECT_TRUE(a->ShouldYield(Name(3)));
    holders_.erase(3);
    // One shard per hold: still over (3 > 2), but it just yielded.
    EXPECT_FALSE(a->ShouldYield(Name(2)));
    clock_.Advance(2s);
    EXPECT_FALSE(a->ShouldYield(Name(2)));
    clock_.Advance(1s);
    EXPECT_TRUE(a->ShouldYield(Name(2)));
}

TEST_F(ShardBalancerTest, OnlyTheFirstOfTheMostLoadedYields) {
    auto b = Make(6, "b");
    b->SetParticipants({"a", "b", "c"});
    holders_ = {{0, "a"}, {1, "a"}, {2, "a"}, {3, "b"}, {4, "b"}, {5, "b"}};
    EXPECT_FALSE(b->ShouldYield(Name(5)));
    clock_.Advance(10s);
    EXPECT_FALSE(b->ShouldYield(Name(5)));  // a, first by id among those with 3, yields first
    holders_.erase(2);
    // Now b is the most loaded, and has been over its share for the whole hold: it yields.
    EXPECT_FALSE(b->ShouldYield(Name(4)));
    EXPECT_TRUE(b->ShouldYield(Name(5)));
}

TEST_F(ShardBalancerTest, ABalancedSpreadMovesNothing) {
    auto a = Make(6, "a");
    a->SetParticipants({"a", "b", "c", "d"});
    holders_ = {{0, "a"}, {1, "a"}, {2, "b"}, {3, "b"}, {4, "c"}, {5, "d"}};
    for (int i = 0; i < 10; ++i) {
        EXPECT_FALSE(a->ShouldYield(Name(1)));
        clock_.Advance(1s);
    }
}

TEST_F(ShardBalancerTest, TwoMoreThanTheLeastLoadedYieldsEvenWithinTheShare) {
    // 4 nodes, 6 shards: share 2, yet 2-2-2-0 leaves d idle.
    auto a = Make(6, "a");
    a->SetParticipants({"a", "b", "c", "d"});
    holders_ = {{0, "a"}, {1, "a"}, {2, "b"}, {3, "b"}, {4, "c"}, {5, "c"}};
    EXPECT_FALSE(a->ShouldYield(Name(1)));
    clock_.Advance(3s);
    EXPECT_TRUE(a->ShouldYield(Name(1)));
}

TEST_F(ShardBalancerTest, ADisabledNodeTakesNothingAndYieldsEverything) {
    auto a = Make(3, "a");
    holders_ = {{0, "a"}};
    a->SetEnabled(false, "shard count differs");
    EXPECT_FALSE(a->MayAcquire(Name(1), clock_.Steady() - 10s));
    EXPECT_TRUE(a->ShouldYield(Name(0)));
    a->SetEnabled(true);
    EXPECT_FALSE(a->ShouldYield(Name(0)));
}

TEST_F(ShardBalancerTest, OneShardIsTakenWheneverFreeAndNeverYielded) {
    auto a = Make(1, "a");
    a->SetParticipants({"a", "b"});
    holders_ = {};
    EXPECT_TRUE(a->MayAcquire(Name(0), clock_.Steady()));
    holders_ = {{0, "a"}};
    clock_.Advance(60s);
    EXPECT_FALSE(a->ShouldYield(Name(0)));
}

}  // namespace
}  // namespace sched::trigger
