#include "sched/store/fire.hpp"

#include <limits>
#include <map>
#include <set>

#include "sched/store/fire_claims.hpp"
#include "store_test_base.hpp"

namespace sched::store {

using model::Fire;
using model::FireKind;
using model::FireReason;
using model::FireStatus;
namespace {

class FireRepositoryTest : public StoreTest {
  protected:
    std::optional<std::int64_t> Insert(const Fire& f) {
        auto r = db().Run([&](soci::session& s) { return FireRepository::InsertIfAbsent(s, db().dialect(), f); });
        EXPECT_TRUE(r.ok()) << r.status().ToString();
        return r.ok() ? *r : std::nullopt;
    }
    // The fire `id` as Get reads it (a failure, and an empty fire, when it cannot).
    Fire Read(std::int64_t id) {
        auto got = FireRepository(db()).Get(id);
        EXPECT_TRUE(got.ok()) << got.status().ToString();
        return got.ok() ? *got : Fire{};
    }
    static Fire Sample(std::int64_t job_id, std::int64_t t) {
        Fire f;
        f.job_id = job_id;
        f.scheduled_time = t;
        f.epoch = 7;
        f.assigned_node = "node-a";
        return f;
    }

    // Sample's fire as the step `step` of the workflow run `run_id`.
    static Fire StepSample(std::int64_t job_id, std::int64_t t, std::int64_t run_id, const std::string& step) {
        Fire f = Sample(job_id, t);
        f.kind = FireKind::kWorkflow;
        f.workflow_run_id = run_id;
        f.workflow_step = step;
        return f;
    }
};

TEST_P(FireRepositoryTest, InsertIsIdempotentPerJobTimeKindAttemptShard) {
    auto first = Insert(Sample(1, 1000));
    ASSERT_TRUE(first);
    EXPECT_EQ(Insert(Sample(1, 1000)), std::nullopt);  // the same fire again: no-op
    Fire retry = Sample(1, 1000);
    retry.kind = FireKind::kRetry;
    retry.attempt = 1;
    EXPECT_TRUE(Insert(retry));
    Fire shard = Sample(1, 1000);
    shard.shard_index = 1;
    shard.shard_total = 2;
    EXPECT_TRUE(Insert(shard));
    EXPECT_TRUE(Insert(Sample(1, 2000)));

    const Fire got = Read(*first);
    EXPECT_EQ(got.job_id, 1);
    EXPECT_EQ(got.scheduled_time, 1000);
    EXPECT_EQ(got.kind, FireKind::kSchedule);
    EXPECT_EQ(got.status, FireStatus::kPending);
    EXPECT_EQ(got.epoch, 7);
    EXPECT_EQ(got.assigned_node, "node-a");
    EXPECT_EQ(got.executor_address, std::nullopt);
    EXPECT_GT(got.created_at, 0);
}

// A workflow step's fire keeps its run and step through every insert path; an ended one keeps
// its followup flag (its run advances on it), unlike a trivially ended fire.
TEST_P(FireRepositoryTest, WorkflowStepFiresCarryTheirRunAndStepAndKeepTheirFollowup) {
    Fire step = StepSample(1, 1000, 41, "extract");
    auto one = Insert(step);
    ASSERT_TRUE(one);
    Fire many = step;
    many.job_id = 2;
    many.workflow_step = "load";
    auto stored = db().Run([&](soci::session& s) {
        return FireRepository::InsertManyIfAbsent(s, db().dialect(), std::vector<Fire>{many});
    });
    ASSERT_TRUE(stored.ok()) << stored.status().ToString();
    ASSERT_TRUE((*stored)[0]);
    Fire skip = step;
    skip.job_id = 3;
    skip.workflow_step = "report";
    skip.status = FireStatus::kSkipped;
    skip.reason = FireReason::kUpstream;
    skip.result_message = "load -> report (on_success): load failed";
    ASSERT_TRUE(db().Run([&](soci::session& s) {
                        return FireRepository::InsertLedgerRows(s, db().dialect(), std::vector<Fire>{skip});
                    })
                    .ok());
    auto plain = Insert(Sample(4, 1000));
    ASSERT_TRUE(plain);

    FireRepository fires(db());
    auto got = fires.Get(*one);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->kind, FireKind::kWorkflow);
    EXPECT_EQ(got->workflow_run_id, 41);
    EXPECT_EQ(got->workflow_step, "extract");
    got = fires.Get((*stored)[0]->id);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->workflow_step, "load");
    auto skipped = fires.List({.job_id = 3});
    ASSERT_TRUE(skipped.ok());
    ASSERT_EQ(skipped->size(), 1u);
    EXPECT_EQ(skipped->front().workflow_run_id, 41);
    EXPECT_EQ(skipped->front().reason, FireReason::kUpstream);
    EXPECT_EQ(fires.Get(*plain)->workflow_run_id, std::nullopt);

