// Executors and the cluster view over real HTTP.

#include "sched/lock/sql_lock_store.hpp"
#include "sched/store/registry.hpp"
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

    // Released (a graceful stop): no leader, the epoch moved on.
    ASSERT_TRUE(locks.Release((*held)->id, "node-a", (*held)->epoch).ok());
    const auto released = Body(Get("/api/v1/cluster"));
    EXPECT_TRUE(released["leader"].is_null());
    EXPECT_EQ(released["epoch"], (*held)->epoch + 1);
    EXPECT_TRUE(released["lease_remaining_ms"].is_null());
    EXPECT_FALSE(released["nodes"][0]["leader"].get<bool>());
}

SCHED_DB_TEST_SUITE(ClusterApiTest);

}  // namespace
}  // namespace sched::web::testing
