#include "sched/store/backfill.hpp"

#include "store_test_base.hpp"

namespace sched::store {

using model::Fire;
using model::FireKind;
using model::FireReason;
using model::FireStatus;
using model::IsFinal;
namespace {

class BackfillRepositoryTest : public StoreTest {
  protected:
    std::int64_t InsertBackfill(const Backfill& b) {
        auto id = db().Run([&](soci::session& s) { return BackfillRepository::Insert(s, b); });
        EXPECT_TRUE(id.ok()) << id.status().ToString();
        return id.ok() ? *id : 0;
    }
    void InsertFire(std::int64_t job_id, std::int64_t t, FireKind kind, FireStatus status,
                    std::optional<FireReason> reason = std::nullopt, int shard = 0) {
        Fire f;
        f.job_id = job_id;
        f.scheduled_time = t;
        f.kind = kind;
        f.shard_index = shard;
        f.shard_total = shard + 1;
        f.status = status;
        f.reason = reason;
        auto r = db().Run([&](soci::session& s) {
            if (IsFinal(status) && reason) {
                f.finished_at = t;
                return FireRepository::InsertLedgerRows(s, db().dialect(), {f}) == 1;
            }
            return FireRepository::InsertIfAbsent(s, db().dialect(), f).has_value();
        });
        ASSERT_TRUE(r.ok() && *r) << r.status().ToString();
    }
    static Backfill Sample(std::int64_t job_id) {
        Backfill b;
        b.job_id = job_id;
        b.range_from = 1000;
        b.range_to = 9000;
        b.overlap = BackfillOverlap::kParallel;
        b.max_parallel = 3;
        b.cursor_ms = 1000;
        b.planned = 8;
        b.created_by = "ops";
        b.created_at = 50;
        b.updated_at = 50;
        return b;
    }
};

TEST_P(BackfillRepositoryTest, InsertGetAndListRoundTrip) {
    const auto id = InsertBackfill(Sample(7));
    ASSERT_GT(id, 0);
    const auto other = InsertBackfill(Sample(7));
    InsertBackfill(Sample(8));
    BackfillRepository repo(db());
    auto got = repo.Get(id);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->job_id, 7);
    EXPECT_EQ(got->range_from, 1000);
    EXPECT_EQ(got->range_to, 9000);
    EXPECT_EQ(got->overlap, BackfillOverlap::kParallel);
    EXPECT_EQ(got->max_parallel, 3);
    EXPECT_EQ(got->state, BackfillState::kRunning);
    EXPECT_EQ(got->planned, 8);
    EXPECT_EQ(got->created_by, "ops");
    EXPECT_FALSE(got->finished_at);
    EXPECT_EQ(repo.Get(id + 100).status().code(), Code::kNotFound);

