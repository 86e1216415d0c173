#include "sched/store/fire_results.hpp"

#include <atomic>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "sched/common/testing/wait_for.hpp"
#include "sched/store/fire_log.hpp"
#include "sched/store/fire_metrics.hpp"
#include "sched/store/job.hpp"
#include "sched/store/registry.hpp"
#include "store_test_base.hpp"

namespace sched::store {

using model::Fire;
using model::FireKind;
using model::FireKindName;
using model::FireReason;
using model::FireStatus;
using model::FireStatusName;
namespace {

constexpr std::int64_t kGoneJob = 999'999;
constexpr std::int64_t kMissingFire = 987'654'321;

class FireResultsTest : public StoreTest {
  protected:
    void SetUpDatabase() override {
        pay_job_ = CreateManualJob("charge", "pay");
        shop_job_ = CreateManualJob("restock", "shop");
        ASSERT_TRUE(ExecutorRepository(db()).Heartbeat({.app = "pay", .address = "10.0.0.1:7000"}).ok());
        ASSERT_TRUE(ExecutorRepository(db()).Heartbeat({.app = "pay", .address = "10.0.0.2:7000"}).ok());
        ASSERT_TRUE(ExecutorRepository(db()).Heartbeat({.app = "shop", .address = "10.0.0.9:7000"}).ok());
    }

    // A fixed-delay job of app pay (its next time counts from a fire's end, so every end of
    // one needs the master); its id, 0 if it could not be created.
    std::int64_t CreateFixedDelayJob() {
        return CreateJob({.name = "poll",
                          .app = "pay",
                          .handler = "echo",
                          .schedule_type = sched::ScheduleType::kFixedDelay,
                          .schedule_expr = "10s"})
            .id;
    }

    // A fire left pending, or dispatching (under `dispatch_epoch`, if any), then running on
    // `running_on`, then ended as `ended`.
    struct FireSetup {
        std::int64_t job_id = 0;
        std::optional<std::int64_t> dispatch_epoch = 5;
        std::optional<std::string> running_on;
        std::optional<std::int64_t> started_at;
        std::optional<FireStatus> ended;
        bool pending = false;
    };
    std::int64_t MakeFire(const FireSetup& setup) {
        Fire f;
        f.job_id = setup.job_id;
        f.scheduled_time = ++next_time_;
        f.epoch = 1;
        auto id = db().Run([&](soci::session& s) { return FireRepository::InsertIfAbsent(s, db().dialect(), f); });
        EXPECT_TRUE(id.ok() && *id);
        if (!id.ok() || !*id) return 0;
        FireRepository fires(db());
        if (setup.pending) return **id;
        EXPECT_TRUE(fires
                        .Transition(**id, {FireStatus::kPending}, FireStatus::kDispatching,
                                    {.dispatch_epoch = setup.dispatch_epoch, .dispatched_at = 1})
                        .ok());
        if (setup.running_on) {
            EXPECT_TRUE(fires
                            .Transition(**id, {FireStatus::kDispatching}, FireStatus::kRunning,
                                        {.executor_address = setup.running_on, .started_at = setup.started_at})
                            .ok());
        }
        if (setup.ended) {
            EXPECT_TRUE(fires
                            .Transition(**id, {FireStatus::kDispatching, FireStatus::kRunning}, *setup.ended,
                                        {.finished_at = 50, .result_code = 0, .result_message = "done"})
                            .ok());
        }
        return **id;
    }

    // Every column a result may change.
    // State, with the fire's own id in its message replaced: what two runs of one scenario on
    // different fires compare.
    std::string StateWithoutId(std::int64_t id) {
        std::string state = State(id);
        const std::string name = "for " + std::to_string(id) + "|";
        if (auto at = state.find(name); at != std::string::npos) state.replace(at, name.size(), "for #|");
        return state;
    }
    std::string State(std::int64_t id) {
        auto f = FireRepository(db()).Get(id);
        if (!f.ok()) return "missing";
        return std::string(FireStatusName(f->status)) + "|" + f->executor_address.value_or("-") + "|" +
               std::to_string(f->finished_at.value_or(-1)) + "|" + f->result_message.value_or("-") + "|" +
               std::to_string(f->result_code.value_or(-1)) + "|" + std::to_string(f->followup) + "|" +
               std::to_string(f->started_at.value_or(-1)) + "|" + std::to_string(f->attempt) + "|" +
               std::to_string(f->dispatch_epoch.value_or(-1));
    }

    static ExecutorResult Item(std::int64_t fire, int attempt, std::optional<std::int64_t> epoch,
                               std::optional<std::string> address, FireStatus status = FireStatus::kSucceeded) {
        return {.fire_id = fire,
                .attempt = attempt,
                .epoch = epoch,
                .address = std::move(address),
                .status = status,
                .result_code = status == FireStatus::kSucceeded ? 0 : 13,
                .result_message = "msg '\\ for " + std::to_string(fire),
                .started_ms = 7,
                .finished_ms = 9};
    }

    // One set of fires covering every outcome, and a batch over them.
    struct Scenario {
        std::vector<std::int64_t> fires;
        std::vector<ExecutorResult> batch;
    };
    Scenario Build() {
        Scenario sc;
        const auto fire = [&](const FireSetup& setup) {
            sc.fires.push_back(MakeFire(setup));
            return sc.fires.back();
        };
        const std::string a1 = "10.0.0.1:7000";
        const auto running = fire({.job_id = pay_job_, .running_on = a1});
        const auto running_started = fire({.job_id = pay_job_, .running_on = a1, .started_at = 3});
        const auto dispatching = fire({.job_id = pay_job_});
        const auto dispatching_legacy = fire({.job_id = pay_job_});
        const auto dispatching_no_epoch = fire({.job_id = pay_job_, .dispatch_epoch = std::nullopt});
        const auto succeeded = fire({.job_id = pay_job_, .running_on = a1, .ended = FireStatus::kSucceeded});
        const auto failed = fire({.job_id = pay_job_, .running_on = a1, .ended = FireStatus::kFailed});
        const auto pending = fire({.job_id = pay_job_, .pending = true});
        const auto shop = fire({.job_id = shop_job_, .running_on = "10.0.0.9:7000"});
        const auto gone = fire({.job_id = kGoneJob, .running_on = a1});
        const auto stale_attempt = fire({.job_id = pay_job_, .running_on = a1});
        const auto stale_epoch = fire({.job_id = pay_job_, .running_on = a1});
        const auto wrong_running = fire({.job_id = pay_job_, .running_on = a1});
        const auto wrong_dispatching = fire({.job_id = pay_job_});
        const auto twice = fire({.job_id = pay_job_, .running_on = a1});
        const auto resent = fire({.job_id = pay_job_});
        sc.batch = {
            Item(running, 0, 5, a1),
            Item(twice, 0, 5, a1),
            Item(running_started, 0, 5, a1, FireStatus::kFailed),
            Item(dispatching, 0, 5, "10.0.0.2:7000", FireStatus::kTimeout),
            Item(dispatching_legacy, 0, std::nullopt, std::nullopt),
            Item(dispatching_no_epoch, 0, 8, a1),
            Item(succeeded, 0, 5, a1),
            Item(failed, 0, 5, a1),
            Item(pending, 0, 5, a1),
            Item(kMissingFire, 0, 5, a1),
            Item(shop, 0, 5, "10.0.0.9:7000"),
            Item(gone, 0, 5, a1),
            Item(stale_attempt, 1, 5, a1),
            Item(stale_epoch, 0, 4, a1),
            Item(wrong_running, 0, 5, "10.0.0.2:7000"),
            Item(wrong_dispatching, 0, 5, "10.0.0.77:7000"),
            Item(resent, 0, 5, a1, FireStatus::kKilled),
            Item(twice, 0, 5, a1, FireStatus::kFailed),
            Item(resent, 0, 5, a1, FireStatus::kKilled),
            Item(twice, 0, 5, a1),
        };
        return sc;
    }

