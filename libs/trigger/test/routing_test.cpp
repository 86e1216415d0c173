#include "sched/trigger/routing.hpp"

#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

namespace sched::trigger {
namespace {

const std::vector<std::string> kThree = {"10.0.0.3:80", "10.0.0.1:80", "10.0.0.2:80"};

// Records a dispatch of `job` to each of `addresses`, in order.
void RecordDispatches(Router& r, std::int64_t job, std::initializer_list<std::string_view> addresses) {
    for (const std::string_view address : addresses) r.RecordDispatch(job, std::string(address));
}

TEST(Routing, NamesRoundTrip) {
    for (const auto name : kRoutingNames.names()) {
        auto r = ParseRouting(name);
        ASSERT_TRUE(r.ok()) << name;
        EXPECT_EQ(RoutingName(*r), name);
    }
    EXPECT_EQ(kRoutingNames.names().size(), 10u);
    EXPECT_FALSE(ParseRouting("fastest").ok());
    EXPECT_EQ(ProbeFor(Routing::kFailover), Probe::kBeat);
    EXPECT_EQ(ProbeFor(Routing::kBusyOver), Probe::kIdleBeat);
    EXPECT_EQ(ProbeFor(Routing::kRandom), Probe::kNone);
}

TEST(Router, FirstLastFailoverUseAddressOrderAndReturnEveryInstance) {
    Router r(1);
    EXPECT_EQ(r.Order(Routing::kFirst, 1, kThree),
              (std::vector<std::string>{"10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80"}));
    EXPECT_EQ(r.Order(Routing::kLast, 1, kThree).front(), "10.0.0.3:80");
    EXPECT_EQ(r.Order(Routing::kFailover, 1, kThree).front(), "10.0.0.1:80");
    EXPECT_EQ(r.Order(Routing::kBusyOver, 1, kThree).size(), 3u);
    EXPECT_TRUE(r.Order(Routing::kRandom, 1, {}).empty());
}

TEST(Router, RoundRobinRotatesPerJob) {
    Router r(1);
    std::vector<std::string> firsts;
    for (int i = 0; i < 6; ++i) firsts.push_back(r.Order(Routing::kRoundRobin, 7, kThree).front());
    EXPECT_EQ(firsts, (std::vector<std::string>{"10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80", "10.0.0.1:80",
                                                "10.0.0.2:80", "10.0.0.3:80"}));
    // Another job has its own rotation.
    EXPECT_EQ(r.Order(Routing::kRoundRobin, 8, kThree).front(), "10.0.0.1:80");
}

TEST(Router, RandomIsAPermutationAndReachesEveryInstance) {
    Router r(42);
    std::set<std::string> seen;
    for (int i = 0; i < 100; ++i) {
        auto order = r.Order(Routing::kRandom, 1, kThree);
        EXPECT_EQ(std::set<std::string>(order.begin(), order.end()).size(), 3u);
        seen.insert(order.front());
    }
    EXPECT_EQ(seen.size(), 3u);
}

TEST(Router, ConsistentHashIsStickyAndMovesFewJobsWhenAnInstanceLeaves) {
    Router a(1);
    Router b(2);  // another node: must agree
    std::vector<std::string> five;
    for (int i = 1; i <= 5; ++i) five.push_back("10.0.0." + std::to_string(i) + ":80");
    std::map<std::string, int> load;
    int moved = 0;
    int on_removed = 0;
    for (std::int64_t job = 1; job <= 1000; ++job) {
        const auto owner = a.Order(Routing::kConsistentHash, job, five).front();
        EXPECT_EQ(owner, a.Order(Routing::kConsistentHash, job, five).front());
        EXPECT_EQ(owner, b.Order(Routing::kConsistentHash, job, five).front());
        ++load[owner];
        std::vector<std::string> four(five.begin(), five.end() - 1);  // 10.0.0.5 leaves
        const auto after = a.Order(Routing::kConsistentHash, job, four).front();
        if (owner == "10.0.0.5:80") {
            ++on_removed;
        } else if (after != owner) {
            ++moved;
        }
    }
    EXPECT_EQ(moved, 0) << "jobs on surviving instances must not move";
    for (const auto& [addr, n] : load) EXPECT_GT(n, 100) << addr << " is starved";  // ~200 each
    EXPECT_GT(on_removed, 100);
}

TEST(Router, LeastFrequentlyUsedPicksTheLeastUsed) {
    Router r(1);
    RecordDispatches(r, 1, {"10.0.0.1:80", "10.0.0.1:80", "10.0.0.3:80"});
    EXPECT_EQ(r.Order(Routing::kLeastFrequentlyUsed, 1, kThree),
              (std::vector<std::string>{"10.0.0.2:80", "10.0.0.3:80", "10.0.0.1:80"}));
    // Counts are per job.
    EXPECT_EQ(r.Order(Routing::kLeastFrequentlyUsed, 2, kThree).front(), "10.0.0.1:80");
}

TEST(Router, LeastRecentlyUsedPicksTheLongestIdle) {
    Router r(1);
    RecordDispatches(r, 1, {"10.0.0.2:80", "10.0.0.1:80", "10.0.0.3:80"});
    EXPECT_EQ(r.Order(Routing::kLeastRecentlyUsed, 1, kThree),
              (std::vector<std::string>{"10.0.0.2:80", "10.0.0.1:80", "10.0.0.3:80"}));
    r.RecordDispatch(1, "10.0.0.2:80");
    EXPECT_EQ(r.Order(Routing::kLeastRecentlyUsed, 1, kThree).front(), "10.0.0.1:80");
}

TEST(Router, ShardingBroadcastSendsShardIToTheIthInstance) {
    Router r(1);
    EXPECT_EQ(r.Order(Routing::kShardingBroadcast, 1, kThree, 0).front(), "10.0.0.1:80");
    EXPECT_EQ(r.Order(Routing::kShardingBroadcast, 1, kThree, 1).front(), "10.0.0.2:80");
    EXPECT_EQ(r.Order(Routing::kShardingBroadcast, 1, kThree, 2).front(), "10.0.0.3:80");
    EXPECT_EQ(r.Order(Routing::kShardingBroadcast, 1, kThree, 2).size(), 3u);  // fallbacks follow
}

TEST(StableHash, IsFixedAcrossBuilds) {
    // Pinned values: two nodes built differently must place jobs on the same ring positions.
    EXPECT_EQ(StableHash(""), StableHash(""));
    EXPECT_NE(StableHash("a:1"), StableHash("a:2"));
    EXPECT_EQ(StableHash("job:1"), 9007944237827326335ULL);
}

}  // namespace
}  // namespace sched::trigger
