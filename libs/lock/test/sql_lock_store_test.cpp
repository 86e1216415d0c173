// SqlLockStore's statements on both backends: the contract in lock_store.hpp, checked against
// the real databases (FakeLockStore implements the same contract for the unit tests).

#include "sched/lock/sql_lock_store.hpp"

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "lock_db_fixture.hpp"

namespace sched::lock {
namespace {

using namespace std::chrono_literals;
using testing::LockDbTest;
using testing::WaitFor;

class SqlLockStoreTest : public LockDbTest {
  protected:
    void SetUpDatabase() override { store_ = std::make_unique<SqlLockStore>(Pool()); }

    LockRow MustRead(std::string_view name) {
        auto row = store_->Read(name);
        EXPECT_TRUE(row.ok()) << row.status().ToString();
        EXPECT_TRUE(row.ok() && row->has_value());
        return **row;
    }

    // Waits (bounded) until the row has expired by the database clock.
    void WaitExpired(std::string_view name) {
        ASSERT_TRUE(WaitFor([&] { return MustRead(name).Available(); }, 5s));
    }

    std::unique_ptr<SqlLockStore> store_;
};

TEST_P(SqlLockStoreTest, InsertCreatesEpochOneHeldRowAndASecondInsertIsANoOp) {
    auto first = store_->Insert("n", "a", 10s);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    ASSERT_TRUE(first->has_value());
    EXPECT_EQ((*first)->epoch, 1);
    auto second = store_->Insert("n", "b", 10s);
    ASSERT_TRUE(second.ok()) << second.status().ToString();  // no duplicate-key error
    EXPECT_FALSE(second->has_value());
    const LockRow row = MustRead("n");
    EXPECT_EQ(row.id, (*first)->id);
    EXPECT_EQ(row.owner, "a");
    EXPECT_EQ(row.epoch, 1);
    EXPECT_EQ(row.version, 1);
    EXPECT_FALSE(row.Available());
    // lease_until was computed by the database from its own clock.
    EXPECT_GT(row.lease_until_us - row.db_now_us, 9'000'000);
    EXPECT_LE(row.lease_until_us - row.db_now_us, 10'000'000);
}

TEST_P(SqlLockStoreTest, ReadOfAMissingRowIsNullopt) {
    auto row = store_->Read("absent");
    ASSERT_TRUE(row.ok());
    EXPECT_FALSE(row->has_value());
}

TEST_P(SqlLockStoreTest, LiveRowCannotBeTakenOverExpiredRowCanWithTheNextEpoch) {
    ASSERT_TRUE(store_->Insert("n", "a", 300ms).ok());
    const LockRow live = MustRead("n");
    auto taken = store_->TakeOver(live, "b", 10s, {});
    ASSERT_TRUE(taken.ok()) << taken.status().ToString();
    EXPECT_FALSE(*taken);
    EXPECT_EQ(MustRead("n").version, live.version);  // nothing written

    WaitExpired("n");
    const LockRow expired = MustRead("n");
    taken = store_->TakeOver(expired, "b", 10s, {});
    ASSERT_TRUE(taken.ok());
    EXPECT_TRUE(*taken);
    const LockRow now = MustRead("n");
    EXPECT_EQ(now.owner, "b");
    EXPECT_EQ(now.epoch, expired.epoch + 1);
    EXPECT_EQ(now.version, expired.version + 1);
}

// held_since_us: when the current holding began, by the database clock. A renew keeps it; a
// take-over by another owner moves it to the moment of the take-over.
TEST_P(SqlLockStoreTest, HeldSinceIsSetWhenTheOwnerChangesAndKeptOnRenew) {
    auto held = store_->Insert("n", "a", 300ms);
    ASSERT_TRUE(held.ok() && held->has_value()) << held.status().ToString();
    const LockRow inserted = MustRead("n");
    EXPECT_GT(inserted.held_since_us, 0);
    EXPECT_EQ(inserted.held_since_us, inserted.update_time_us) << "one statement, one NOW";
    EXPECT_LE(inserted.held_since_us, inserted.db_now_us);

    std::this_thread::sleep_for(20ms);
    auto renewed = store_->Renew((*held)->id, "a", (*held)->epoch, 300ms);
    ASSERT_TRUE(renewed.ok() && *renewed) << renewed.status().ToString();
    const LockRow after_renew = MustRead("n");
    EXPECT_GT(after_renew.update_time_us, inserted.update_time_us);
    EXPECT_EQ(after_renew.held_since_us, inserted.held_since_us) << "a renew goes on with the same holding";

    WaitExpired("n");
    const LockRow expired = MustRead("n");
    auto taken = store_->TakeOver(expired, "b", 10s, {});
    ASSERT_TRUE(taken.ok() && *taken) << taken.status().ToString();
    const LockRow after_take = MustRead("n");
    EXPECT_EQ(after_take.owner, "b");
    EXPECT_GT(after_take.held_since_us, after_renew.update_time_us);
    EXPECT_EQ(after_take.held_since_us, after_take.update_time_us);

    // Released: the row keeps its last holder's start.
    ASSERT_TRUE(*store_->Release(after_take.id, "b", after_take.epoch));
    EXPECT_EQ(MustRead("n").held_since_us, after_take.held_since_us);
}

TEST_P(SqlLockStoreTest, TakeOverWithAStaleVersionFailsEvenWhenExpired) {
    ASSERT_TRUE(store_->Insert("n", "a", 100ms).ok());
    WaitExpired("n");
    const LockRow seen = MustRead("n");
    ASSERT_TRUE(*store_->TakeOver(seen, "b", 100ms, {}));
    WaitExpired("n");
    // `seen` is expired by the clock, but the row changed since it was read.
    auto again = store_->TakeOver(seen, "c", 10s, {});
    ASSERT_TRUE(again.ok());
    EXPECT_FALSE(*again);
    EXPECT_EQ(MustRead("n").owner, "b");
}

// What a wall clock stepped back by an hour leaves behind (the holder wrote the row, died, and
// the clock moved back): the row's last write and its expiry an hour ahead of the database
// clock. Written directly, as the dead holder's statement had.
TEST_P(SqlLockStoreTest, ARowLeftByAClockThatMovedBackIsTakenOverInOneCasWithTheNextEpoch) {
    ASSERT_TRUE(store_->Insert("n", "dead", 3s).ok());
    const std::string now(db().dialect().NowUs());
    ASSERT_TRUE(db().Run([&](soci::session& s) {
                        s << "UPDATE scheduler_lock SET update_time_us = " + now +
                                 " + 3600000000 - 3000000, lease_until_us = " + now +
                                 " + 3600000000 WHERE namespace = 'n'";
                    })
                    .ok());
    const LockRow stepped = MustRead("n");
    EXPECT_GT(stepped.lease_until_us - stepped.db_now_us, 3'500'000'000);
    EXPECT_TRUE(stepped.ClockStepped());
    EXPECT_TRUE(stepped.Available());
    EXPECT_GT(stepped.ClockStepUs(), 3'500'000'000);

    auto taken = TryAcquireOnce(*store_, "n", "b", 3s);
    ASSERT_TRUE(taken.ok()) << taken.status().ToString();
    ASSERT_TRUE(taken->has_value()) << "a lease an hour ahead of the database clock must count as expired";
    EXPECT_EQ((*taken)->epoch, stepped.epoch + 1);
    const LockRow row = MustRead("n");
    EXPECT_EQ(row.owner, "b");
    EXPECT_FALSE(row.ClockStepped());
    EXPECT_LE(row.lease_until_us - row.db_now_us, 3'000'000);  // a normal lease again
    // The old holder's renew and release find nothing: its epoch is fenced off.
    EXPECT_FALSE(*store_->Renew(row.id, "dead", stepped.epoch, 3s));
    EXPECT_FALSE(*store_->Release(row.id, "dead", stepped.epoch));
}

TEST_P(SqlLockStoreTest, ALongLeaseIsNotAClockStepButTooLongForTheMasterGuardIs) {
    // A holder that asked for an hour: its expiry is an hour ahead, its last write is now.
    ASSERT_TRUE(store_->Insert("n", "a", std::chrono::hours(1)).ok());
    const LockRow long_lease = MustRead("n");
    EXPECT_FALSE(long_lease.ClockStepped());
    auto kept = store_->TakeOver(long_lease, "b", 3s, {});
    ASSERT_TRUE(kept.ok()) << kept.status().ToString();
    EXPECT_FALSE(*kept) << "a lease of the length its holder asked for is live";
    // The master lease knows its ttl: nothing legitimate lies further ahead than ttl + margin.
    const ClockStepGuard master{.tolerance = 1s, .max_lease_ahead = 4s};
    EXPECT_TRUE(long_lease.ClockStepped(master));
    auto taken = store_->TakeOver(long_lease, "b", 3s, master);
    ASSERT_TRUE(taken.ok()) << taken.status().ToString();
    EXPECT_TRUE(*taken);
    EXPECT_EQ(MustRead("n").epoch, long_lease.epoch + 1);
}

TEST_P(SqlLockStoreTest, SameSecondRenewsBothSucceedAndMoveTheLease) {
    auto h = store_->Insert("n", "a", 3s);
    ASSERT_TRUE(h.ok() && h->has_value());
    const LockRow before = MustRead("n");
    std::this_thread::sleep_for(2ms);  // SQLite's clock has millisecond precision
    auto r1 = store_->Renew((*h)->id, "a", 1, 3s);
    std::this_thread::sleep_for(2ms);
    auto r2 = store_->Renew((*h)->id, "a", 1, 3s);
    ASSERT_TRUE(r1.ok() && r2.ok()) << r1.status().ToString() << r2.status().ToString();
    EXPECT_TRUE(*r1);
    EXPECT_TRUE(*r2);
    const LockRow after = MustRead("n");
    EXPECT_EQ(after.version, before.version + 2);
    EXPECT_EQ(after.epoch, before.epoch);
    EXPECT_GT(after.lease_until_us, before.lease_until_us);
    EXPECT_LT(after.lease_until_us - before.lease_until_us, 1'000'000);  // sub-second precision
}

TEST_P(SqlLockStoreTest, RenewChecksOwnerEpochAndExpiry) {
    auto h = store_->Insert("n", "a", 200ms);
    ASSERT_TRUE(h.ok() && h->has_value());
    const std::int64_t id = (*h)->id;
    EXPECT_FALSE(*store_->Renew(id, "b", 1, 10s));
    EXPECT_FALSE(*store_->Renew(id, "a", 2, 10s));
    WaitExpired("n");
    EXPECT_FALSE(*store_->Renew(id, "a", 1, 10s));  // expired: gone, even though nobody took it
    EXPECT_TRUE(MustRead("n").Available());
}

TEST_P(SqlLockStoreTest, ReleaseIsOwnerAndEpochCheckedAndBumpsTheEpoch) {
    auto h = store_->Insert("n", "a", 10s);
    ASSERT_TRUE(h.ok() && h->has_value());
    const std::int64_t id = (*h)->id;
    EXPECT_FALSE(*store_->Release(id, "b", 1));
    EXPECT_FALSE(*store_->Release(id, "a", 7));
    EXPECT_EQ(MustRead("n").owner, "a");
    EXPECT_TRUE(*store_->Release(id, "a", 1));
    const LockRow row = MustRead("n");
    EXPECT_FALSE(row.owner.has_value());
    EXPECT_EQ(row.epoch, 2);
    EXPECT_TRUE(row.Available());
    EXPECT_FALSE(*store_->Release(id, "a", 1));  // twice: the second finds it not ours
}

TEST_P(SqlLockStoreTest, ConcurrentAcquirersOfANewAndOfAnExpiredRowHaveExactlyOneWinner) {
    constexpr int kThreads = 6;
    std::vector<std::shared_ptr<db::Database>> pools;
    for (int i = 0; i < kThreads; ++i) pools.push_back(Pool(1));
    for (const Micros lease : {Micros(200ms), Micros(10s)}) {
        if (lease == 10s) WaitExpired("race");  // second round: the row exists and has expired
        std::atomic<int> winners{0};
        std::atomic<int> errors{0};
        std::atomic<bool> go{false};
        std::vector<std::thread> threads;
        for (int i = 0; i < kThreads; ++i) {
            threads.emplace_back([&, i] {
                SqlLockStore store(pools[i]);
                while (!go.load()) std::this_thread::yield();
                auto h = TryAcquireOnce(store, "race", "t" + std::to_string(i), lease);
                if (!h.ok()) {
                    ++errors;  // SQLite busy under contention is an error, never a second winner
                } else if (h->has_value()) {
                    ++winners;
                }
            });
        }
        go = true;
        for (auto& t : threads) t.join();
        EXPECT_EQ(winners.load(), 1) << "lease " << lease.count() << "us, errors " << errors.load();
    }
}

SCHED_DB_TEST_SUITE(SqlLockStoreTest);

}  // namespace
}  // namespace sched::lock
