// DistributedLock on both backends, real clock: waiting, cancellation, the watchdog, and a
// read-sleep-write counter across threads that each act as a separate client.

#include "sched/lock/distributed_lock.hpp"

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

class DistributedLockDbTest : public LockDbTest {
  protected:
    std::unique_ptr<DistributedLock> Client(const std::string& node) {
        return std::make_unique<DistributedLock>(std::make_shared<SqlLockStore>(Pool(2)), node);
    }
    // `client`'s lock on the free key "k" with `lease` (a failure, and an empty handle, when it
    // is not taken).
    static LockHandle Took(DistributedLock& client, Micros lease) {
        auto taken = client.TryLock("k", 0s, lease);
        EXPECT_TRUE(taken.ok() && taken->has_value()) << taken.status().ToString();
        return taken.ok() && taken->has_value() ? **taken : LockHandle{};
    }
};

TEST_P(DistributedLockDbTest, TryLockWaitsForTheHolderToUnlockAndTokensIncrease) {
    auto a = Client("a");
    auto b = Client("b");
    const LockHandle first = Took(*a, 10s);
    auto none = b->TryLock("k", 100ms, 10s);
    ASSERT_TRUE(none.ok()) << none.status().ToString();
    EXPECT_FALSE(none->has_value());
    auto unlocker = std::async(std::launch::async, [&] {
        std::this_thread::sleep_for(200ms);
        return a->Unlock(first);
    });
    auto second = b->TryLock("k", 5s, 10s);
    ASSERT_TRUE(unlocker.get().ok());
    ASSERT_TRUE(second.ok() && second->has_value()) << second.status().ToString();
    EXPECT_GT((*second)->epoch, first.epoch);
}

TEST_P(DistributedLockDbTest, TryLockTakesAnExpiredLockWithoutItsOwnersHelp) {
    auto a = Client("a");
    auto b = Client("b");
    const LockHandle first = Took(*a, 300ms);  // a "crashes": never unlocks
    const auto start = std::chrono::steady_clock::now();
    auto second = b->TryLock("k", 5s, 10s);
    ASSERT_TRUE(second.ok() && second->has_value()) << second.status().ToString();
    EXPECT_EQ((*second)->epoch, first.epoch + 1);
    EXPECT_GE(std::chrono::steady_clock::now() - start, 200ms);
    // The late unlock of the crashed owner leaves the new owner's lock alone.
    EXPECT_TRUE(IsLeaseLost(a->Unlock(first)));
    auto still = b->TryLock("k", 0s, 1s);  // b's own second acquisition: excluded
    ASSERT_TRUE(still.ok());
    EXPECT_FALSE(still->has_value());
    LockHandle h = **second;
    EXPECT_TRUE(b->Extend(h, 10s).ok());
}

TEST_P(DistributedLockDbTest, BlockingLockReturnsCancelledPromptly) {
    auto a = Client("a");
    auto b = Client("b");
    const LockHandle held = Took(*a, 30s);
    std::stop_source cancel;
    auto waiter = std::async(std::launch::async, [&] { return b->Lock("k", 10s, cancel.get_token()); });
    EXPECT_EQ(waiter.wait_for(300ms), std::future_status::timeout);  // still blocked
    const auto start = std::chrono::steady_clock::now();
    cancel.request_stop();
    auto r = waiter.get();
    EXPECT_EQ(r.status().code(), Code::kCancelled);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
}

TEST_P(DistributedLockDbTest, WatchdogKeepsTheLockPastItsLeaseUntilTheGuardGoes) {
    auto a = Client("a");
    auto b = Client("b");
    const LockHandle h = Took(*a, 300ms);
    {
        LockGuard guard = a->Guard(h, 300ms);
        const auto until = std::chrono::steady_clock::now() + 1200ms;  // four leases
        while (std::chrono::steady_clock::now() < until) {
            auto other = b->TryLock("k", 0s, 1s);
            ASSERT_TRUE(other.ok()) << other.status().ToString();
            ASSERT_FALSE(other->has_value()) << "taken while the watchdog should renew it";
            ASSERT_TRUE(guard.Held());
            std::this_thread::sleep_for(50ms);
        }
    }
    auto after = b->TryLock("k", 0s, 1s);  // the guard unlocked: free at once
    ASSERT_TRUE(after.ok());
    EXPECT_TRUE(after->has_value());
}

TEST_P(DistributedLockDbTest, WatchdogStopsRenewingOnceTheWorkIsCancelled) {
    auto a = Client("a");
    auto b = Client("b");
    const LockHandle h = Took(*a, 300ms);
    std::stop_source work;
    LockGuard guard = a->Guard(h, 300ms, true, work.get_token());
    std::this_thread::sleep_for(500ms);
    auto before = b->TryLock("k", 0s, 1s);
    ASSERT_TRUE(before.ok());
    EXPECT_FALSE(before->has_value());  // renewed past its first lease
    work.request_stop();
    auto taken = b->TryLock("k", 2s, 10s);  // expires within one lease once renewals stop
    ASSERT_TRUE(taken.ok()) << taken.status().ToString();
    EXPECT_TRUE(taken->has_value());
    EXPECT_FALSE(guard.Held());
}

TEST_P(DistributedLockDbTest, LostLockIsReportedThroughTheGuard) {
    auto a = Client("a");
    const LockHandle h = Took(*a, 300ms);
    LockGuard guard = a->Guard(h, 300ms);
    // Someone steals the row behind the lock's back (an operator, or a clock jump on the DB).
    ASSERT_TRUE(db().Run([](soci::session& s) {
                        s << "UPDATE scheduler_lock SET owner = 'thief', epoch = epoch + 1, version = version + 1 "
                             "WHERE namespace = 'lock:k'";
                    })
                    .ok());
    ASSERT_TRUE(WaitFor([&] { return guard.LostToken().stop_requested(); }, 3s));
    EXPECT_FALSE(guard.Held());
    EXPECT_TRUE(IsLeaseLost(guard.Unlock()));
}

TEST_P(DistributedLockDbTest, ReadSleepWriteCounterUnderTheLockIsExact) {
    ASSERT_TRUE(CreateCounter("dl_counter", "v", "INT").ok());
    constexpr int kClients = 4;
    constexpr int kIterations = 15;
    std::vector<std::thread> threads;
    for (int c = 0; c < kClients; ++c) {
        threads.emplace_back([&, locks = Client("c" + std::to_string(c)), pool = Pool(1)] {
            for (int i = 0; i < kIterations;) {
                auto h = locks->Lock("counter", 5s, {});
                if (!h.ok()) continue;
                LockGuard guard = locks->Guard(std::move(*h), 5s);
                const Status s = pool->Run([](soci::session& session) {
                    int v = 0;
                    session << "SELECT v FROM dl_counter WHERE id = 1", soci::into(v);
                    std::this_thread::sleep_for(1ms);
                    session << "UPDATE dl_counter SET v = :v WHERE id = 1", soci::use(v + 1);
                });
                if (s.ok()) ++i;
            }
        });
    }
    for (auto& t : threads) t.join();
    auto v = SelectValue<int>("SELECT v FROM dl_counter WHERE id = 1");
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(*v, kClients * kIterations);
}

SCHED_DB_TEST_SUITE(DistributedLockDbTest);

}  // namespace
}  // namespace sched::lock