    static bool PayOnly(const std::string& app) { return app == "pay"; }

    // A success of each fire in `ids` (attempt 0, epoch 5) from 10.0.0.1:7000.
    static std::vector<ExecutorResult> ResultsFrom(const std::vector<std::int64_t>& ids) {
        std::vector<ExecutorResult> batch;
        batch.reserve(ids.size());
        for (auto id : ids) batch.push_back(Item(id, 0, 5, "10.0.0.1:7000"));
        return batch;
    }

    // What ApplyManyRacing saw.
    struct Raced {
        std::vector<std::string> outcomes;  // the batch's, by name
        int checks = 0;                     // registration checks, over every round
    };
    // ApplyMany with a change between the batch's read and its write: the first registration
    // check runs `statement` on the fire `fire` (:id).
    Raced ApplyManyRacing(const std::vector<ExecutorResult>& batch, const std::string& statement, std::int64_t fire) {
        Raced raced;
        auto outcomes = db().InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
            const auto race = [&](const std::string&) {
                if (++raced.checks == 1) s << statement, soci::use(fire);
                return true;
            };
            return FireResults::ApplyMany(s, batch, race);
        });
        EXPECT_TRUE(outcomes.ok()) << outcomes.status().ToString();
        if (outcomes.ok()) raced.outcomes = Names(*outcomes);
        return raced;
    }

    // ApplyMany, with the statements it ran counted by the server (a MySQL session's Questions
    // counter counts every statement it ran) into `statements`.
    Result<std::vector<ResultOutcome>> ApplyManyCounted(const std::vector<ExecutorResult>& batch, long long& statements,
                                                        bool alone = false) {
        return db().InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
            const long long before = StatementsRun(s);
            auto out = alone ? FireResults::TryApplyMany(s, batch, PayOnly).value_or(std::vector<ResultOutcome>{})
                             : FireResults::ApplyMany(s, batch, PayOnly);
            statements = StatementsRun(s) - before - 1;  // not the second SHOW
            return out;
        });
    }

    std::vector<ResultOutcome> ApplyMany(const std::vector<ExecutorResult>& batch) {
        auto outcomes = db().InTransaction(db::TxMode::kWrite,
                                           [&](soci::session& s) { return FireResults::ApplyMany(s, batch, PayOnly); });
        EXPECT_TRUE(outcomes.ok()) << outcomes.status().ToString();
        return outcomes.ok() ? *outcomes : std::vector<ResultOutcome>{};
    }
    std::vector<ResultOutcome> ApplyOneByOne(const std::vector<ExecutorResult>& batch) {
        auto outcomes = db().InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
            std::vector<ResultOutcome> out;
            out.reserve(batch.size());
            for (const auto& r : batch) out.push_back(FireRepository::ApplyResult(s, r, PayOnly));
            return out;
        });
        EXPECT_TRUE(outcomes.ok()) << outcomes.status().ToString();
        return outcomes.ok() ? *outcomes : std::vector<ResultOutcome>{};
    }

    // As the callback route applies a batch on MySQL: ApplyManyAutocommit on a session in
    // autocommit mode, then ApplyMany in a transaction for what it left undecided, merged in
    // input order. `autocommit_decided` counts the items the first decided.
    std::vector<ResultOutcome> ApplyLikeTheCallback(const std::vector<ExecutorResult>& batch,
                                                    std::size_t* autocommit_decided = nullptr) {
        auto first = db().Run([&](soci::session& s) { return FireResults::ApplyManyAutocommit(s, batch, PayOnly); });
        EXPECT_TRUE(first.ok()) << first.status().ToString();
        if (!first.ok()) return {};
        std::vector<std::optional<ResultOutcome>> decided = *first;
        std::vector<std::size_t> rest;
        std::vector<ExecutorResult> undecided;
        for (std::size_t i = 0; i < batch.size(); ++i) {
            if (decided[i]) continue;
            rest.push_back(i);
            undecided.push_back(batch[i]);
        }
        if (autocommit_decided) *autocommit_decided = batch.size() - rest.size();
        const auto later = ApplyMany(undecided);
        EXPECT_EQ(later.size(), rest.size());
        for (std::size_t k = 0; k < rest.size() && k < later.size(); ++k) decided[rest[k]] = later[k];
        std::vector<ResultOutcome> out;
        for (const auto& o : decided) out.push_back(o.value_or(ResultOutcome::kNotFound));
        return out;
    }

    static std::vector<std::string> Names(const std::vector<ResultOutcome>& outcomes) {
        std::vector<std::string> names;
        names.reserve(outcomes.size());
        for (auto o : outcomes) names.emplace_back(ResultOutcomeName(o));
        return names;
    }

    // `count` running fires of the pay job on 10.0.0.1:7000 (the first `dispatching` of them
    // left dispatching), written in one transaction.
    std::vector<std::int64_t> ManyFires(int count, int dispatching) {
        auto ids = db().InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
            std::vector<std::int64_t> out;
            for (int i = 0; i < count; ++i) {
                Fire f;
                f.job_id = pay_job_;
                f.scheduled_time = ++next_time_;
                f.epoch = 1;
                f.status = i < dispatching ? FireStatus::kDispatching : FireStatus::kRunning;
                out.push_back(*FireRepository::InsertIfAbsent(s, db().dialect(), f));
            }
            s << "UPDATE job_fire SET dispatch_epoch = 5, executor_address = '10.0.0.1:7000' "
                 "WHERE status = 'running'";
            s << "UPDATE job_fire SET dispatch_epoch = 5 WHERE status = 'dispatching'";
            return out;
        });
        EXPECT_TRUE(ids.ok()) << ids.status().ToString();
        return ids.ok() ? *ids : std::vector<std::int64_t>{};
    }

    std::int64_t pay_job_ = 0;
    std::int64_t shop_job_ = 0;
    std::int64_t next_time_ = 1000;
};

