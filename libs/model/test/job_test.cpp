#include <gtest/gtest.h>

#include "sched/model/job.hpp"

namespace sched::model {
namespace {

TEST(ShardsPerFire, IsTheJobsShardTotalWithoutAskingForLiveInstances) {
    Job job;
    job.shard_total = 4;
    int asked = 0;
    EXPECT_EQ(ShardsPerFire(job, [&] { return ++asked, 9; }), 4);
    EXPECT_EQ(asked, 0);
}

TEST(ShardsPerFire, ABroadcastIsOneShardPerLiveInstance) {
    Job job;
    job.routing = Routing::kShardingBroadcast;
    job.shard_total = 4;
    EXPECT_EQ(ShardsPerFire(job, [] { return 3; }), 3);
}

TEST(ShardsPerFire, IsAtLeastOne) {
    Job job;
    job.routing = Routing::kShardingBroadcast;
    EXPECT_EQ(ShardsPerFire(job, [] { return 0; }), 1);
    job.routing = Routing::kRoundRobin;
    job.shard_total = 0;
    EXPECT_EQ(ShardsPerFire(job, [] { return 5; }), 1);
}

TEST(MayClaimEarly, OnlyPoliciesWhoseClaimJudgesNothingByItsTime) {
    Job job;
    for (const auto policy : {BlockStrategy::kSerial, BlockStrategy::kBufferAll, BlockStrategy::kAllowAll}) {
        job.block_strategy = policy;
        EXPECT_TRUE(MayClaimEarly(job)) << BlockStrategyName(policy);
    }
    for (const auto policy : {BlockStrategy::kDiscardLater, BlockStrategy::kCoverEarly, BlockStrategy::kSkip,
                              BlockStrategy::kBufferOne, BlockStrategy::kCancelOther, BlockStrategy::kTerminateOther}) {
        job.block_strategy = policy;
        EXPECT_FALSE(MayClaimEarly(job)) << BlockStrategyName(policy);
    }
    job.block_strategy = BlockStrategy::kSerial;
    job.concurrency_key = "payments";
    EXPECT_FALSE(MayClaimEarly(job)) << "a key's rate limit counts the claim's time";
}

}  // namespace
}  // namespace sched::model
