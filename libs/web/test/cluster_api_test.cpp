// Executors and the cluster view over real HTTP.

#include "sched/lock/sql_lock_store.hpp"
#include "sched/store/registry.hpp"
#include "sched/store/shard.hpp"
#include "web_test_base.hpp"

namespace sched::web::testing {
namespace {

class ClusterApiTest : public WebApiTest {
  protected:
    // Makes a heartbeat look `age_ms` old by the DB clock.
    void Age(const std::string& table, const std::string& where, std::int64_t age_ms) {
        const auto then = DbNowMs() - age_ms;
        ASSERT_TRUE(db().Run([&](soci::session& s) {
                            s << "UPDATE " + table + " SET last_heartbeat_ms = :t WHERE " + where, soci::use(then);
                        })
                        .ok());
    }
};

TEST_P(ClusterApiTest, ExecutorsByAppWithLivenessAndHandlers) {
    store::ExecutorRepository executors(db());
    ASSERT_TRUE(
        executors
            .Heartbeat(
                {.app = "demo", .address = "10.0.0.1:9999", .handlers = {"echo", "sleep"}, .capacity = 8, .running = 2})
            .ok());
    ASSERT_TRUE(executors.Heartbeat({.app = "demo", .address = "10.0.0.2:9999", .handlers = {"echo", "fail"}}).ok());
    ASSERT_TRUE(executors.Heartbeat({.app = "billing", .address = "10.0.0.3:9999", .handlers = {"invoice"}}).ok());
    Age("executor_instance", "address = '10.0.0.2:9999'", 60'000);  // older than executor-ttl (30 s)

    auto r = Get("/api/v1/executors");
    ASSERT_EQ(r.status, 200) << r.body;
    const auto body = Body(r);
    ASSERT_EQ(body["items"].size(), 3u);
    ASSERT_EQ(body["apps"].size(), 2u);
    const auto& billing = body["apps"][0];
    const auto& demo = body["apps"][1];
    EXPECT_EQ(billing["app"], "billing");
    EXPECT_EQ(demo["app"], "demo");
    EXPECT_EQ(demo["instances"], 2);
    EXPECT_EQ(demo["alive_instances"], 1);
    EXPECT_EQ(demo["handlers"], nlohmann::json({"echo", "sleep"})) << "handlers of live instances only";
    for (const auto& e : body["items"]) {
        EXPECT_EQ(e["alive"].get<bool>(), e["address"] != "10.0.0.2:9999") << e;
        if (e["address"] == "10.0.0.1:9999") {
            EXPECT_EQ(e["capacity"], 8);
            EXPECT_EQ(e["running"], 2);
        }
    }
    EXPECT_EQ(Body(Get("/api/v1/executors?app=billing"))["items"].size(), 1u);
    EXPECT_EQ(ErrorField(Get("/api/v1/executors?name=x")), "name");
}

TEST_P(ClusterApiTest, ClusterShowsNodesTheLeaderItsEpochAndLeaseAge) {
    auto empty = Get("/api/v1/cluster");
    ASSERT_EQ(empty.status, 200) << empty.body;
    EXPECT_TRUE(Body(empty)["leader"].is_null());
    EXPECT_EQ(Body(empty)["epoch"], 0);
    EXPECT_TRUE(Body(empty)["nodes"].empty());
    // No shard count recorded yet: one shard, whose row does not exist.
    EXPECT_EQ(Body(empty)["shard_count"], 1);
    ASSERT_EQ(Body(empty)["shards"].size(), 1u);
    EXPECT_EQ(Body(empty)["shards"][0]["lease"], "master");
    EXPECT_TRUE(Body(empty)["shards"][0]["leader"].is_null());
    EXPECT_TRUE(Body(empty)["shards"][0]["held_since"].is_null());

    store::TriggerNodeRepository nodes(db());
    ASSERT_TRUE(nodes.Heartbeat({.node_id = "node-a", .address = "10.0.0.1:7070", .capacity = 1000}).ok());
    ASSERT_TRUE(nodes.Heartbeat({.node_id = "node-b", .address = "10.0.0.2:7070", .capacity = 1000}).ok());
    Age("trigger_node", "node_id = 'node-b'", 60'000);
    lock::SqlLockStore locks(test_db().OpenAnother());
    auto held = locks.Insert("master", "node-a", std::chrono::seconds(30));
    ASSERT_TRUE(held.ok() && held->has_value());

    auto r = Get("/api/v1/cluster");
    ASSERT_EQ(r.status, 200) << r.body;
    const auto cluster = Body(r);
    EXPECT_EQ(cluster["leader"], "node-a");
    EXPECT_EQ(cluster["epoch"], (*held)->epoch);
    EXPECT_GE(cluster["lease_age_ms"].get<std::int64_t>(), 0);
    EXPECT_LT(cluster["lease_age_ms"].get<std::int64_t>(), 10'000);
    EXPECT_GT(cluster["lease_remaining_ms"].get<std::int64_t>(), 20'000);
    EXPECT_LE(cluster["lease_remaining_ms"].get<std::int64_t>(), 30'000);
    ASSERT_EQ(cluster["nodes"].size(), 2u);
    EXPECT_EQ(cluster["nodes"][0]["node_id"], "node-a");
    EXPECT_TRUE(cluster["nodes"][0]["alive"].get<bool>());
    EXPECT_TRUE(cluster["nodes"][0]["leader"].get<bool>());
    EXPECT_FALSE(cluster["nodes"][1]["alive"].get<bool>());
    EXPECT_FALSE(cluster["nodes"][1]["leader"].get<bool>());
    EXPECT_GE(cluster["nodes"][1]["heartbeat_age_ms"].get<std::int64_t>(), 60'000);
    EXPECT_EQ(cluster["nodes"][0]["shards_led"], nlohmann::json({0}));
    EXPECT_EQ(cluster["nodes"][1]["shards_led"], nlohmann::json::array());
    EXPECT_EQ(cluster["shard_count"], 1);
    ASSERT_EQ(cluster["shards"].size(), 1u);
    EXPECT_EQ(cluster["shards"][0]["leader"], "node-a");
    EXPECT_EQ(cluster["shards"][0]["epoch"], (*held)->epoch);

    // Released (a graceful stop): no leader, the epoch moved on.
    ASSERT_TRUE(locks.Release((*held)->id, "node-a", (*held)->epoch).ok());
    const auto released = Body(Get("/api/v1/cluster"));
    EXPECT_TRUE(released["leader"].is_null());
    EXPECT_EQ(released["epoch"], (*held)->epoch + 1);
    EXPECT_TRUE(released["lease_remaining_ms"].is_null());
    EXPECT_FALSE(released["nodes"][0]["leader"].get<bool>());
}

// A cluster split into three shards: each shard's lease row answers for itself, and each node
// lists the shards it leads.
TEST_P(ClusterApiTest, ClusterShowsEveryShardItsLeaderEpochAndSinceWhen) {
    ASSERT_TRUE(db().Run([&](soci::session& s) { store::WriteShardCount(s, 3, DbNowMs()); }).ok());
    store::TriggerNodeRepository nodes(db());
    ASSERT_TRUE(nodes.Heartbeat({.node_id = "node-a", .address = "10.0.0.1:7070", .capacity = 1000}).ok());
    ASSERT_TRUE(nodes.Heartbeat({.node_id = "node-b", .address = "10.0.0.2:7070", .capacity = 1000}).ok());
    lock::SqlLockStore locks(test_db().OpenAnother());
    const std::int64_t before_ms = DbNowMs();
    auto shard0 = locks.Insert(store::ShardLeaseName("master", 0), "node-a", std::chrono::seconds(30));
    auto shard1 = locks.Insert(store::ShardLeaseName("master", 1), "node-b", std::chrono::seconds(30));
    auto shard2 = locks.Insert(store::ShardLeaseName("master", 2), "node-b", std::chrono::seconds(30));
    ASSERT_TRUE(shard0.ok() && shard0->has_value());
    ASSERT_TRUE(shard1.ok() && shard1->has_value());
    ASSERT_TRUE(shard2.ok() && shard2->has_value());
    // Shard 1 changes hands (released: epoch 2, taken over: epoch 3), shard 2 is given back
    // (free, epoch 2).
    ASSERT_TRUE(*locks.Release((*shard1)->id, "node-b", (*shard1)->epoch));
    auto seen = locks.Read("master/1");
    ASSERT_TRUE(seen.ok() && seen->has_value());
    auto taken = locks.TakeOver(**seen, "node-a", std::chrono::seconds(20), {});
    ASSERT_TRUE(taken.ok() && *taken);
    ASSERT_TRUE(*locks.Release((*shard2)->id, "node-b", (*shard2)->epoch));
    // A row of a shard beyond the count (left by a larger count) is not shown.
    ASSERT_TRUE(locks.Insert("master/3", "node-b", std::chrono::seconds(30)).ok());
    const std::int64_t after_ms = DbNowMs();

    auto r = Get("/api/v1/cluster");
    ASSERT_EQ(r.status, 200) << r.body;
    const auto cluster = Body(r);
    EXPECT_EQ(cluster["leader"], "node-a");
    EXPECT_EQ(cluster["shard_count"], 3);
    const auto& shards = cluster["shards"];
    ASSERT_EQ(shards.size(), 3u) << shards;
    for (int i = 0; i < 3; ++i) EXPECT_EQ(shards[i]["shard"], i);
    EXPECT_EQ(shards[0]["lease"], "master");
    EXPECT_EQ(shards[1]["lease"], "master/1");
    EXPECT_EQ(shards[2]["lease"], "master/2");

    EXPECT_EQ(shards[0]["leader"], "node-a");
    EXPECT_EQ(shards[0]["epoch"], 1);
    EXPECT_GE(shards[0]["held_since"].get<std::int64_t>(), before_ms - 1);
    EXPECT_LE(shards[0]["held_since"].get<std::int64_t>(), after_ms);
    EXPECT_GT(shards[0]["lease_remaining_ms"].get<std::int64_t>(), 20'000);

    EXPECT_EQ(shards[1]["leader"], "node-a");
    EXPECT_EQ(shards[1]["epoch"], 3);
    EXPECT_GE(shards[1]["held_since"].get<std::int64_t>(), shards[0]["held_since"].get<std::int64_t>());
    EXPECT_LE(shards[1]["held_since"].get<std::int64_t>(), after_ms);
    EXPECT_LE(shards[1]["lease_remaining_ms"].get<std::int64_t>(), 20'000);

    EXPECT_TRUE(shards[2]["leader"].is_null());
    EXPECT_EQ(shards[2]["epoch"], 2);
    EXPECT_TRUE(shards[2]["held_since"].is_null());
    EXPECT_TRUE(shards[2]["lease_remaining_ms"].is_null());

    ASSERT_EQ(cluster["nodes"].size(), 2u);
    EXPECT_EQ(cluster["nodes"][0]["node_id"], "node-a");
    EXPECT_EQ(cluster["nodes"][0]["shards_led"], nlohmann::json({0, 1}));
    EXPECT_TRUE(cluster["nodes"][0]["leader"].get<bool>());
    EXPECT_EQ(cluster["nodes"][1]["shards_led"], nlohmann::json::array());
    EXPECT_FALSE(cluster["nodes"][1]["leader"].get<bool>());
}

SCHED_DB_TEST_SUITE(ClusterApiTest);

}  // namespace
}  // namespace sched::web::testing