    for (auto id : {*one, *plain}) {
        ASSERT_TRUE(fires.Transition(id, {FireStatus::kPending}, FireStatus::kSucceeded, {.followup = true}).ok());
    }
    auto left = db().Run([&](soci::session& s) {
        EXPECT_EQ(FireRepository::ClearTrivialFollowups(s), 1);
        return FireRepository::ListFollowups(s, 10);
    });
    ASSERT_TRUE(left.ok());
    ASSERT_EQ(left->size(), 1u);
    EXPECT_EQ(left->front().id, *one);
    EXPECT_EQ(left->front().workflow_step, "extract");
}

TEST_P(FireRepositoryTest, InsertManyInsertsNewRowsAndReturnsExistingOnesWithoutError) {
    // Existing rows: one the batch repeats exactly, one under another epoch and node.
    auto same = Insert(Sample(1, 1000));
    Fire other = Sample(2, 1000);
    other.epoch = 6;
    other.assigned_node = "node-b";
    auto theirs = Insert(other);
    ASSERT_TRUE(same && theirs);
    // A row the batch must not confuse with its fire of the same job and time: another shard.
    Fire shard = Sample(3, 1000);
    shard.shard_index = 1;
    shard.shard_total = 2;
    auto other_shard = Insert(shard);
    ASSERT_TRUE(other_shard);

    std::vector<Fire> batch;
    batch.push_back(Sample(1, 1000));  // exists, as written
    batch.push_back(Sample(2, 1000));  // exists, written by someone else
    Fire shard0 = Sample(3, 1000);
    shard0.shard_total = 2;
    batch.push_back(shard0);            // new
    batch.push_back(Sample(1, 20000));  // new, in another time bucket
    Fire retry = Sample(1, 1000);
    retry.kind = FireKind::kRetry;
    retry.attempt = 1;
    retry.due_at = 5000;
    batch.push_back(retry);  // new: another kind and attempt
    auto stored =
        db().Run([&](soci::session& s) { return FireRepository::InsertManyIfAbsent(s, db().dialect(), batch); });
    ASSERT_TRUE(stored.ok()) << stored.status().ToString();
    ASSERT_EQ(stored->size(), batch.size());
    for (const auto& r : *stored) ASSERT_TRUE(r);
    EXPECT_EQ((*stored)[0]->id, *same);
    EXPECT_TRUE((*stored)[0]->as_written);
    EXPECT_EQ((*stored)[1]->id, *theirs);
    EXPECT_FALSE((*stored)[1]->as_written);
    std::set<std::int64_t> ids;
    for (const auto& r : *stored) ids.insert(r->id);
    EXPECT_EQ(ids.size(), batch.size());
    EXPECT_FALSE(ids.contains(*other_shard));

    FireRepository fires(db());
    for (std::size_t i = 2; i < batch.size(); ++i) {
        EXPECT_TRUE((*stored)[i]->as_written) << i;
        auto got = fires.Get((*stored)[i]->id);
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        EXPECT_EQ(got->job_id, batch[i].job_id);
        EXPECT_EQ(got->scheduled_time, batch[i].scheduled_time);
        EXPECT_EQ(got->kind, batch[i].kind);
        EXPECT_EQ(got->attempt, batch[i].attempt);
        EXPECT_EQ(got->shard_index, batch[i].shard_index);
        EXPECT_EQ(got->shard_total, batch[i].shard_total);
        EXPECT_EQ(got->epoch, 7);
        EXPECT_EQ(got->assigned_node, "node-a");
        EXPECT_EQ(got->status, FireStatus::kPending);
        EXPECT_EQ(got->due_at, batch[i].due_at != 0 ? batch[i].due_at : batch[i].scheduled_time);
        EXPECT_GT(got->created_at, 0);
    }
    EXPECT_EQ(fires.Get(*theirs)->epoch, 6);  // an existing row is left as it was
    EXPECT_EQ(fires.Get(*theirs)->assigned_node, "node-b");
}

