// WithRowLock on both backends.

#include "sched/lock/row_lock.hpp"

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

class RowLockTest : public LockDbTest {
  protected:
    void SetUpDatabase() override { ASSERT_TRUE(CreateCounter("row_counter", "v", "INT").ok()); }

    int Counter() {
        auto v = SelectValue<int>("SELECT v FROM row_counter WHERE id = 1");
        return v.ok() ? *v : -1;
    }

    static Status Increment(soci::session& s) {
        int v = 0;
        s << "SELECT v FROM row_counter WHERE id = 1", soci::into(v);
        std::this_thread::sleep_for(1ms);
        s << "UPDATE row_counter SET v = :v WHERE id = 1", soci::use(v + 1);
        return Status::Ok();
    }
};

TEST_P(RowLockTest, RunsFnAndCommitsItsWritesCreatingTheRowOnFirstUse) {
    auto pool = Pool(1);
    ASSERT_TRUE(WithRowLock(*pool, "job-7", 1s, Increment).ok());
    auto r = WithRowLock(*pool, "job-7", 1s, [](soci::session& s) {
        int v = 0;
        s << "SELECT v FROM row_counter WHERE id = 1", soci::into(v);
        return v;
    });
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, 1);
    SqlLockStore store(pool);
    EXPECT_TRUE((*store.Read("row:job-7")).has_value());
    if (IsMySql()) {
        // The session's own lock-wait timeout (5 s in the URL) is back after the lock's 1 s.
        auto t = pool->Run([](soci::session& s) {
            long long t = 0;
            s << "SELECT @@session.innodb_lock_wait_timeout", soci::into(t);
            return t;
        });
        ASSERT_TRUE(t.ok());
        EXPECT_EQ(*t, 5);
    }
}

TEST_P(RowLockTest, SecondHolderIsNotAcquiredWithinItsWaitAndFnDoesNotRun) {
    std::promise<void> release;
    std::atomic<bool> holding{false};
    auto holder = std::async(std::launch::async, [&, pool = Pool(1)] {
        return WithRowLock(*pool, "k", 1s, [&](soci::session&) {
            holding = true;
            release.get_future().wait();
            return Status::Ok();
        });
    });
    ASSERT_TRUE(WaitFor([&] { return holding.load(); }, 5s));
    bool ran = false;
    const auto start = std::chrono::steady_clock::now();
    auto pool = Pool(1);
    const Status s = WithRowLock(*pool, "k", 300ms, [&](soci::session&) {
        ran = true;
        return Status::Ok();
    });
    const auto waited = std::chrono::steady_clock::now() - start;
    release.set_value();
    EXPECT_TRUE(IsNotAcquired(s)) << s.ToString();
    EXPECT_FALSE(ran);
    EXPECT_GE(waited, 250ms);  // it did wait (MySQL rounds the wait up to 1 s)
    EXPECT_TRUE(holder.get().ok());
    // And once the holder committed, the lock is free again at once.
    EXPECT_TRUE(WithRowLock(*pool, "k", 300ms, [](soci::session&) { return Status::Ok(); }).ok());
}

TEST_P(RowLockTest, RollbackReleasesTheLockAndDiscardsFnWrites) {
    auto pool = Pool(1);
    const Status s = WithRowLock(*pool, "k", 1s, [](soci::session& session) -> Status {
        (void)Increment(session);
        return Aborted("no");
    });
    EXPECT_EQ(s.code(), Code::kAborted);
    EXPECT_EQ(Counter(), 0);
    EXPECT_TRUE(WithRowLock(*Pool(1), "k", 300ms, Increment).ok());
    EXPECT_EQ(Counter(), 1);
}

TEST_P(RowLockTest, ConcurrentReadSleepWriteUnderTheLockLosesNoUpdate) {
    constexpr int kThreads = 4;
    constexpr int kIterations = 15;
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, pool = Pool(1)] {
            for (int i = 0; i < kIterations;) {
                const Status s = WithRowLock(*pool, "counter", 10s, Increment);
                if (s.ok()) {
                    ++i;
                } else {
                    ++failures;  // not acquired (or busy): nothing was written, try again
                }
            }
        });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(Counter(), kThreads * kIterations) << failures.load() << " attempts failed";
}

TEST_P(RowLockTest, EmptyKeyIsInvalid) {
    EXPECT_EQ(WithRowLock(db(), "", 1s, [](soci::session&) {}).code(), Code::kInvalidArgument);
}

SCHED_DB_TEST_SUITE(RowLockTest);

}  // namespace
}  // namespace sched::lock
