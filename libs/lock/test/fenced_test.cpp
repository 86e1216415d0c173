// RunFenced on both backends: the lease check, and that a take-over waits for a fenced commit.

#include "sched/lock/fenced.hpp"

#include <atomic>
#include <future>
#include <thread>

#include <gtest/gtest.h>

#include "lock_db_fixture.hpp"

namespace sched::lock {
namespace {

using namespace std::chrono_literals;
using testing::LockDbTest;
using testing::WaitFor;

class FencedTest : public LockDbTest {
  protected:
    void SetUpDatabase() override {
        ASSERT_TRUE(db().Run([](soci::session& s) { s << "CREATE TABLE fenced_w (v INT)"; }).ok());
        store_ = std::make_unique<SqlLockStore>(Pool());
    }

    Holding Acquire(const std::string& owner, Micros lease) {
        auto h = TryAcquireOnce(*store_, "master", owner, lease);
        EXPECT_TRUE(h.ok() && h->has_value()) << h.status().ToString();
        return h.ok() && h->has_value() ? **h : Holding{};
    }

    int Rows() {
        auto n = SelectValue<int>("SELECT COUNT(*) FROM fenced_w");
        return n.ok() ? *n : -1;
    }

    static Status Write(soci::session& s) {
        s << "INSERT INTO fenced_w (v) VALUES (1)";
        return Status::Ok();
    }

