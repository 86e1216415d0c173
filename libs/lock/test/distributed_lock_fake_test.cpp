// DistributedLock's lease logic against FakeLockStore and a FakeClock. Only single attempts
// (wait 0) here: waiting sleeps on the real clock; see distributed_lock_db_test.cpp for that.

#include <gtest/gtest.h>

#include "sched/lock/distributed_lock.hpp"
#include "sched/lock/testing/fake_lock_store.hpp"

namespace sched::lock {
namespace {

using namespace std::chrono_literals;
using testing::FakeLockStore;

class DistributedLockFakeTest : public ::testing::Test {
  protected:
    DistributedLockFakeTest()
        : store_(std::make_shared<FakeLockStore>(clock_)),
          a_(store_, "node-a", {}, clock_),
          b_(store_, "node-b", {}, clock_) {}

    LockHandle MustLock(DistributedLock& locks, std::string_view key, Micros lease) {
        auto h = locks.TryLock(key, 0s, lease);
        EXPECT_TRUE(h.ok()) << h.status().ToString();
        EXPECT_TRUE(h.ok() && h->has_value());
        return **h;
    }

    FakeClock clock_;
    std::shared_ptr<FakeLockStore> store_;
    DistributedLock a_;
    DistributedLock b_;
};

TEST_F(DistributedLockFakeTest, HeldKeyIsNotAcquiredUntilItsLeaseEnds) {
    const LockHandle h = MustLock(a_, "order-1", 10s);
    EXPECT_EQ(h.epoch, 1);
    EXPECT_EQ(h.valid_until, clock_.Steady() + 10s);
    auto other = b_.TryLock("order-1", 0s, 10s);
    ASSERT_TRUE(other.ok());
    EXPECT_FALSE(other->has_value());
    clock_.Advance(10s);
    const LockHandle taken = MustLock(b_, "order-1", 10s);
    EXPECT_EQ(taken.epoch, 2);
}

TEST_F(DistributedLockFakeTest, TwoAcquisitionsInOneProcessExcludeEachOther) {
    const LockHandle h = MustLock(a_, "k", 10s);
    auto again = a_.TryLock("k", 0s, 10s);
    ASSERT_TRUE(again.ok());
    EXPECT_FALSE(again->has_value());
    EXPECT_NE(h.owner.find("node-a#"), std::string::npos);
}

TEST_F(DistributedLockFakeTest, StaleUnlockNeverRemovesAnotherOwnersLock) {
    const LockHandle stale = MustLock(a_, "k", 1s);
    clock_.Advance(1s);
    const LockHandle current = MustLock(b_, "k", 10s);
    const Status s = a_.Unlock(stale);
    EXPECT_TRUE(IsLeaseLost(s)) << s.ToString();
    const auto row = store_->Peek("lock:k");
    EXPECT_EQ(row->owner, current.owner);
    EXPECT_EQ(row->epoch, current.epoch);
    auto third = a_.TryLock("k", 0s, 1s);
    ASSERT_TRUE(third.ok());
    EXPECT_FALSE(third->has_value());
}

TEST_F(DistributedLockFakeTest, UnlockFreesTheKeyAndTokensKeepIncreasing) {
    const LockHandle first = MustLock(a_, "k", 10s);
    ASSERT_TRUE(a_.Unlock(first).ok());
    const LockHandle second = MustLock(b_, "k", 10s);
    EXPECT_GT(second.epoch, first.epoch);
    ASSERT_TRUE(b_.Unlock(second).ok());
    const LockHandle third = MustLock(a_, "k", 10s);
    EXPECT_GT(third.epoch, second.epoch);
}

TEST_F(DistributedLockFakeTest, ExtendMovesTheLeaseButNotAnExpiredOne) {
    LockHandle h = MustLock(a_, "k", 1s);
    clock_.Advance(900ms);
    ASSERT_TRUE(a_.Extend(h, 1s).ok());
    EXPECT_EQ(h.valid_until, clock_.Steady() + 1s);
    clock_.Advance(900ms);  // past the original lease, inside the extended one
    auto other = b_.TryLock("k", 0s, 1s);
    ASSERT_TRUE(other.ok());
    EXPECT_FALSE(other->has_value());
    clock_.Advance(100ms);
    const Status late = a_.Extend(h, 1s);
    EXPECT_TRUE(IsLeaseLost(late)) << late.ToString();
}

TEST_F(DistributedLockFakeTest, GuardWithoutWatchdogStopsBeingHeldAtItsDeadlineAndUnlocksOnDestruction) {
    {
        LockGuard g = a_.Guard(MustLock(a_, "k", 1s), 1s, /*watchdog=*/false);
        EXPECT_TRUE(g.Held());
        clock_.Advance(999ms);
        EXPECT_TRUE(g.Held());
        clock_.Advance(1ms);
        EXPECT_FALSE(g.Held());
    }
    // The guard's unlock still released the row (expired but not taken: still ours).
    EXPECT_FALSE(store_->Peek("lock:k")->owner.has_value());
}

TEST_F(DistributedLockFakeTest, InvalidKeysAndLeasesAreRejected) {
    EXPECT_EQ(a_.TryLock("", 0s, 1s).status().code(), Code::kInvalidArgument);
    EXPECT_EQ(a_.TryLock(std::string(200, 'x'), 0s, 1s).status().code(), Code::kInvalidArgument);
    EXPECT_EQ(a_.TryLock("k", 0s, 0s).status().code(), Code::kInvalidArgument);
}

TEST_F(DistributedLockFakeTest, DatabaseErrorIsReturnedNotMistakenForHeld) {
    store_->SetHook([](std::string_view) { return Unavailable("connection refused"); });
    auto h = a_.TryLock("k", 0s, 1s);
    EXPECT_EQ(h.status().code(), Code::kUnavailable);
}

TEST_F(DistributedLockFakeTest, LockReturnsCancelledWhenCancelledBeforeAcquiring) {
    (void)MustLock(a_, "k", 10s);
    std::stop_source cancel;
    cancel.request_stop();
    auto h = b_.Lock("k", 1s, cancel.get_token());
    EXPECT_EQ(h.status().code(), Code::kCancelled);
}

}  // namespace
}  // namespace sched::lock
