#include "sched/dispatch/master_waker.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>

#include "peer_route.hpp"
#include "sched/common/testing/io_thread.hpp"
#include "sched/db/testing/test_database.hpp"
#include "sched/lock/sql_lock_store.hpp"
#include "sched/protocol/master_wake.hpp"
#include "sched/store/registry.hpp"
#include "sched/store/shard.hpp"

namespace sched::dispatch {
namespace {

using http::testing::WaitFor;

// A node's wake route, answering that it woke one master.
class WakeRoute : public testing::PeerRoute {
  public:
    explicit WakeRoute(bool held = false)
        : PeerRoute(
              protocol::kMasterWakePath,
              [](const nlohmann::json&) {
                  return http::Response::Json({{"woken", 1}}, 202);
              },
              held) {}
    int wakes() const { return static_cast<int>(bodies().size()); }
};

class MasterWakerTest : public db::testing::MigratedDbTest {
  protected:
    void TearDown() override {
        waker_.reset();
        loop_.Stop();
        DbTest::TearDown();
    }

    // `database` empty: the test's database.
    MasterWaker& Waker(MasterWakerOptions options = {}, db::DatabaseProvider database = {}) {
        options.token = testing::kClusterToken;
        if (!database)
            database = [db = db().shared_from_this()] {
                return db;
            };
        waker_ = std::make_unique<MasterWaker>(loop_.io.get_executor(), http_, std::move(database), loop_.pool,
                                               std::move(options));
        return *waker_;
    }

    // A live trigger node at `address`.
    void Node(const std::string& id, const std::string& address) {
        ASSERT_TRUE(store::TriggerNodeRepository(db()).Heartbeat({.node_id = id, .address = address}).ok());
    }
    // `node` holds shard `shard`'s lease for `lease`.
    void Lead(int shard, const std::string& node, Micros lease = std::chrono::hours(1)) {
        lock::SqlLockStore locks(db().shared_from_this());
        auto held = locks.Insert(store::ShardLeaseName("master", shard), node, lease);
        ASSERT_TRUE(held.ok() && *held) << held.status().ToString();
    }
    // A live trigger node `id` at `address` that holds shard `shard`'s lease for `lease`.
    void LeaderNode(const std::string& id, const std::string& address, int shard,
                    Micros lease = std::chrono::hours(1)) {
        Node(id, address);
        Lead(shard, id, lease);
    }
    // Waits until `rounds` rounds have ended.
    bool Rounds(std::uint64_t rounds) {
        return WaitFor([&] { return waker_->Stats().rounds >= rounds; });
    }

    sched::testing::IoThread loop_{1, 2};
    http::HttpClient http_{loop_.io.get_executor()};
    std::unique_ptr<MasterWaker> waker_;
};

TEST_P(MasterWakerTest, EachLeaderIsWokenOncePerWake) {
    WakeRoute a, b, idle;
    LeaderNode("a", a.address(), 0);
    LeaderNode("b", b.address(), 1);
    Node("idle", idle.address());
    Lead(2, "a");  // two shards, one node: one POST wakes both its masters
    auto& waker = Waker();
    waker.Wake();
    ASSERT_TRUE(Rounds(1));
    EXPECT_EQ(a.wakes(), 1);
    EXPECT_EQ(b.wakes(), 1);
    EXPECT_EQ(idle.wakes(), 0);
    EXPECT_EQ(a.refused() + b.refused(), 0);

    // Within leaders-ttl: the same leaders, not read again.
    waker.Wake();
    ASSERT_TRUE(Rounds(2));
    EXPECT_EQ(a.wakes(), 2);
    EXPECT_EQ(b.wakes(), 2);
    EXPECT_EQ(waker.Stats().reads, 1u);
    EXPECT_EQ(waker.Stats().failed_posts, 0u);
}

TEST_P(MasterWakerTest, OwnMastersAreWokenWithoutHttp) {
    WakeRoute self, other;
    LeaderNode("self", self.address(), 0);
    LeaderNode("other", other.address(), 1);
    std::atomic<int> self_wakes{0};
    auto& waker = Waker({.self_node_id = "self", .wake_self = [&] {
                             return ++self_wakes;
                         }});
    waker.Wake();
    ASSERT_TRUE(Rounds(1));
    EXPECT_EQ(self_wakes.load(), 1);
    EXPECT_EQ(self.wakes(), 0);
    EXPECT_EQ(other.wakes(), 1);
    EXPECT_EQ(waker.Stats().posts, 1u);
}

TEST_P(MasterWakerTest, HolderOfAnExpiredLeaseIsNotWoken) {
    WakeRoute leader, expired;
    LeaderNode("leader", leader.address(), 0);
    LeaderNode("expired", expired.address(), 1, std::chrono::microseconds(1));
    lock::SqlLockStore locks(db().shared_from_this());
    ASSERT_TRUE(WaitFor([&] {
        auto row = locks.Read(store::ShardLeaseName("master", 1));
        return row.ok() && *row && (*row)->Available();
    }));
    auto& waker = Waker();
    waker.Wake();
    ASSERT_TRUE(Rounds(1));
    EXPECT_EQ(leader.wakes(), 1);
    EXPECT_EQ(expired.wakes(), 0);
}

TEST_P(MasterWakerTest, BurstCostsAtMostTwoRounds) {
    WakeRoute a(/*held=*/true), b;
    LeaderNode("a", a.address(), 0);
    LeaderNode("b", b.address(), 1);
    auto& waker = Waker({.timeout = std::chrono::seconds(30)});
    // The first call starts a round, which a's held answer keeps in flight; the 99 others, made
    // meanwhile, ask for one more.
    for (int i = 0; i < 100; ++i) waker.Wake();
    a.Release();
    ASSERT_TRUE(Rounds(2));
    EXPECT_EQ(waker.Stats().rounds, 2u);
    EXPECT_EQ(a.wakes(), 2);
    EXPECT_EQ(b.wakes(), 2);
    EXPECT_EQ(waker.Stats().reads, 1u);
}

TEST_P(MasterWakerTest, DeadLeaderNeitherThrowsNorHoldsTheOthers) {
    WakeRoute alive;
    LeaderNode("alive", alive.address(), 0);
    LeaderNode("dead", "127.0.0.1:" + std::to_string(testing::ClosedPort()), 1);
    auto& waker = Waker({.timeout = std::chrono::seconds(2)});
    waker.Wake();
    ASSERT_TRUE(Rounds(1));
    EXPECT_EQ(alive.wakes(), 1);
    EXPECT_EQ(waker.Stats().posts, 2u);
    EXPECT_EQ(waker.Stats().failed_posts, 1u);
    // The failure dropped the leaders read: the next round reads them again.
    waker.Wake();
    ASSERT_TRUE(Rounds(2));
    EXPECT_EQ(alive.wakes(), 2);
    EXPECT_EQ(waker.Stats().reads, 2u);
}

TEST_P(MasterWakerTest, NoDatabaseYetEndsTheRound) {
    WakeRoute a;
    LeaderNode("a", a.address(), 0);
    auto& waker = Waker({}, [] { return std::shared_ptr<db::Database>(); });
    waker.Wake();
    ASSERT_TRUE(Rounds(1));
    EXPECT_EQ(a.wakes(), 0);
    EXPECT_EQ(waker.Stats().posts, 0u);
}

SCHED_DB_TEST_SUITE(MasterWakerTest);

}  // namespace
}  // namespace sched::dispatch