// On MariaDB the insert itself answers each row, inserted or existing, as stored: one statement
// per 200 fires and no read-back. Without that (MySQL, SQLite, or a dialect told so) the rows
// are read back by key, with the same answers.
TEST_P(FireRepositoryTest, InsertManyReadsNothingBackWhenTheInsertReturnsItsRows) {
    if (db().backend() != db::Backend::kMySql) GTEST_SKIP() << "counted with MySQL's session status";
    ASSERT_TRUE(db().dialect().rows_returned()) << "the test server is MariaDB 10.11";
    db::Dialect read_back = db().dialect();
    read_back.set_rows_returned(false);
    const db::Dialect* const dialects[] = {&db().dialect(), &read_back};
    for (const db::Dialect* dialect : dialects) {
        SCOPED_TRACE(dialect->rows_returned() ? "RETURNING" : "read back");
        const std::int64_t base = dialect->rows_returned() ? 10'000 : 20'000;
        std::vector<Fire> batch;
        for (std::int64_t job = 1; job <= 300; ++job) batch.push_back(Sample(job, base + job));
        Fire theirs = batch[5];
        theirs.epoch = 6;
        theirs.assigned_node = "node-b";
        const auto existing = Insert(theirs);
        ASSERT_TRUE(existing);
        long long statements = 0;
        auto stored = db().Run([&](soci::session& s) {
            const long long before = StatementsRun(s);
            auto out = FireRepository::InsertManyIfAbsent(s, *dialect, batch);
            statements = StatementsRun(s) - before - 1;  // not the second SHOW
            return out;
        });
        ASSERT_TRUE(stored.ok()) << stored.status().ToString();
        ASSERT_EQ(stored->size(), batch.size());
        EXPECT_EQ(statements, dialect->rows_returned() ? 2 : 3);
        FireRepository fires(db());
        for (std::size_t i = 0; i < batch.size(); ++i) {
            ASSERT_TRUE((*stored)[i]) << i;
            EXPECT_EQ((*stored)[i]->as_written, i != 5) << i;
            if (i % 50 != 5) continue;
            auto got = fires.Get((*stored)[i]->id);
            ASSERT_TRUE(got.ok()) << got.status().ToString();
            EXPECT_EQ(got->job_id, batch[i].job_id);
            EXPECT_EQ(got->scheduled_time, batch[i].scheduled_time);
        }
        EXPECT_EQ((*stored)[5]->id, *existing);
    }
}

TEST_P(FireRepositoryTest, InsertManyHandlesMoreRowsThanOneStatementTakes) {
    // 1,300 fires of 650 jobs, two times 3 s apart and a third 1 h later: several INSERT chunks,
    // several read-back terms; 100 of them exist already.
    std::vector<Fire> batch;
    for (std::int64_t job = 1; job <= 650; ++job) {
        batch.push_back(Sample(job, 1'000'000 + job));
        batch.push_back(Sample(job, job % 2 == 0 ? 1'003'000 + job : 4'600'000 + job));
    }
    std::map<std::size_t, std::int64_t> existing;
    for (std::size_t i = 0; i < batch.size(); i += 13) {
        auto id = Insert(batch[i]);
        ASSERT_TRUE(id);
        existing[i] = *id;
    }
    auto stored =
        db().Run([&](soci::session& s) { return FireRepository::InsertManyIfAbsent(s, db().dialect(), batch); });
    ASSERT_TRUE(stored.ok()) << stored.status().ToString();
    ASSERT_EQ(stored->size(), batch.size());
    std::set<std::int64_t> ids;
    for (std::size_t i = 0; i < batch.size(); ++i) {
        ASSERT_TRUE((*stored)[i]) << i;
        ids.insert((*stored)[i]->id);
        if (existing.contains(i)) {
            EXPECT_EQ((*stored)[i]->id, existing[i]) << i;
        }
    }
    EXPECT_EQ(ids.size(), batch.size());
    auto count = db().Run([](soci::session& s) {
        int n = 0;
        s << "SELECT COUNT(*) FROM job_fire", soci::into(n);
        return n;
    });
    EXPECT_EQ(*count, static_cast<int>(batch.size()));
    // Every returned id names the row of its own key.
    FireRepository fires(db());
    for (std::size_t i = 0; i < batch.size(); i += 97) {
        auto got = fires.Get((*stored)[i]->id);
        ASSERT_TRUE(got.ok());
        EXPECT_EQ(got->job_id, batch[i].job_id);
        EXPECT_EQ(got->scheduled_time, batch[i].scheduled_time);
    }
}