    std::unique_ptr<SqlLockStore> store_;
};

TEST_P(FencedTest, RunsAndCommitsWhileTheLeaseIsHeldAtThatEpoch) {
    const Holding h = Acquire("node-a", 10s);
    auto pool = Pool(1);
    Fence fence(pool, "master", "node-a");
    EXPECT_TRUE(fence.RunFenced(h.epoch, Write).ok());
    if (IsMySql()) {
        // The session goes back to the pool with the server's default idle timeout.
        auto timeout = pool->Run([](soci::session& session) {
            long long t = -1;
            session << "SELECT @@session.idle_transaction_timeout", soci::into(t);
            return t;
        });
        ASSERT_TRUE(timeout.ok()) << timeout.status().ToString();
        EXPECT_EQ(*timeout, 0);
    }
    auto value = fence.RunFenced(h.epoch, [](soci::session& s) {
        int c = 0;
        s << "SELECT COUNT(*) FROM fenced_w", soci::into(c);
        return c;
    });
    ASSERT_TRUE(value.ok()) << value.status().ToString();
    EXPECT_EQ(*value, 1);
}

// MariaDB: the session keeps its idle timeout between fenced transactions, so the second one
// sends no SET (the session's SET count does not move) and still runs under the timeout.
TEST_P(FencedTest, ConsecutiveFencedTransactionsSetTheIdleTimeoutOnce) {
    if (!IsMySql()) GTEST_SKIP() << "idle_transaction_timeout is MariaDB's";
    const Holding h = Acquire("node-a", 10s);
    Fence fence(Pool(1), "master", "node-a");
    struct Seen {
        long long sets = -1;
        long long timeout = -1;
    };
    const auto look = [](soci::session& s) {
        Seen seen;
        std::string name;
        s << "SHOW SESSION STATUS LIKE 'Com_set_option'", soci::into(name), soci::into(seen.sets);
        s << "SELECT @@session.idle_transaction_timeout", soci::into(seen.timeout);
        return seen;
    };
    auto first = fence.RunFenced(h.epoch, look);
    auto second = fence.RunFenced(h.epoch, look);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    ASSERT_TRUE(second.ok()) << second.status().ToString();
    EXPECT_EQ(first->timeout, 1);
    EXPECT_EQ(second->timeout, 1);
    EXPECT_EQ(second->sets, first->sets) << "the second fenced transaction set its idle timeout again";
}

TEST_P(FencedTest, WrongEpochWrongOwnerReleasedOrExpiredIsLeaseLostAndFnDoesNotRun) {
    const Holding h = Acquire("node-a", 300ms);
    bool ran = false;
    const auto fn = [&](soci::session& s) {
        ran = true;
        return Write(s);
    };
    Fence mine(Pool(), "master", "node-a");
    Fence theirs(Pool(), "master", "node-b");
    EXPECT_TRUE(IsLeaseLost(mine.RunFenced(h.epoch + 1, fn)));
    EXPECT_TRUE(IsLeaseLost(theirs.RunFenced(h.epoch, fn)));
    EXPECT_TRUE(IsLeaseLost(Fence(Pool(), "nope", "node-a").RunFenced(h.epoch, fn)));
    ASSERT_TRUE(WaitFor([&] { return (*store_->Read("master"))->Available(); }, 5s));
    const Status expired = mine.RunFenced(h.epoch, fn);  // expired, not yet taken over
    EXPECT_TRUE(IsLeaseLost(expired)) << expired.ToString();
    EXPECT_FALSE(ran);
    EXPECT_EQ(Rows(), 0);
}

// After a transaction at an epoch committed, the next at that epoch skips the first check: one
// whose lease expired meanwhile runs fn, and the final check rolls it back; the one after it
// checks first again and does not run fn.
TEST_P(FencedTest, AfterACommitTheFirstCheckIsSkippedAndTheFinalOneStillRefusesALostLease) {
    const Holding h = Acquire("node-a", 300ms);
    Fence fence(Pool(), "master", "node-a");
    ASSERT_TRUE(fence.RunFenced(h.epoch, Write).ok());
    ASSERT_EQ(Rows(), 1);
    ASSERT_TRUE(WaitFor([&] { return (*store_->Read("master"))->Available(); }, 5s));
    int runs = 0;
    const auto fn = [&](soci::session& s) {
        ++runs;
        return Write(s);
    };
    const Status expired = fence.RunFenced(h.epoch, fn);
    EXPECT_TRUE(IsLeaseLost(expired)) << expired.ToString();
    EXPECT_EQ(runs, 1) << "the first check was not skipped";
    EXPECT_EQ(Rows(), 1) << "a write after the lease expired landed";
    EXPECT_TRUE(IsLeaseLost(fence.RunFenced(h.epoch, fn)));
    EXPECT_EQ(runs, 1) << "after a failed check, the first check runs again";
    EXPECT_EQ(Rows(), 1);
}

TEST_P(FencedTest, FnErrorRollsBack) {
    const Holding h = Acquire("node-a", 10s);
    Fence fence(Pool(), "master", "node-a");
    const Status s = fence.RunFenced(h.epoch, [](soci::session& session) -> Status {
        (void)Write(session);
        return Aborted("changed my mind");
    });
    EXPECT_EQ(s.code(), Code::kAborted);
    EXPECT_FALSE(IsLeaseLost(s));
    EXPECT_EQ(Rows(), 0);
}

TEST_P(FencedTest, ATransactionThatOutlivesItsLeaseLandsNothingAndTheTakeOverProceeds) {
    const Holding h = Acquire("node-a", 400ms);
    Fence fence(Pool(), "master", "node-a");
    std::atomic<bool> inside{false};
    // The old leader's transaction passes the first check, then outlives its own lease (a
    // pause) before it writes and commits. The final check (under the shared lock, just before
    // COMMIT) must refuse it: on MariaDB the take-over may already have happened meanwhile, on
    // SQLite it waits for the transaction's end and the check sees the lease expired.
    auto writer = std::async(std::launch::async, [&] {
        return fence.RunFenced(h.epoch, [&](soci::session& session) {
            inside = true;
            std::this_thread::sleep_for(900ms);
            return Write(session);
        });
    });
    ASSERT_TRUE(WaitFor([&] { return inside.load(); }, 5s));
    SqlLockStore other(Pool());
    std::optional<LockRow> seen;
    // Poll the way a follower does: read, and take over once the row looks expired.
    ASSERT_TRUE(WaitFor(
        [&] {
            auto attempt = TryAcquireOnce(other, "master", "node-b", 10s, &seen);
            return attempt.ok() && attempt->has_value();
        },
        10s));
    const Status s = writer.get();
    EXPECT_TRUE(IsLeaseLost(s)) << s.ToString();
    EXPECT_EQ(Rows(), 0) << "a write of the old term landed";
    EXPECT_TRUE(IsLeaseLost(fence.RunFenced(h.epoch, Write)));
    EXPECT_EQ(Rows(), 0);
}

TEST_P(FencedTest, AWriteDuringWhichTheLeaseChangesHandsIsRolledBack) {
    const Holding h = Acquire("node-a", 10s);
    Fence fence(Pool(), "master", "node-a");
    SqlLockStore other(Pool());
    // The lease is released and taken by node-b while fn runs (possible on MariaDB, where the
    // row is not locked during fn; on SQLite the same sequence runs on the writer's session).
    const Status s = fence.RunFenced(h.epoch, [&](soci::session& session) -> Status {
        Status written = Write(session);
        if (!written.ok()) return written;
        if (IsMySql()) {
            auto released = other.Release(h.id, "node-a", h.epoch);
            EXPECT_TRUE(released.ok() && *released);
            auto taken = TryAcquireOnce(other, "master", "node-b", 10s);
            EXPECT_TRUE(taken.ok() && taken->has_value());
        } else {
            session << "UPDATE scheduler_lock SET owner = 'node-b', epoch = epoch + 2 WHERE namespace = 'master'";
        }
        return Status::Ok();
    });
    EXPECT_TRUE(IsLeaseLost(s)) << s.ToString();
    EXPECT_EQ(Rows(), 0);
}

TEST_P(FencedTest, MariaDbAbortsAFencedTransactionLeftIdleSoATakeOverProceeds) {
    if (!IsMySql()) GTEST_SKIP() << "SQLite has no server to abort a paused writer (see fenced.hpp)";
    const Holding h = Acquire("node-a", 300ms);
    Fence fence(Pool(), "master", "node-a");  // idle_transaction_timeout 1 s
    std::atomic<bool> inside{false};
    auto writer = std::async(std::launch::async, [&] {
        return fence.RunFenced(h.epoch, [&](soci::session& session) {
            inside = true;
            std::this_thread::sleep_for(2500ms);  // idle inside the transaction, like a SIGSTOPped process
            return Write(session);
        });
    });
    ASSERT_TRUE(WaitFor([&] { return inside.load(); }, 5s));
    const auto start = std::chrono::steady_clock::now();
    SqlLockStore other(Pool());
    ASSERT_TRUE(WaitFor(
        [&] {
            auto attempt = TryAcquireOnce(other, "master", "node-b", 10s);
            return attempt.ok() && attempt->has_value();
        },
        10s));
    // Taken while the writer still sleeps: the server ended its transaction after ~1 s idle.
    EXPECT_LT(std::chrono::steady_clock::now() - start, 2400ms);
    const Status s = writer.get();
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(Rows(), 0);
}

// The claim's epoch with several shard leases: the sum of the rows `master` and `master/%`, which
// grows with every change of holder of any of them, and ignores rows of other names.
TEST_P(FencedTest, TheEpochSumCoversEveryShardRowAndGrowsWithEachTakeOver) {
    const auto sum = [&] {
        auto read = db().Run([](soci::session& s) { return ReadEpochSum(s, "master", "master/%"); });
        EXPECT_TRUE(read.ok()) << read.status().ToString();
        return read.ok() ? *read : std::optional<std::int64_t>(-1);
    };
    EXPECT_EQ(sum(), std::nullopt) << "no lease row yet";
    Acquire("node-a", 10s);  // master: epoch 1
    EXPECT_EQ(sum(), 1);
    auto other = TryAcquireOnce(*store_, "master/2", "node-b", 10s);
    ASSERT_TRUE(other.ok() && other->has_value());
    auto unrelated = TryAcquireOnce(*store_, "lock:billing:nightly", "node-b", 10s);
    ASSERT_TRUE(unrelated.ok() && unrelated->has_value());
    EXPECT_EQ(sum(), 2);
    auto released = store_->Release((**other).id, "node-b", (**other).epoch);
    ASSERT_TRUE(released.ok() && *released);
    EXPECT_EQ(sum(), 3) << "a release raises its row's epoch";
    auto again = TryAcquireOnce(*store_, "master/2", "node-c", 10s);
    ASSERT_TRUE(again.ok() && again->has_value());
    EXPECT_EQ(sum(), 4);
}

SCHED_DB_TEST_SUITE(FencedTest);

}  // namespace
}  // namespace sched::lock