TEST_P(FireResultsTest, ABatchEndsExactlyAsTheItemsOneByOne) {
    const Scenario batched = Build();
    const Scenario single = Build();
    const auto many = ApplyMany(batched.batch);
    const auto one_by_one = ApplyOneByOne(single.batch);
    EXPECT_EQ(Names(many), Names(one_by_one));
    EXPECT_EQ(Names(many),
              (std::vector<std::string>{"applied",        "applied",   "applied",       "applied",     "applied",
                                        "applied",        "duplicate", "conflict",      "conflict",    "not_found",
                                        "forbidden",      "forbidden", "stale_attempt", "stale_epoch", "wrong_executor",
                                        "wrong_executor", "applied",   "conflict",      "duplicate",   "duplicate"}));
    ASSERT_EQ(batched.fires.size(), single.fires.size());
    for (std::size_t i = 0; i < batched.fires.size(); ++i) {
        EXPECT_EQ(StateWithoutId(batched.fires[i]), StateWithoutId(single.fires[i])) << "fire #" << i;
    }
    // Spot checks of what the comparison relies on.
    EXPECT_EQ(State(batched.fires[2]), "timeout|10.0.0.2:7000|9|msg '\\ for " + std::to_string(batched.fires[2]) +
                                           "|13|1|7|0|5");           // dispatching: the address is recorded
    EXPECT_EQ(State(batched.fires[1]).substr(0, 10), "failed|10.");  // running_started keeps started_at 3
    EXPECT_NE(State(batched.fires[1]).find("|3|0|5"), std::string::npos);
}

// Without a transaction (MySQL): a batch that names each fire once and carries no log is
// decided by a SELECT and an UPDATE, every outcome as one by one; a batch that names a fire
// twice is left whole to ApplyMany.
TEST_P(FireResultsTest, TheUsualBatchIsDecidedWithoutATransactionExactlyAsOneByOne) {
    const auto first_of_each = [](const std::vector<ExecutorResult>& batch) {
        std::vector<ExecutorResult> out;
        std::set<std::int64_t> seen;
        for (const auto& r : batch) {
            if (seen.insert(r.fire_id).second) out.push_back(r);
        }
        return out;
    };
    const Scenario autocommit = Build();
    const Scenario single = Build();
    std::size_t decided = 0;
    const auto outcomes = ApplyLikeTheCallback(first_of_each(autocommit.batch), &decided);
    EXPECT_EQ(Names(outcomes), Names(ApplyOneByOne(first_of_each(single.batch))));
    EXPECT_EQ(decided, db().backend() == db::Backend::kMySql ? outcomes.size() : 0u);
    for (std::size_t i = 0; i < autocommit.fires.size(); ++i) {
        EXPECT_EQ(StateWithoutId(autocommit.fires[i]), StateWithoutId(single.fires[i])) << "fire #" << i;
    }

    const Scenario repeats = Build();
    auto untouched =
        db().Run([&](soci::session& s) { return FireResults::ApplyManyAutocommit(s, repeats.batch, PayOnly); });
    ASSERT_TRUE(untouched.ok()) << untouched.status().ToString();
    for (const auto& o : *untouched) EXPECT_FALSE(o) << "a fire named twice: the whole batch goes to ApplyMany";
    EXPECT_EQ(State(repeats.fires[0]).substr(0, 8), "running|");
}

// A concurrent change refuses one row of the UPDATE: the rows it moved are applied (read back
// holding their item's end), the refused item is left to ApplyMany, which judges it on the
// fire as it is now. Two statements, no BEGIN or COMMIT, in the usual case.
TEST_P(FireResultsTest, WithoutATransactionALostRowIsLeftUndecidedAndTheMovedOnesAreApplied) {
    if (db().backend() != db::Backend::kMySql) GTEST_SKIP() << "MySQL only: SQLite batches run in a transaction";
    const auto ids = ManyFires(3, 1);
    const std::vector<ExecutorResult> batch = ResultsFrom(ids);
    int calls = 0;
    auto first = db().Run([&](soci::session& s) {
        const auto race = [&](const std::string&) {
            if (++calls == 1) {
                s << "UPDATE job_fire SET status = 'killed', finished_at = 3 WHERE id = :id", soci::use(ids[0]);
            }
            return true;
        };
        return FireResults::ApplyManyAutocommit(s, batch, race);
    });
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    ASSERT_EQ(first->size(), 3u);
    EXPECT_FALSE((*first)[0]);
    EXPECT_EQ((*first)[1], ResultOutcome::kApplied);
    EXPECT_EQ((*first)[2], ResultOutcome::kApplied);
    EXPECT_EQ(State(ids[0]).substr(0, 7), "killed|") << State(ids[0]);
    EXPECT_EQ(State(ids[1]), "succeeded|10.0.0.1:7000|9|msg '\\ for " + std::to_string(ids[1]) + "|0|0|7|0|5");
    EXPECT_EQ(Names(ApplyMany({batch[0]})), (std::vector<std::string>{"conflict"}));

    const auto more = ManyFires(40, 10);
    long long statements = 0;
    auto counted = db().Run([&](soci::session& s) {
        const long long before = StatementsRun(s);
        auto out = FireResults::ApplyManyAutocommit(s, ResultsFrom(more), PayOnly);
        statements = StatementsRun(s) - before - 1;  // not the second SHOW
        return out;
    });
    ASSERT_TRUE(counted.ok()) << counted.status().ToString();
    for (const auto& o : *counted) EXPECT_EQ(o, ResultOutcome::kApplied);
    EXPECT_EQ(statements, 2);
}

TEST_P(FireResultsTest, TheAppliedItemsJobsComeWithTheOutcomesAsAJoinWouldReadThem) {
    const Scenario sc = Build();
    auto applied = db().InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
        std::vector<FireJob> jobs;
        const auto outcomes = FireResults::ApplyMany(s, sc.batch, PayOnly, &jobs);
        std::vector<std::int64_t> applied_ids;
        for (std::size_t i = 0; i < outcomes.size(); ++i) {
            if (outcomes[i] == ResultOutcome::kApplied) applied_ids.push_back(sc.batch[i].fire_id);
        }
        return std::make_pair(jobs, JobsOfFires(s, applied_ids));
    });
    ASSERT_TRUE(applied.ok()) << applied.status().ToString();
    const auto key = [](const std::vector<FireJob>& jobs) {
        std::multiset<std::string> out;
        for (const auto& j : jobs) out.insert(std::to_string(j.fire_id) + "/" + std::to_string(j.job_id) + "/" + j.app);
        return out;
    };
    const auto& [jobs, joined] = *applied;
    EXPECT_EQ(key(jobs), key(joined));
    EXPECT_EQ(jobs.size(), 7u);  // the seven applied items of Build(), all of the pay job
    for (const auto& j : jobs) EXPECT_EQ(j.app, "pay");
}

