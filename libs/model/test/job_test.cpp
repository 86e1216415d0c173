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

}  // namespace
}  // namespace sched::model