TEST_P(FireRepositoryTest, TransitionsAreCompareAndSet) {
    FireRepository fires(db());
    auto id = Insert(Sample(1, 1000));
    ASSERT_TRUE(id);
    ASSERT_TRUE(fires
                    .Transition(*id, {FireStatus::kPending}, FireStatus::kDispatching,
                                {.executor_address = "10.0.0.1:9999", .dispatched_at = 1005})
                    .ok());
    // A second claimer loses: the fire is no longer pending.
    Status lost = fires.Transition(*id, {FireStatus::kPending}, FireStatus::kDispatching);
    EXPECT_EQ(lost.code(), Code::kAborted);
    EXPECT_NE(lost.message().find("is dispatching"), std::string::npos) << lost.message();

    ASSERT_TRUE(fires.Transition(*id, {FireStatus::kDispatching}, FireStatus::kRunning, {.started_at = 1010}).ok());
    // Callback and timeout race: exactly one wins.
    Status success = fires.Transition(*id, {FireStatus::kRunning}, FireStatus::kSucceeded,
                                      {.finished_at = 1500, .result_code = 0, .result_message = "ok"});
    Status timeout = fires.Transition(*id, {FireStatus::kRunning}, FireStatus::kTimeout, {.finished_at = 1600});
    EXPECT_TRUE(success.ok());
    EXPECT_EQ(timeout.code(), Code::kAborted);

    auto got = fires.Get(*id);
    EXPECT_EQ(got->status, FireStatus::kSucceeded);
    EXPECT_EQ(got->executor_address, "10.0.0.1:9999");
    EXPECT_EQ(got->dispatched_at, 1005);
    EXPECT_EQ(got->started_at, 1010);
    EXPECT_EQ(got->finished_at, 1500);
    EXPECT_EQ(got->result_code, 0);
    EXPECT_EQ(got->result_message, "ok");
    EXPECT_EQ(fires.Transition(424242, {FireStatus::kPending}, FireStatus::kLost).code(), Code::kNotFound);
}