TEST_P(FireResultsTest, ABatchOverOneChunkIsAppliedWhole) {
    const auto ids = ManyFires(600, 100);
    std::vector<ExecutorResult> batch = ResultsFrom(ids);
    const auto outcomes = ApplyMany(batch);
    ASSERT_EQ(outcomes.size(), ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
        ASSERT_EQ(outcomes[i], ResultOutcome::kApplied) << i;
        // followup 0: a success of a manual job needs nothing from the master.
        ASSERT_EQ(State(ids[i]), "succeeded|10.0.0.1:7000|9|msg '\\ for " + std::to_string(ids[i]) + "|0|0|7|0|5");
    }
}

// The master's follow-up flag is raised only by ends that may need it: a success of a job that
// is not fixed-delay is written with the flag down (no second write to clear it), a failure or
// a fixed-delay job's success keeps it; the batch and the one-by-one path agree.
TEST_P(FireResultsTest, ASuccessNeedsNoFollowupUnlessItsJobIsFixedDelay) {
    const std::int64_t delayed = CreateFixedDelayJob();
    ASSERT_NE(delayed, 0);
    for (const bool batched : {true, false}) {
        const auto ok = MakeFire({.job_id = pay_job_, .running_on = "10.0.0.1:7000"});
        const auto bad = MakeFire({.job_id = pay_job_, .running_on = "10.0.0.1:7000"});
        const auto ok_delayed = MakeFire({.job_id = delayed, .running_on = "10.0.0.1:7000"});
        const std::vector<ExecutorResult> batch = {Item(ok, 0, 5, "10.0.0.1:7000"),
                                                   Item(bad, 0, 5, "10.0.0.1:7000", FireStatus::kFailed),
                                                   Item(ok_delayed, 0, 5, "10.0.0.1:7000")};
        const auto outcomes = batched ? ApplyMany(batch) : ApplyOneByOne(batch);
        ASSERT_EQ(outcomes, std::vector<ResultOutcome>(3, ResultOutcome::kApplied)) << batched;
        FireRepository fires(db());
        EXPECT_FALSE(fires.Get(ok)->followup) << batched;
        EXPECT_TRUE(fires.Get(bad)->followup) << batched;
        EXPECT_TRUE(fires.Get(ok_delayed)->followup) << batched;
    }
}

// What the callback route wakes the masters by: each path reports whether an applied end left
// the follow-up flag set, exactly as the rows say, and a refused item raises nothing.
TEST_P(FireResultsTest, ReportsWhetherAnAppliedEndRaisedTheFollowup) {
    const std::int64_t delayed = CreateFixedDelayJob();
    ASSERT_NE(delayed, 0);
    struct Case {
        const char* what;
        std::int64_t job;
        FireStatus end;
        bool followup;
    };
    const Case cases[] = {{"a manual job's success", pay_job_, FireStatus::kSucceeded, false},
                          {"a manual job's kill", pay_job_, FireStatus::kKilled, false},
                          {"a failure", pay_job_, FireStatus::kFailed, true},
                          {"a timeout", pay_job_, FireStatus::kTimeout, true},
                          {"a fixed-delay job's success", delayed, FireStatus::kSucceeded, true}};
    enum class Path { kApplyMany, kTryApplyMany, kAutocommit };
    for (const Path path : {Path::kApplyMany, Path::kTryApplyMany, Path::kAutocommit}) {
        // SQLite decides nothing without a transaction.
        if (path == Path::kAutocommit && db().backend() != db::Backend::kMySql) continue;
        for (const Case& c : cases) {
            SCOPED_TRACE(std::string(c.what) + ", path " + std::to_string(static_cast<int>(path)));
            const auto fire = MakeFire({.job_id = c.job, .running_on = "10.0.0.1:7000"});
            const std::vector<ExecutorResult> batch = {Item(fire, 0, 5, "10.0.0.1:7000", c.end)};
            // The second time the same result is a duplicate: refused, nothing raised.
            for (const auto expected : {ResultOutcome::kApplied, ResultOutcome::kDuplicate}) {
                bool raised = false;
                const auto apply = [&](soci::session& s) -> Result<std::optional<ResultOutcome>> {
                    std::optional<ResultOutcome> first;
                    if (path == Path::kApplyMany) {
                        first = FireResults::ApplyMany(s, batch, PayOnly, nullptr, &raised)[0];
                    } else if (path == Path::kTryApplyMany) {
                        auto out = FireResults::TryApplyMany(s, batch, PayOnly, nullptr, &raised);
                        if (out) first = (*out)[0];
                    } else {
                        first = FireResults::ApplyManyAutocommit(s, batch, PayOnly, nullptr, &raised)[0];
                    }
                    return first;
                };
                auto outcome =
                    path == Path::kAutocommit ? db().Run(apply) : db().InTransaction(db::TxMode::kWrite, apply);
                ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
                ASSERT_EQ(*outcome, expected);
                EXPECT_EQ(raised, c.followup && expected == ResultOutcome::kApplied);
            }
            EXPECT_EQ(FireRepository(db()).Get(fire)->followup, c.followup);
        }
    }
}

// A change between the batch's read and its write (on MySQL the slave's autocommit CAS can land
// there) makes the UPDATE move fewer rows than it names: the batch is judged again on the fires
// as they now are, and nothing is applied twice.
TEST_P(FireResultsTest, ALostCasIsJudgedAgainOnTheFireAsItIsNow) {
    const auto ids = ManyFires(3, 1);
    std::vector<ExecutorResult> batch = ResultsFrom(ids);
    // An operator kills the first fire through the API meanwhile.
    const auto raced =
        ApplyManyRacing(batch, "UPDATE job_fire SET status = 'killed', finished_at = 3 WHERE id = :id", ids[0]);
    EXPECT_EQ(raced.outcomes, (std::vector<std::string>{"conflict", "applied", "applied"}));
    EXPECT_EQ(raced.checks, 6);  // two rounds of three items
    EXPECT_EQ(State(ids[0]).substr(0, 7), "killed|") << State(ids[0]);
    EXPECT_EQ(State(ids[1]), "succeeded|10.0.0.1:7000|9|msg '\\ for " + std::to_string(ids[1]) + "|0|0|7|0|5");
}

