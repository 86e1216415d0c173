#include "sched/store/registry.hpp"

#include <thread>

#include "store_test_base.hpp"

namespace sched::store {
namespace {

using namespace std::chrono_literals;

class RegistryTest : public StoreTest {};

TEST_P(RegistryTest, ExecutorHeartbeatRegistersThenRefreshes) {
    ExecutorRepository executors(db());
    ExecutorInstance e{.app = "billing", .address = "127.0.0.1:9001", .handlers = {"echo", "report"}, .capacity = 4};
    ASSERT_TRUE(executors.Heartbeat(e).ok());
    auto first = executors.List("billing");
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    ASSERT_EQ(first->size(), 1u);
    EXPECT_EQ(first->front().handlers, (std::vector<std::string>{"echo", "report"}));
    EXPECT_EQ(first->front().capacity, 4);
    const auto registered = first->front().registered_at_ms;

    std::this_thread::sleep_for(5ms);
    e.handlers = {"echo"};
    e.running = 3;
    ASSERT_TRUE(executors.Heartbeat(e).ok());
    auto second = executors.List("billing");
    ASSERT_EQ(second->size(), 1u);
    EXPECT_EQ(second->front().handlers, std::vector<std::string>{"echo"});
    EXPECT_EQ(second->front().running, 3);
    EXPECT_EQ(second->front().registered_at_ms, registered);
    EXPECT_GT(second->front().last_heartbeat_ms, registered);
}

TEST_P(RegistryTest, LivenessUsesTheHeartbeatAge) {
    ExecutorRepository executors(db());
    ASSERT_TRUE(executors.Heartbeat({.app = "a", .address = "h:1", .handlers = {}}).ok());
    ASSERT_TRUE(executors.Heartbeat({.app = "a", .address = "h:2", .handlers = {}}).ok());
    ASSERT_TRUE(executors.Heartbeat({.app = "b", .address = "h:3", .handlers = {}}).ok());
    // Age one instance by moving its heartbeat into the past.
    ASSERT_TRUE(db().Run([](soci::session& s) {
                        s << "UPDATE executor_instance SET last_heartbeat_ms = last_heartbeat_ms - 60000 "
                             "WHERE address = 'h:2'";
                    })
                    .ok());
    auto counted =
        db().Run([&](soci::session& s) { return ExecutorRepository::CountLive(s, db().dialect(), "a", 30000); });
    EXPECT_EQ(*counted, 1);
    auto live = executors.ListLive("a", 30000);
    ASSERT_TRUE(live.ok()) << live.status().ToString();
    ASSERT_EQ(live->size(), 1u);
    EXPECT_EQ(live->front().address, "h:1");
    EXPECT_EQ(executors.List()->size(), 3u);
}

TEST_P(RegistryTest, DeregisterRemovesOnlyThatInstance) {
    ExecutorRepository executors(db());
    ASSERT_TRUE(executors.Heartbeat({.app = "a", .address = "h:1"}).ok());
    ASSERT_TRUE(executors.Heartbeat({.app = "a", .address = "h:2"}).ok());
    ASSERT_TRUE(executors.Deregister("a", "h:1").ok());
    EXPECT_EQ(executors.Deregister("a", "h:1").code(), Code::kNotFound);
    auto rest = executors.List("a");
    ASSERT_EQ(rest->size(), 1u);
    EXPECT_EQ(rest->front().address, "h:2");
}

TEST_P(RegistryTest, TriggerNodesHeartbeatAndState) {
    TriggerNodeRepository nodes(db());
    ASSERT_TRUE(nodes.Heartbeat({.node_id = "n1", .address = "127.0.0.1:7001", .capacity = 100}).ok());
    ASSERT_TRUE(nodes.Heartbeat({.node_id = "n2", .address = "127.0.0.1:7002", .capacity = 50}).ok());
    auto all = nodes.List();
    ASSERT_TRUE(all.ok()) << all.status().ToString();
    ASSERT_EQ(all->size(), 2u);
    const auto started = all->front().started_at_ms;
    ASSERT_TRUE(nodes.SetState("n2", "stopped").ok());
    EXPECT_EQ(nodes.SetState("n9", "stopped").code(), Code::kNotFound);
    auto live = nodes.ListLive(10000);
    ASSERT_EQ(live->size(), 1u);
    EXPECT_EQ(live->front().node_id, "n1");
    std::this_thread::sleep_for(5ms);
    ASSERT_TRUE(nodes.Heartbeat({.node_id = "n1", .address = "127.0.0.1:7001", .capacity = 100}).ok());
    EXPECT_EQ(nodes.List()->front().started_at_ms, started);
}

SCHED_DB_TEST_SUITE(RegistryTest);

}  // namespace
}  // namespace sched::store