TEST_P(FireRepositoryTest, ConcurrentClaimsHaveExactlyOneWinner) {
    auto id = Insert(Sample(1, 1000));
    ASSERT_TRUE(id);
    constexpr int kClaimers = 6;
    std::vector<std::shared_ptr<db::Database>> pools;
    pools.reserve(kClaimers);
    for (int i = 0; i < kClaimers; ++i) pools.push_back(test_db().OpenAnother());
    std::atomic<int> winners{0};
    std::atomic<int> losers{0};
    std::vector<std::thread> threads;
    threads.reserve(kClaimers);
    for (int i = 0; i < kClaimers; ++i) {
        threads.emplace_back([&, i] {
            FireRepository fires(*pools[i]);
            Status s = fires.Transition(*id, {FireStatus::kPending}, FireStatus::kDispatching,
                                        {.assigned_node = "claimer-" + std::to_string(i)});
            if (s.ok()) ++winners;
            if (s.code() == Code::kAborted) ++losers;
        });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(winners.load(), 1);
    EXPECT_EQ(losers.load(), kClaimers - 1);
}

TEST_P(FireRepositoryTest, ListFiltersNewestFirstWithCursor) {
    for (std::int64_t t = 1; t <= 5; ++t) ASSERT_TRUE(Insert(Sample(1, t * 1000)));
    for (std::int64_t t = 1; t <= 2; ++t) ASSERT_TRUE(Insert(Sample(2, t * 1000)));
    FireRepository fires(db());
    auto job1 = fires.List({.job_id = 1});
    ASSERT_TRUE(job1.ok()) << job1.status().ToString();
    ASSERT_EQ(job1->size(), 5u);
    EXPECT_EQ(job1->front().scheduled_time, 5000);  // newest first
    auto window = fires.List({.job_id = 1, .scheduled_from = 2000, .scheduled_to = 4000});
    ASSERT_EQ(window->size(), 2u);
    auto page = fires.List({.limit = 3});
    ASSERT_EQ(page->size(), 3u);
    auto next = fires.List({.before_id = page->back().id, .limit = 10});
    EXPECT_EQ(next->size(), 4u);
    ASSERT_TRUE(fires.Transition(job1->front().id, {FireStatus::kPending}, FireStatus::kSkipped).ok());
    auto skipped = fires.List({.status = FireStatus::kSkipped});
    ASSERT_EQ(skipped->size(), 1u);
    EXPECT_EQ(skipped->front().id, job1->front().id);
}

TEST_P(FireRepositoryTest, ListAssignedByNodeAndStatus) {
    auto a = Insert(Sample(1, 3000));
    auto b = Insert(Sample(1, 1000));
    Fire other = Sample(2, 500);
    other.assigned_node = "node-b";
    ASSERT_TRUE(Insert(other));
    FireRepository fires(db());
    ASSERT_TRUE(fires.Transition(*a, {FireStatus::kPending}, FireStatus::kDispatching).ok());
    auto pending = db().Run(
        [](soci::session& s) { return FireRepository::ListAssigned(s, "node-a", {FireStatus::kPending}, 10); });
    ASSERT_TRUE(pending.ok());
    ASSERT_EQ(pending->size(), 1u);
    EXPECT_EQ(pending->front().id, *b);
    auto both = db().Run([](soci::session& s) {
        return FireRepository::ListAssigned(s, "node-a", {FireStatus::kPending, FireStatus::kDispatching}, 10);
    });
    ASSERT_EQ(both->size(), 2u);
    EXPECT_EQ(both->front().scheduled_time, 1000);
}

TEST_P(FireRepositoryTest, DueAtDefaultsToTheScheduledTimeAndCanBeLater) {
    auto normal = Insert(Sample(1, 1000));
    Fire retry = Sample(1, 1000);
    retry.kind = FireKind::kRetry;
    retry.attempt = 1;
    retry.due_at = 9000;
    auto delayed = Insert(retry);
    FireRepository fires(db());
    EXPECT_EQ(fires.Get(*normal)->due_at, 1000);
    EXPECT_EQ(fires.Get(*delayed)->due_at, 9000);
}

// Integer columns read back exactly at the edges of their types, and NULL as absent: on MySQL
// they are fetched as text and read by impl::IntColumns, not by soci (whose istringstream per
// integer was a third of a node's CPU).
TEST_P(FireRepositoryTest, IntegerColumnsReadBackExactlyAtTheEdgesOfTheirTypes) {
    constexpr auto kMax64 = std::numeric_limits<std::int64_t>::max();
    constexpr auto kMaxInt = std::numeric_limits<int>::max();
    Fire edge = Sample(kMax64, kMax64 - 1);
    edge.epoch = kMax64;
    edge.attempt = kMaxInt;
    edge.shard_index = kMaxInt - 1;
    edge.shard_total = kMaxInt;
    edge.due_at = kMax64;
    edge.workflow_run_id = kMax64 - 2;
    Fire negative = Sample(-7, -1000);
    negative.due_at = -999;
    const auto edge_id = Insert(edge);
    const auto negative_id = Insert(negative);
    ASSERT_TRUE(edge_id && negative_id);

    FireRepository fires(db());
    auto got = fires.Get(*edge_id);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->id, *edge_id);
    EXPECT_EQ(got->job_id, kMax64);
    EXPECT_EQ(got->scheduled_time, kMax64 - 1);
    EXPECT_EQ(got->epoch, kMax64);
    EXPECT_EQ(got->attempt, kMaxInt);
    EXPECT_EQ(got->shard_index, kMaxInt - 1);
    EXPECT_EQ(got->shard_total, kMaxInt);
    EXPECT_EQ(got->due_at, kMax64);
    EXPECT_EQ(got->workflow_run_id, kMax64 - 2);
    EXPECT_EQ(got->dispatch_epoch, std::nullopt);
    EXPECT_EQ(got->dispatched_at, std::nullopt);

    auto listed = db().Run(
        [](soci::session& s) { return FireRepository::ListAssigned(s, "node-a", {FireStatus::kPending}, 10); });
    ASSERT_TRUE(listed.ok()) << listed.status().ToString();
    ASSERT_EQ(listed->size(), 2u);
    EXPECT_EQ(listed->front().id, *negative_id);  // due first
    EXPECT_EQ(listed->front().job_id, -7);
    EXPECT_EQ(listed->front().scheduled_time, -1000);
    EXPECT_EQ(listed->front().due_at, -999);
    EXPECT_EQ(listed->front().workflow_run_id, std::nullopt);
    EXPECT_EQ(listed->back().workflow_run_id, kMax64 - 2);
}