// The slave recording `running` on the very instance that reports the result, between the
// batch's read (the fire still `dispatching`) and its write, is the same fire in the same
// hands: applied in the first round, no rollback.
TEST_P(FireResultsTest, ARunningRecordOfTheSameInstanceBetweenReadAndWriteCostsNoSecondRound) {
    const auto ids = ManyFires(3, 1);
    std::vector<ExecutorResult> batch = ResultsFrom(ids);
    const auto raced = ApplyManyRacing(batch,
                                       "UPDATE job_fire SET status = 'running', executor_address = '10.0.0.1:7000', "
                                       "started_at = 2 WHERE id = :id",
                                       ids[0]);
    EXPECT_EQ(raced.outcomes, (std::vector<std::string>{"applied", "applied", "applied"}));
    EXPECT_EQ(raced.checks, 3);  // one round
    // The executor's start time replaces the slave's record of its 202.
    EXPECT_EQ(State(ids[0]), "succeeded|10.0.0.1:7000|9|msg '\\ for " + std::to_string(ids[0]) + "|0|0|7|0|5");
}

// Without a savepoint (a transaction holding nothing else) a lost CAS is the caller's to undo:
// TryApplyMany says so at once, and the batch applied again in a new transaction ends exactly
// as ApplyMany's rounds end it.
TEST_P(FireResultsTest, ALostCasWithoutASavepointAsksTheCallerToRollBack) {
    const auto ids = ManyFires(3, 1);
    const std::vector<ExecutorResult> batch = ResultsFrom(ids);
    int calls = 0;
    auto lost = db().InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Result<int> {
        const auto race = [&](const std::string&) {
            if (++calls == 1)
                s << "UPDATE job_fire SET status = 'killed', finished_at = 3 WHERE id = :id", soci::use(ids[0]);
            return true;
        };
        if (FireResults::TryApplyMany(s, batch, race)) return 0;
        // As the callback route does: roll back what the lost UPDATE wrote (and the kill).
        return Status(Code::kAborted, "lost");
    });
    ASSERT_FALSE(lost.ok());
    EXPECT_EQ(calls, 3);  // one round, then nullopt
    for (auto id : ids) EXPECT_EQ(State(id).find("succeeded"), std::string::npos) << State(id);

    EXPECT_EQ(Names(ApplyMany(batch)), (std::vector<std::string>{"applied", "applied", "applied"}));
    auto again = db().InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
        return FireResults::TryApplyMany(s, batch, PayOnly).value_or(std::vector<ResultOutcome>{});
    });
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ(Names(*again), (std::vector<std::string>{"duplicate", "duplicate", "duplicate"}));
}

// The address most items name is checked by the fires' own SELECT, the others by a read of the
// registrations: either way against each dispatching fire's app (10.0.0.9:7000 is an instance of
// `shop` only, 10.0.0.77:7000 of nothing).
TEST_P(FireResultsTest, EveryAddressOfADispatchingFireMustBeAnInstanceOfItsApp) {
    const auto ids = ManyFires(6, 6);
    const std::vector<ExecutorResult> shop_most = {
        Item(ids[0], 0, 5, "10.0.0.9:7000"), Item(ids[1], 0, 5, "10.0.0.9:7000"), Item(ids[2], 0, 5, "10.0.0.1:7000")};
    EXPECT_EQ(Names(ApplyMany(shop_most)), (std::vector<std::string>{"wrong_executor", "wrong_executor", "applied"}));
    const std::vector<ExecutorResult> pay_most = {
        Item(ids[3], 0, 5, "10.0.0.77:7000"), Item(ids[4], 0, 5, "10.0.0.1:7000"), Item(ids[5], 0, 5, "10.0.0.1:7000")};
    EXPECT_EQ(Names(ApplyMany(pay_most)), (std::vector<std::string>{"wrong_executor", "applied", "applied"}));
    EXPECT_EQ(State(ids[0]).substr(0, 12), "dispatching|") << State(ids[0]);
    EXPECT_EQ(State(ids[4]).substr(0, 24), "succeeded|10.0.0.1:7000|") << State(ids[4]);
}

// Counted by the server: a MySQL session's Questions counter counts every statement it ran.
TEST_P(FireResultsTest, ABatchCostsAStatementPer64Results) {
    if (db().backend() != db::Backend::kMySql) GTEST_SKIP() << "counted with MySQL's session status";
    const auto ids = ManyFires(200, 50);
    std::vector<ExecutorResult> batch = ResultsFrom(ids);
    long long statements = 0;
    auto outcomes = ApplyManyCounted(batch, statements);
    ASSERT_TRUE(outcomes.ok()) << outcomes.status().ToString();
    for (auto o : *outcomes) ASSERT_EQ(o, ResultOutcome::kApplied);
    // The fires (with the registration of their common address), the savepoint, and one UPDATE
    // per 64 results: 200 -> 4. Larger UPDATEs would be fewer statements but cost the server
    // quadratic time: each row scans the CASE lists of its chunk (docs/architecture/callbacks.md).
    EXPECT_EQ(statements, 6);
    // Without the savepoint, in a transaction of its own.
    const auto more = ManyFires(200, 50);
    auto alone = ApplyManyCounted(ResultsFrom(more), statements, true);
    ASSERT_TRUE(alone.ok()) << alone.status().ToString();
    ASSERT_EQ(alone->size(), 200u);
    for (auto o : *alone) ASSERT_EQ(o, ResultOutcome::kApplied);
    EXPECT_EQ(statements, 5);
}

// ---- Logs stored with results (job_fire_log) ----

std::optional<StoredFireLog> StoredLog(db::Database& db, std::int64_t fire_id) {
    auto found = db.Run([&](soci::session& s) { return FireLogs::Find(s, fire_id); });
    EXPECT_TRUE(found.ok()) << found.status().ToString();
    return found.ok() ? *found : std::nullopt;
}

std::vector<ExecutorResult> WithLogs(std::vector<ExecutorResult> batch) {
    for (auto& r : batch) {
        r.log = "line 1 of " + std::to_string(r.fire_id) + "\nstatus " + std::string(FireStatusName(r.status));
        r.log_truncated_bytes = 3;
    }
    return batch;
}

