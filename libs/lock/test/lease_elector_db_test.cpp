// Real electors on both backends, real clocks, in one process (each with its own pool, as
// separate nodes would have). The multi-process scenarios are in lock_cluster_test.cpp.

#include "sched/lock/lease_elector.hpp"

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "lock_db_fixture.hpp"

namespace sched::lock {
namespace {

using namespace std::chrono_literals;
using testing::LockDbTest;
using testing::WaitUntil;

class LeaseElectorDbTest : public LockDbTest {
  protected:
    static ElectionConfig Fast() {
        ElectionConfig c;
        c.tick = 100ms;
        c.ttl = 500ms;
        c.margin = 150ms;
        return c;
    }

    struct Node {
        Node(std::shared_ptr<db::Database> db, const std::string& id)
            : store(std::move(db)), elector(store, id, Fast()) {}
        SqlLockStore store;
        LeaseElector elector;
        std::jthread driver;
        void Start() {
            driver = std::jthread([this](const std::stop_token& stop) { elector.Run(stop); });
        }
    };

    std::unique_ptr<Node> MakeNode(const std::string& id) {
        return std::make_unique<Node>(PoolWith(ElectionDbUrl(test_db().url(), Fast())), id);
    }
};

TEST_P(LeaseElectorDbTest, IdleLeaderCostsOneStatementPerTick) {
    auto a = MakeNode("a");
    a->elector.Tick();
    ASSERT_TRUE(a->elector.IsLeading());
    const auto before = a->store.statements();
    for (int i = 0; i < 5; ++i) a->elector.Tick();
    EXPECT_EQ(a->store.statements() - before, 5u);
    EXPECT_EQ(a->elector.Counters().renews, 5u);
}

TEST_P(LeaseElectorDbTest, TwoNodesNeverLeadAtOnceAndResignHandsOverWithinATick) {
    auto a = MakeNode("a");
    auto b = MakeNode("b");
    a->Start();
    b->Start();
    ASSERT_TRUE(WaitUntil([&] { return a->elector.IsLeading() || b->elector.IsLeading(); }, 5s));
    const auto until = std::chrono::steady_clock::now() + 1500ms;  // three TTLs of renewals
    int both = 0;
    while (std::chrono::steady_clock::now() < until) {
        if (a->elector.IsLeading() && b->elector.IsLeading()) ++both;
        std::this_thread::sleep_for(1ms);
    }
    EXPECT_EQ(both, 0);
    Node& leader = a->elector.IsLeading() ? *a : *b;
    Node& follower = a->elector.IsLeading() ? *b : *a;
    ASSERT_TRUE(leader.elector.IsLeading());
    const std::int64_t old_epoch = leader.elector.CurrentLeadership()->epoch;
    const auto stop_at = std::chrono::steady_clock::now();
    leader.driver.request_stop();
    leader.driver.join();  // Run() resigns: stops leading, then releases the row
    EXPECT_FALSE(leader.elector.IsLeading());
    ASSERT_TRUE(WaitUntil([&] { return follower.elector.IsLeading(); }, 5s));
    // One tick (100 ms) plus up to 1 s of scheduling slack on a busy 2-core machine. The bound
    // alone cannot tell a release from an expiry (TTL 500 ms), the epoch can: a release adds
    // one and the take-over another, an expiry take-over only one.
    EXPECT_LT(std::chrono::steady_clock::now() - stop_at, 1100ms);
    EXPECT_EQ(follower.elector.CurrentLeadership()->epoch, old_epoch + 2);
    EXPECT_EQ(leader.elector.Counters().self_demotions, 0u);
}

TEST_P(LeaseElectorDbTest, ANudgedFollowerCompetesAtOnceInsteadOfAtItsNextTick) {
    // A slow tick (5 s) makes the difference visible: without the nudge the follower would take
    // the released lease up to 5 s later.
    ElectionConfig slow;
    slow.tick = 5s;
    slow.ttl = 12s;
    slow.margin = 1s;
    auto db = PoolWith(ElectionDbUrl(test_db().url(), slow));
    SqlLockStore store_a(db);
    SqlLockStore store_b(db);
    LeaseElector a(store_a, "a", slow);
    LeaseElector b(store_b, "b", slow);
    a.Tick();
    ASSERT_TRUE(a.IsLeading());
    std::jthread follower([&](const std::stop_token& stop) { b.Run(stop); });
    std::this_thread::sleep_for(300ms);  // b's first round found the lease held; it now waits 5 s
    ASSERT_FALSE(b.IsLeading());
    ASSERT_TRUE(a.Resign().ok());
    const auto nudged_at = std::chrono::steady_clock::now();
    b.Nudge();
    ASSERT_TRUE(WaitUntil([&] { return b.IsLeading(); }, 10s));
    EXPECT_LT(std::chrono::steady_clock::now() - nudged_at, 2s);
}

SCHED_DB_TEST_SUITE(LeaseElectorDbTest);

}  // namespace
}  // namespace sched::lock