TEST_P(FireRepositoryTest, OrphansAreUnassignedOrOnDeadNodesAndCanBeReassigned) {
    Fire unassigned = Sample(1, 1000);
    unassigned.assigned_node.reset();
    auto u = Insert(unassigned);
    Fire dead = Sample(1, 2000);
    dead.assigned_node = "node-dead";
    auto d = Insert(dead);
    auto alive = Insert(Sample(1, 3000));  // node-a
    Fire dead_running = Sample(1, 4000);
    dead_running.assigned_node = "node-dead";
    auto dr = Insert(dead_running);
    FireRepository fires(db());
    ASSERT_TRUE(fires.Transition(*dr, {FireStatus::kPending}, FireStatus::kRunning).ok());

    auto orphans = db().Run([](soci::session& s) {
        return FireRepository::ListOrphans(s, {"node-a", "node-b"}, {FireStatus::kPending}, 10);
    });
    ASSERT_TRUE(orphans.ok()) << orphans.status().ToString();
    ASSERT_EQ(orphans->size(), 2u);
    EXPECT_EQ((*orphans)[0].id, *u);
    EXPECT_EQ((*orphans)[1].id, *d);
    // With no live node at all, every pending fire is an orphan.
    auto all =
        db().Run([](soci::session& s) { return FireRepository::ListOrphans(s, {}, {FireStatus::kPending}, 10); });
    EXPECT_EQ(all->size(), 3u);

    auto moved =
        db().Run([&](soci::session& s) { return FireRepository::Reassign(s, *d, {FireStatus::kPending}, "node-b"); });
    EXPECT_TRUE(*moved);
    EXPECT_EQ(fires.Get(*d)->assigned_node, "node-b");
    auto handed_back = db().Run([](soci::session& s) { return FireClaims::HandBack(s, "node-b", std::nullopt); });
    EXPECT_EQ(*handed_back, 1);
    EXPECT_EQ(fires.Get(*d)->assigned_node, std::nullopt);
    auto not_pending =
        db().Run([&](soci::session& s) { return FireRepository::Reassign(s, *dr, {FireStatus::kPending}, "node-b"); });
    EXPECT_FALSE(*not_pending);
    (void)alive;
}

TEST_P(FireRepositoryTest, ReassignManyMovesOnlyTheFiresStillInTheExpectedState) {
    FireRepository fires(db());
    std::vector<std::int64_t> ids;
    for (int i = 0; i < 5; ++i) {
        Fire f = Sample(1, std::int64_t{1000} * (i + 1));
        f.assigned_node = "node-dead";
        auto id = Insert(f);
        ASSERT_TRUE(id);
        ids.push_back(*id);
    }
    // One was claimed meanwhile: it must stay where it is.
    ASSERT_TRUE(fires.Transition(ids[2], {FireStatus::kPending}, FireStatus::kDispatching).ok());
    auto moved = db().Run(
        [&](soci::session& s) { return FireRepository::ReassignMany(s, ids, {FireStatus::kPending}, "node-b"); });
    ASSERT_TRUE(moved.ok()) << moved.status().ToString();
    EXPECT_EQ(std::set<std::int64_t>(moved->begin(), moved->end()),
              (std::set<std::int64_t>{ids[0], ids[1], ids[3], ids[4]}));
    for (std::size_t i = 0; i < ids.size(); ++i) {
        EXPECT_EQ(fires.Get(ids[i])->assigned_node, i == 2 ? "node-dead" : "node-b") << i;
    }
    // All pending: all move, no read-back needed.
    const std::vector<std::int64_t> pending = {ids[0], ids[1]};
    auto all = db().Run(
        [&](soci::session& s) { return FireRepository::ReassignMany(s, pending, {FireStatus::kPending}, "node-a"); });
    EXPECT_EQ(*all, pending);
    EXPECT_EQ(fires.Get(ids[0])->assigned_node, "node-a");
}