// Stored with an applied result, and with a refused one (duplicate, conflict) that answers the
// dispatch of a fire that ended without it: the run's log whoever recorded the end.
TEST_P(FireResultsTest, ALogIsStoredWithAnAppliedResultOrARefusedOneOfTheSameDispatch) {
    for (const bool batched : {true, false}) {
        SCOPED_TRACE(batched ? "ApplyMany" : "ApplyResult");
        const Scenario sc = Build();
        const auto batch = WithLogs(sc.batch);
        const auto outcomes = batched ? ApplyMany(batch) : ApplyOneByOne(batch);
        ASSERT_EQ(outcomes.size(), batch.size());
        // The last applied item of each fire decides what is stored.
        std::map<std::int64_t, std::string> expected;
        for (std::size_t i = 0; i < batch.size(); ++i) {
            if (outcomes[i] == ResultOutcome::kApplied) expected[batch[i].fire_id] = *batch[i].log;
        }
        ASSERT_FALSE(expected.empty());
        // Build()'s `succeeded` (a repeat: duplicate) and `failed` (another end: conflict) fires
        // ended on a1 at epoch 5 without a log, and their items come from there.
        for (const std::size_t ended : {std::size_t{5}, std::size_t{6}}) {
            for (std::size_t i = 0; i < batch.size(); ++i) {
                if (batch[i].fire_id == sc.fires[ended]) expected.emplace(batch[i].fire_id, *batch[i].log);
            }
        }
        for (const auto& r : batch) {
            const auto stored = StoredLog(db(), r.fire_id);
            const auto want = expected.find(r.fire_id);
            if (want == expected.end()) {
                EXPECT_FALSE(stored) << "fire " << r.fire_id << " was not applied, yet a log is stored";
                continue;
            }
            ASSERT_TRUE(stored) << "fire " << r.fire_id;
            EXPECT_EQ(stored->log, want->second);
            EXPECT_EQ(stored->truncated_bytes, 3);
            EXPECT_GT(stored->stored_at_ms, 1'600'000'000'000);
        }
    }
}

// The fire moved between the batch's read and its write, to another instance: the second round
// refuses the result, and its log is not stored either (it is not that dispatch's).
TEST_P(FireResultsTest, ALostCasStoresNoLog) {
    const auto ids = ManyFires(3, 0);
    const auto batch = WithLogs({Item(ids[0], 0, 5, "10.0.0.1:7000"), Item(ids[1], 0, 5, "10.0.0.1:7000"),
                                 Item(ids[2], 0, 5, "10.0.0.1:7000")});
    // Ended meanwhile, on record as another instance's.
    const auto raced = ApplyManyRacing(batch,
                                       "UPDATE job_fire SET status = 'killed', finished_at = 3, dispatched_at = 1, "
                                       "executor_address = '10.0.0.2:7000' WHERE id = :id",
                                       ids[0]);
    EXPECT_EQ(raced.outcomes, (std::vector<std::string>{"conflict", "applied", "applied"}));
    EXPECT_FALSE(StoredLog(db(), ids[0]));
    ASSERT_TRUE(StoredLog(db(), ids[1]));
    EXPECT_EQ(StoredLog(db(), ids[2])->log, *batch[2].log);
}

// A fire the cluster ended itself - killed through the API, timed out by the slave - and the
// executor's own report of that run coming second: the result is refused as before (duplicate,
// or conflict for another end), and its log is kept. Not replaced once stored, not kept for
// another dispatch (epoch, instance) or a fire never dispatched.
TEST_P(FireResultsTest, TheLogOfAFireTheClusterEndedIsKeptFromTheExecutorsLateReport) {
    const std::string a1 = "10.0.0.1:7000";
    for (const bool batched : {true, false}) {
        SCOPED_TRACE(batched ? "ApplyMany" : "ApplyResult");
        const auto killed = MakeFire({.job_id = pay_job_, .running_on = a1, .ended = FireStatus::kKilled});
        const auto timed_out = MakeFire({.job_id = pay_job_, .running_on = a1, .ended = FireStatus::kTimeout});
        const auto finished_first = MakeFire({.job_id = pay_job_, .running_on = a1, .ended = FireStatus::kKilled});
        const auto other_epoch = MakeFire({.job_id = pay_job_, .running_on = a1, .ended = FireStatus::kKilled});
        const auto other_instance = MakeFire({.job_id = pay_job_, .running_on = a1, .ended = FireStatus::kTimeout});
        const auto lost_dispatching = MakeFire({.job_id = pay_job_, .ended = FireStatus::kLost});
        const auto kept = MakeFire({.job_id = pay_job_, .running_on = a1});
        const std::vector<ExecutorResult> first = WithLogs({Item(kept, 0, 5, a1, FireStatus::kKilled)});
        ASSERT_EQ(Names(batched ? ApplyMany(first) : ApplyOneByOne(first)), std::vector<std::string>{"applied"});
        const auto batch = WithLogs({
            Item(killed, 0, 5, a1, FireStatus::kKilled),
            Item(timed_out, 0, 5, a1, FireStatus::kTimeout),
            Item(finished_first, 0, 5, a1, FireStatus::kSucceeded),
            Item(other_epoch, 0, 4, a1, FireStatus::kKilled),
            Item(other_instance, 0, 5, "10.0.0.2:7000", FireStatus::kTimeout),
            Item(lost_dispatching, 0, 5, "10.0.0.2:7000", FireStatus::kFailed),
            Item(kept, 0, 5, a1, FireStatus::kSucceeded),
        });
        auto second = batch;
        second.back().log = "another log";
        const auto outcomes = batched ? ApplyMany(second) : ApplyOneByOne(second);
        EXPECT_EQ(Names(outcomes), (std::vector<std::string>{"duplicate", "duplicate", "conflict", "duplicate",
                                                             "duplicate", "conflict", "conflict"}));
        for (const std::size_t i : {0, 1, 2}) {
            const auto stored = StoredLog(db(), second[i].fire_id);
            ASSERT_TRUE(stored) << i;
            EXPECT_EQ(stored->log, *second[i].log);
        }
        EXPECT_FALSE(StoredLog(db(), other_epoch));
        EXPECT_FALSE(StoredLog(db(), other_instance));
        // Lost while dispatching, reported by a registered instance of the app: that run's log.
        ASSERT_TRUE(StoredLog(db(), lost_dispatching));
        EXPECT_EQ(StoredLog(db(), kept)->log, *first[0].log);
        // The refusals changed no fire.
        EXPECT_EQ(State(killed).substr(0, 7), "killed|");
        EXPECT_EQ(State(timed_out).substr(0, 8), "timeout|");
    }
}

// ---- A success after the fire was recorded lost ----