    auto listed = repo.ListForJob(7, 0, 10);
    ASSERT_TRUE(listed.ok());
    ASSERT_EQ(listed->size(), 2u);
    EXPECT_EQ((*listed)[0].id, other);  // newest first
    auto page = repo.ListForJob(7, other, 10);
    ASSERT_EQ(page->size(), 1u);
    EXPECT_EQ((*page)[0].id, id);
}

TEST_P(BackfillRepositoryTest, ProgressIsStoredOnlyWhileRunningAndCancelWins) {
    const auto id = InsertBackfill(Sample(7));
    BackfillRepository repo(db());
    auto b = *repo.Get(id);
    b.cursor_ms = 4000;
    b.created = 2;
    b.existing = 1;
    auto saved = db().Run([&](soci::session& s) { return BackfillRepository::SaveProgress(s, b, 60); });
    ASSERT_TRUE(saved.ok() && *saved);
    EXPECT_EQ(repo.Get(id)->cursor_ms, 4000);
    EXPECT_EQ(repo.Get(id)->created, 2);
    EXPECT_EQ(repo.Get(id)->updated_at, 60);

    auto cancelled = repo.Cancel(id);
    ASSERT_TRUE(cancelled.ok()) << cancelled.status().ToString();
    EXPECT_EQ(cancelled->state, BackfillState::kCancelled);
    EXPECT_TRUE(cancelled->finished_at);
    EXPECT_EQ(repo.Cancel(id).status().code(), Code::kFailedPrecondition);
    EXPECT_EQ(repo.Cancel(id + 100).status().code(), Code::kNotFound);

    b.cursor_ms = 9000;  // the master's view, read before the cancel: not stored
    saved = db().Run([&](soci::session& s) { return BackfillRepository::SaveProgress(s, b, 70); });
    ASSERT_TRUE(saved.ok());
    EXPECT_FALSE(*saved);
    EXPECT_EQ(repo.Get(id)->cursor_ms, 4000);
    auto running = db().Run([&](soci::session& s) { return BackfillRepository::ListRunning(s, 0, 10); });
    ASSERT_TRUE(running.ok());
    EXPECT_TRUE(running->empty());
    InsertBackfill(Sample(7));
    InsertBackfill(Sample(8));
    auto of_job = db().Run([&](soci::session& s) { return BackfillRepository::CountRunning(s, 7); });
    EXPECT_EQ(*of_job, 1);
}

TEST_P(BackfillRepositoryTest, ExistingTimesSkipMisfireSkipsAndPreferOtherKinds) {
    InsertFire(7, 1000, FireKind::kSchedule, FireStatus::kSucceeded);
    InsertFire(7, 2000, FireKind::kMisfire, FireStatus::kSkipped, FireReason::kMisfire);  // never ran
    InsertFire(7, 3000, FireKind::kBackfill, FireStatus::kPending);
    InsertFire(7, 3000, FireKind::kManual, FireStatus::kFailed);
    InsertFire(7, 4000, FireKind::kBackfill, FireStatus::kRunning);
    InsertFire(7, 5000, FireKind::kRetry, FireStatus::kPending);     // a retry alone never marks a time
    InsertFire(7, 9000, FireKind::kSchedule, FireStatus::kPending);  // outside [from, to)
    InsertFire(8, 1500, FireKind::kSchedule, FireStatus::kPending);  // another job
    auto existing =
        db().Run([&](soci::session& s) { return BackfillRepository::ExistingTimes(s, 7, 1000, 9000, 100); });
    ASSERT_TRUE(existing.ok()) << existing.status().ToString();
    const std::map<std::int64_t, FireKind> want = {
        {1000, FireKind::kSchedule}, {3000, FireKind::kManual}, {4000, FireKind::kBackfill}};
    EXPECT_EQ(*existing, want);
}

TEST_P(BackfillRepositoryTest, CountsUnfinishedTimesAndFiresByOutcome) {
    InsertFire(7, 1000, FireKind::kBackfill, FireStatus::kPending);
    InsertFire(7, 1000, FireKind::kBackfill, FireStatus::kRunning, std::nullopt, 1);  // same time, shard 1
    InsertFire(7, 2000, FireKind::kBackfill, FireStatus::kDispatching);
    InsertFire(7, 3000, FireKind::kBackfill, FireStatus::kSucceeded);
    InsertFire(7, 4000, FireKind::kBackfill, FireStatus::kFailed);
    InsertFire(7, 5000, FireKind::kSchedule, FireStatus::kRunning);  // not a backfill fire
    auto unfinished = db().Run([&](soci::session& s) { return BackfillRepository::CountUnfinished(s, 7, 1000, 9000); });
    ASSERT_TRUE(unfinished.ok()) << unfinished.status().ToString();
    EXPECT_EQ(*unfinished, 2);  // times 1000 and 2000
    auto counts = db().Run([&](soci::session& s) { return BackfillRepository::CountFires(s, 7, 1000, 9000); });
    ASSERT_TRUE(counts.ok());
    EXPECT_EQ(counts->running, 3);
    EXPECT_EQ(counts->succeeded, 1);
    EXPECT_EQ(counts->failed, 1);
    auto narrow = db().Run([&](soci::session& s) { return BackfillRepository::CountUnfinished(s, 7, 2000, 3000); });
    EXPECT_EQ(*narrow, 1);
}

SCHED_DB_TEST_SUITE(BackfillRepositoryTest);

}  // namespace
}  // namespace sched::store
