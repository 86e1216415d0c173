// Real electors on both backends, real clocks, in one process (each with its own pool, as
// separate nodes would have). The multi-process scenarios are in lock_cluster_test.cpp.

#include "sched/lock/lease_elector.hpp"

#include <atomic>
#include <thread>

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <gtest/gtest.h>

#include "lock_db_fixture.hpp"

namespace sched::lock {
namespace {

using namespace std::chrono_literals;
using testing::LockDbTest;
using testing::WaitFor;

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
    ASSERT_TRUE(WaitFor([&] { return a->elector.IsLeading() || b->elector.IsLeading(); }, 5s));
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
    ASSERT_TRUE(WaitFor([&] { return follower.elector.IsLeading(); }, 5s));
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
    ASSERT_TRUE(WaitFor([&] { return b.IsLeading(); }, 10s));
    EXPECT_LT(std::chrono::steady_clock::now() - nudged_at, 2s);
}

// The lock-out a stepped-back clock used to cause: the holder died, the wall clock was stepped back an hour, a new node
// (a new random node id) starts. Its lease row, written before the step, reads an hour ahead of
// the database clock. Written here directly, as the dead node's renew had left it.
TEST_P(LeaseElectorDbTest, ALeaseAnHourAheadOfTheDatabaseClockIsTakenOverWithinTtlPlusTick) {
    {
        auto dead = MakeNode("dead-node");
        dead->elector.Tick();
        ASSERT_TRUE(dead->elector.IsLeading());
    }  // destroyed without Resign: as if killed
    const std::string now(db().dialect().NowUs());
    const ElectionConfig config = Fast();
    const std::string ttl_us = std::to_string(config.ttl.count());
    ASSERT_TRUE(db().Run([&](soci::session& s) {
                        s << "UPDATE scheduler_lock SET update_time_us = " + now +
                                 " + 3600000000, lease_until_us = " + now + " + 3600000000 + " + ttl_us +
                                 " WHERE namespace = 'master'";
                    })
                    .ok());
    SqlLockStore probe(Pool(1));
    const LockRow before = **probe.Read("master");
    ASSERT_EQ(before.owner, "dead-node");
    ASSERT_GT(before.lease_until_us - before.db_now_us, 3'590'000'000);

    auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(1000);
    sink->set_pattern("%l %v");
    spdlog::default_logger()->sinks().push_back(sink);
    auto fresh = MakeNode("fresh-node");
    const auto started = std::chrono::steady_clock::now();
    fresh->Start();
    const bool led = WaitFor([&] { return fresh->elector.IsLeading(); }, 10s);
    const auto took = std::chrono::steady_clock::now() - started;
    fresh->driver.request_stop();
    fresh->driver.join();
    spdlog::default_logger()->sinks().pop_back();
    ASSERT_TRUE(led) << "the new node never led: the dead node's lease still looked valid";
    // ttl + tick (600 ms) plus scheduling slack on a busy 2-core machine.
    EXPECT_LT(took, config.ttl + config.tick + 1s);
    EXPECT_EQ(fresh->elector.Counters().clock_anomalies, 1u);
    EXPECT_EQ(fresh->elector.Counters().started_leading, 1u);
    const LockRow after = **probe.Read("master");
    EXPECT_GE(after.epoch, before.epoch + 1);  // a take-over (fenced); +1 more by the resign
    int anomalies = 0;
    for (const auto& line : sink->last_formatted()) {
        if (line.find("clock anomaly") == std::string::npos) continue;
        ++anomalies;
        EXPECT_EQ(line.rfind("warning ", 0), 0u) << line;
        EXPECT_NE(line.find("dead-node"), std::string::npos) << line;
        EXPECT_NE(line.find("the clock moved back"), std::string::npos) << line;
        EXPECT_TRUE(line.find("last written 3599.") != std::string::npos ||
                    line.find("last written 3600.") != std::string::npos)
            << "the amount: " << line;
    }
    EXPECT_EQ(anomalies, 1) << "logged once";
}

TEST_P(LeaseElectorDbTest, LastLeaderActivityAgesWhileADeadHoldersLeaseStillLooksValid) {
    ElectionConfig config;  // tick 1 s, ttl 3 s, margin 1 s
    SqlLockStore store(PoolWith(ElectionDbUrl(test_db().url(), config)));
    // A holder that died right after taking the lease: its row looks valid for 3 s.
    ASSERT_TRUE(store.Insert("master", "dead-node", config.ttl).ok());
    LeaseElector watcher(store, "watcher", config);
    EXPECT_FALSE(watcher.LastLeaderActivity().has_value());
    watcher.Tick();
    ASSERT_FALSE(watcher.IsLeading());
    auto first = watcher.LastLeaderActivity();
    ASSERT_TRUE(first.has_value()) << "a freshly written row is a sighting";
    std::this_thread::sleep_for(300ms);
    watcher.Tick();
    ASSERT_FALSE(watcher.IsLeading());
    // Nobody renewed: the sighting stays where the row's last write was.
    auto second = watcher.LastLeaderActivity();
    ASSERT_TRUE(second.has_value());
    EXPECT_LT(*second - *first, 100ms);
    EXPECT_GT(std::chrono::steady_clock::now() - *second, 300ms);
}

SCHED_DB_TEST_SUITE(LeaseElectorDbTest);

}  // namespace
}  // namespace sched::lock