class LateSuccessTest : public FireResultsTest {
  protected:
    // A fire dispatched under epoch 5 (running on `running_on` when set), then recorded lost for
    // `reason`; with `followed_up` the master's follow-up ran and planned its retry (`retry`, the
    // retry's state: pending, or dispatching when a slave claimed it).
    struct Lost {
        std::int64_t fire = 0;
        std::int64_t retry = 0;
    };
    Lost MakeLost(std::int64_t job_id, std::optional<std::string> running_on, FireReason reason, bool followed_up,
                  FireStatus retry = FireStatus::kPending, FireKind kind = FireKind::kSchedule) {
        Lost out;
        out.fire = MakeFire({.job_id = job_id, .running_on = std::move(running_on)});
        FireRepository fires(db());
        EXPECT_TRUE(fires
                        .Transition(out.fire, {FireStatus::kDispatching, FireStatus::kRunning}, FireStatus::kLost,
                                    {.finished_at = 40, .result_message = "lost", .reason = reason, .followup = true})
                        .ok());
        if (kind != FireKind::kSchedule) {
            const std::string name(FireKindName(kind));
            EXPECT_TRUE(db().Run([&](soci::session& s) {
                                s << "UPDATE job_fire SET kind = :k WHERE id = :id", soci::use(name),
                                    soci::use(out.fire);
                            })
                            .ok());
        }
        if (!followed_up) return out;
        const auto lost = fires.Get(out.fire);
        Fire r;
        r.job_id = job_id;
        r.scheduled_time = lost->scheduled_time;
        r.kind = FireKind::kRetry;
        r.attempt = 1;
        r.epoch = 1;
        r.due_at = lost->scheduled_time + 60'000;
        auto id = db().InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
            FireRepository::ClearFollowups(s, {out.fire});
            return FireRepository::InsertIfAbsent(s, db().dialect(), r);
        });
        EXPECT_TRUE(id.ok() && *id);
        out.retry = **id;
        if (retry == FireStatus::kDispatching) {
            EXPECT_TRUE(fires
                            .Transition(out.retry, {FireStatus::kPending}, FireStatus::kDispatching,
                                        {.dispatch_epoch = 6, .dispatched_at = 45})
                            .ok());
        }
        return out;
    }
    Fire Get(std::int64_t id) { return *FireRepository(db()).Get(id); }
};

TEST_P(LateSuccessTest, IsAppliedAsSucceededLateAndEndsTheRetryItMadeUnnecessary) {
    const std::string a1 = "10.0.0.1:7000";
    for (const bool batched : {true, false}) {
        SCOPED_TRACE(batched ? "ApplyMany" : "ApplyResult");
        // The slave restarted between the executor's 202 and its record: lost while dispatching.
        const auto lost = MakeLost(pay_job_, std::nullopt, FireReason::kSlaveRestarted, true);
        const auto batch = WithLogs({Item(lost.fire, 0, 5, a1)});
        EXPECT_EQ(Names(batched ? ApplyMany(batch) : ApplyOneByOne(batch)), std::vector<std::string>{"applied"});
        const Fire fire = Get(lost.fire);
        EXPECT_EQ(fire.status, FireStatus::kSucceeded);
        EXPECT_EQ(fire.reason, FireReason::kSucceededLate);
        EXPECT_EQ(fire.result_message,
                  "succeeded after it was recorded lost (slave_restarted): msg '\\ for " + std::to_string(lost.fire));
        EXPECT_EQ(fire.executor_address, a1);
        EXPECT_EQ(fire.started_at, 7);
        EXPECT_EQ(fire.finished_at, 9);
        EXPECT_FALSE(fire.followup);  // its follow-up was done: nothing to do twice
        ASSERT_TRUE(StoredLog(db(), lost.fire));
        const Fire retry = Get(lost.retry);
        EXPECT_EQ(retry.status, FireStatus::kSkipped);
        EXPECT_EQ(retry.reason, FireReason::kSucceededLate);
        EXPECT_NE(retry.result_message->find("fire " + std::to_string(lost.fire) + ") succeeded"), std::string::npos)
            << *retry.result_message;
        EXPECT_TRUE(retry.followup);
        EXPECT_TRUE(retry.finished_at);
        // The same result again: a duplicate, the retry stays skipped.
        EXPECT_EQ(Names(batched ? ApplyMany(batch) : ApplyOneByOne(batch)), std::vector<std::string>{"duplicate"});
    }
}

TEST_P(LateSuccessTest, BeforeTheFollowUpNoRetryIsOwedAndAClaimedRetryRuns) {
    const std::string a1 = "10.0.0.1:7000";
    // Lost while running (its executor taken for dead), follow-up not yet done: the master will
    // see a success, and plan no retry.
    const auto early = MakeLost(pay_job_, a1, FireReason::kExecutorGone, false);
    // A retry some slave already claimed runs: both runs are recorded.
    const auto claimed = MakeLost(pay_job_, std::nullopt, FireReason::kSlaveDied, true, FireStatus::kDispatching);
    const auto outcomes = ApplyMany({Item(early.fire, 0, 5, a1), Item(claimed.fire, 0, 5, a1)});
    EXPECT_EQ(Names(outcomes), (std::vector<std::string>{"applied", "applied"}));
    EXPECT_EQ(Get(early.fire).status, FireStatus::kSucceeded);
    EXPECT_TRUE(Get(early.fire).followup);
    auto listed =
        db().InTransaction(db::TxMode::kWrite, [](soci::session& s) { return FireRepository::ListFollowups(s, 100); });
    ASSERT_TRUE(listed.ok());
    ASSERT_EQ(listed->size(), 1u);
    EXPECT_EQ(listed->front().status, FireStatus::kSucceeded);
    EXPECT_EQ(Get(claimed.fire).status, FireStatus::kSucceeded);
    EXPECT_EQ(Get(claimed.retry).status, FireStatus::kDispatching);
}

TEST_P(LateSuccessTest, MustAnswerTheLostDispatchAndOnlyASuccessIsApplied) {
    const std::string a1 = "10.0.0.1:7000";
    for (const bool batched : {true, false}) {
        SCOPED_TRACE(batched ? "ApplyMany" : "ApplyResult");
        const auto running = MakeLost(pay_job_, a1, FireReason::kExecutorGone, true);
        const auto dispatching = MakeLost(pay_job_, std::nullopt, FireReason::kSlaveDied, true);
        const auto no_epoch = MakeLost(pay_job_, std::nullopt, FireReason::kSlaveDied, true);
        const auto failed = MakeLost(pay_job_, a1, FireReason::kExecutorGone, true);
        const auto step =
            MakeLost(pay_job_, a1, FireReason::kExecutorGone, false, FireStatus::kPending, FireKind::kWorkflow);
        const auto other_app = MakeLost(shop_job_, "10.0.0.9:7000", FireReason::kExecutorGone, true);
        const std::vector<ExecutorResult> batch = {
            Item(running.fire, 0, 4, a1),                        // another dispatch's epoch
            Item(running.fire, 0, 5, "10.0.0.2:7000"),           // not the instance it ran on
            Item(dispatching.fire, 0, 5, "10.0.0.77:7000"),      // not an instance of the app
            Item(no_epoch.fire, 0, std::nullopt, std::nullopt),  // cannot be tied to the dispatch
            Item(failed.fire, 0, 5, a1, FireStatus::kFailed),    // not a success: stays lost
            Item(step.fire, 0, 5, a1),                           // its workflow run judged the loss
            Item(other_app.fire, 0, 5, "10.0.0.9:7000"),         // another app's fire
            Item(running.fire, 1, 5, a1),                        // another attempt
        };
        EXPECT_EQ(Names(batched ? ApplyMany(batch) : ApplyOneByOne(batch)),
                  (std::vector<std::string>{"stale_epoch", "wrong_executor", "wrong_executor", "conflict", "conflict",
                                            "conflict", "forbidden", "stale_attempt"}));
        for (const auto& lost : {running, dispatching, no_epoch, failed, other_app}) {
            EXPECT_EQ(Get(lost.fire).status, FireStatus::kLost);
            EXPECT_EQ(Get(lost.retry).status, FireStatus::kPending);
        }
        EXPECT_EQ(Get(step.fire).status, FireStatus::kLost);
    }
}