TEST_P(FireRepositoryTest, FinalTransitionsRaiseTheFollowupFlagUntilCleared) {
    auto a = Insert(Sample(1, 1000));
    auto b = Insert(Sample(1, 2000));
    FireRepository fires(db());
    ASSERT_TRUE(fires.Transition(*a, {FireStatus::kPending}, FireStatus::kFailed, {.followup = true}).ok());
    ASSERT_TRUE(fires.Transition(*b, {FireStatus::kPending}, FireStatus::kDispatching).ok());
    auto flagged = db().Run([](soci::session& s) { return FireRepository::ListFollowups(s, 10); });
    ASSERT_TRUE(flagged.ok()) << flagged.status().ToString();
    ASSERT_EQ(flagged->size(), 1u);
    EXPECT_EQ(flagged->front().id, *a);
    EXPECT_TRUE(flagged->front().followup);
    ASSERT_TRUE(db().Run([&](soci::session& s) { FireRepository::ClearFollowup(s, *a); }).ok());
    EXPECT_TRUE(db().Run([](soci::session& s) { return FireRepository::ListFollowups(s, 10); })->empty());

    // Many at once: only the listed ones are cleared.
    std::vector<std::int64_t> ended;
    for (int i = 0; i < 3; ++i) {
        auto id = Insert(Sample(2, std::int64_t{1000} * (i + 1)));
        ASSERT_TRUE(id);
        ASSERT_TRUE(fires.Transition(*id, {FireStatus::kPending}, FireStatus::kFailed, {.followup = true}).ok());
        ended.push_back(*id);
    }
    const std::vector<std::int64_t> clear = {ended[0], ended[2]};
    ASSERT_TRUE(db().Run([&](soci::session& s) { FireRepository::ClearFollowups(s, clear); }).ok());
    auto left = db().Run([](soci::session& s) { return FireRepository::ListFollowups(s, 10); });
    ASSERT_EQ(left->size(), 1u);
    EXPECT_EQ(left->front().id, ended[1]);
}

// A shard's master follows up only its jobs' fires; shard 0 also every workflow step's fire
// (its leader plans the workflows), and no other shard sees those.
TEST_P(FireRepositoryTest, FollowupsAreListedPerShardWithWorkflowFiresInShardZero) {
    FireRepository fires(db());
    std::map<std::int64_t, std::int64_t> job_of;  // fire id -> job id
    for (std::int64_t job = 1; job <= 6; ++job) {
        auto id = Insert(Sample(job, 1000));
        ASSERT_TRUE(id);
        ASSERT_TRUE(fires.Transition(*id, {FireStatus::kPending}, FireStatus::kFailed, {.followup = true}).ok());
        job_of[*id] = job;
    }
    auto step_id = Insert(StepSample(4, 5000, 77, "load"));
    ASSERT_TRUE(step_id);
    ASSERT_TRUE(fires.Transition(*step_id, {FireStatus::kPending}, FireStatus::kFailed, {.followup = true}).ok());

    const auto jobs_in = [&](const JobShard& shard) {
        std::multiset<std::int64_t> jobs;
        auto listed = db().Run([&](soci::session& s) { return FireRepository::ListFollowups(s, 100, shard); });
        EXPECT_TRUE(listed.ok()) << listed.status().ToString();
        for (const auto& f : *listed) jobs.insert(f.workflow_run_id ? -f.job_id : f.job_id);  // step fires negated
        return jobs;
    };
    EXPECT_EQ(jobs_in({.index = 0, .total = 3}), (std::multiset<std::int64_t>{-4, 3, 6}));
    EXPECT_EQ(jobs_in({.index = 1, .total = 3}), (std::multiset<std::int64_t>{1, 4}));
    EXPECT_EQ(jobs_in({.index = 2, .total = 3}), (std::multiset<std::int64_t>{2, 5}));
    EXPECT_EQ(jobs_in({}).size(), 7u);

    // Clearing the trivial ones is per shard too: shard 2 clears only its jobs' succeeded fires.
    // Rewritten in place (the state machine has no failed -> succeeded): the same fires, now ends
    // that nothing follows.
    ASSERT_TRUE(db().Run([](soci::session& s) {
                        s << "UPDATE job_fire SET status = 'succeeded', followup = 1 WHERE status = 'failed'";
                    })
                    .ok());
    auto cleared = db().Run(
        [](soci::session& s) { return FireRepository::ClearTrivialFollowups(s, JobShard{.index = 2, .total = 3}); });
    ASSERT_TRUE(cleared.ok()) << cleared.status().ToString();
    EXPECT_EQ(*cleared, 2);
    EXPECT_EQ(jobs_in({.index = 2, .total = 3}), (std::multiset<std::int64_t>{}));
    EXPECT_EQ(jobs_in({.index = 1, .total = 3}), (std::multiset<std::int64_t>{1, 4}));
}

SCHED_DB_TEST_SUITE(FireRepositoryTest);

}  // namespace
}  // namespace sched::store