// On MySQL the master plans a lost fire's retry from a read of the flagged fires: that read
// locks them, so a late success committed meanwhile either comes before it (no retry planned)
// or waits for the master's commit and then ends the retry it planned.
TEST_P(LateSuccessTest, WaitsForTheMastersFollowUpOfTheLostFireAndEndsTheRetryItPlanned) {
    if (db().backend() != db::Backend::kMySql) GTEST_SKIP() << "SQLite's writers exclude each other anyway";
    const std::string a1 = "10.0.0.1:7000";
    const auto lost = MakeLost(pay_job_, std::nullopt, FireReason::kSlaveRestarted, false);
    const Fire fire = Get(lost.fire);
    std::atomic<bool> read{false};
    std::atomic<bool> go_on{false};
    std::int64_t retry_id = 0;
    std::thread master([&] {
        auto done = db().InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
            const auto followups = FireRepository::ListFollowups(s, 100);
            read = true;
            while (!go_on) std::this_thread::yield();
            Fire r;
            r.job_id = pay_job_;
            r.scheduled_time = fire.scheduled_time;
            r.kind = FireKind::kRetry;
            r.attempt = 1;
            r.epoch = 1;
            r.due_at = fire.scheduled_time + 60'000;
            for (const auto& f : followups) {
                if (f.id == lost.fire && f.status == FireStatus::kLost) {
                    retry_id = FireRepository::InsertIfAbsent(s, db().dialect(), r).value_or(0);
                }
            }
            FireRepository::ClearFollowup(s, lost.fire);
            return Status::Ok();
        });
        EXPECT_TRUE(done.ok()) << done.ToString();
    });
    ASSERT_TRUE(sched::testing::WaitFor([&] { return read.load(); }, std::chrono::seconds(10)));
    // While the master is between its read and its commit, the late success cannot write: it
    // waits on the read's lock (here for a second, then gives up).
    auto blocked = db().InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
        s << "SET SESSION innodb_lock_wait_timeout = 1";
        return FireResults::ApplyMany(s, {Item(lost.fire, 0, 5, a1)}, PayOnly);
    });
    EXPECT_FALSE(blocked.ok()) << "the late success did not wait for the master's follow-up read";
    if (!blocked.ok()) {
        EXPECT_EQ(blocked.status().code(), Code::kDeadlineExceeded) << blocked.status().ToString();
    }
    go_on = true;
    master.join();
    ASSERT_NE(retry_id, 0);
    // Once the master committed, the same result finds the retry it planned and ends it.
    EXPECT_EQ(Names(ApplyMany({Item(lost.fire, 0, 5, a1)})), std::vector<std::string>{"applied"});
    EXPECT_EQ(Get(lost.fire).status, FireStatus::kSucceeded);
    EXPECT_EQ(Get(retry_id).status, FireStatus::kSkipped);
}

SCHED_DB_TEST_SUITE(LateSuccessTest);

TEST_P(FireResultsTest, AnOverlongLogKeepsItsTailAndCountsTheCut) {
    const auto ids = ManyFires(2, 0);
    // Under the bound as sent; the NUL's U+FFFD (3 bytes) takes it 1 byte over, and the cut must
    // not split that character: all 3 bytes go.
    const std::string log = std::string(1, '\0') + std::string(FireLogs::kMaxLogBytes - 8, 'x') + "\xC3\xA9tail";
    ASSERT_LT(log.size(), FireLogs::kMaxLogBytes);
    ExecutorResult r = Item(ids[0], 0, 5, "10.0.0.1:7000");
    r.log = log;
    r.log_truncated_bytes = 100;
    ExecutorResult empty = Item(ids[1], 0, 5, "10.0.0.1:7000");
    empty.log = "";
    const auto outcomes = ApplyOneByOne({r, empty});
    EXPECT_EQ(Names(outcomes), (std::vector<std::string>{"applied", "applied"}));
    const auto stored = StoredLog(db(), ids[0]);
    ASSERT_TRUE(stored);
    EXPECT_EQ(stored->log, std::string(FireLogs::kMaxLogBytes - 8, 'x') + "\xC3\xA9tail");
    EXPECT_EQ(stored->truncated_bytes, 103);
    const auto stored_empty = StoredLog(db(), ids[1]);
    ASSERT_TRUE(stored_empty);
    EXPECT_EQ(stored_empty->log, "");
}

TEST(FireLogsBound, ReplacesInvalidUtf8AndCutsAtACharacterBoundary) {
    std::string log =
        "a\xFF"
        "b\xE2\x82\xAC";  // invalid byte, then a euro sign (3 bytes)
    std::int64_t cut = 0;
    FireLogs::Bound(log, cut, 1000);
    EXPECT_EQ(log,
              "a\xEF\xBF\xBD"
              "b\xE2\x82\xAC");
    EXPECT_EQ(cut, 0);
    FireLogs::Bound(log, cut, 4);
    EXPECT_EQ(log, "b\xE2\x82\xAC");
    EXPECT_EQ(cut, 4);
    FireLogs::Bound(log, cut, 2);  // inside the euro sign: it goes whole
    EXPECT_EQ(log, "");
    EXPECT_EQ(cut, 8);
}

// The logs of a batch go in with one more statement, not one per item.
TEST_P(FireResultsTest, ABatchWithLogsCostsOneMoreStatement) {
    if (db().backend() != db::Backend::kMySql) GTEST_SKIP() << "counted with MySQL's session status";
    const auto ids = ManyFires(200, 0);
    std::vector<ExecutorResult> batch = ResultsFrom(ids);
    batch = WithLogs(batch);
    long long statements = 0;
    auto outcomes = ApplyManyCounted(batch, statements);
    ASSERT_TRUE(outcomes.ok()) << outcomes.status().ToString();
    for (auto o : *outcomes) ASSERT_EQ(o, ResultOutcome::kApplied);
    // The fires, the savepoint, an UPDATE per 64 results (4 here), the REPLACE.
    EXPECT_LE(statements, 7) << statements;
    for (auto id : ids) ASSERT_TRUE(StoredLog(db(), id)) << id;
}

SCHED_DB_TEST_SUITE(FireResultsTest);

}  // namespace
}  // namespace sched::store
