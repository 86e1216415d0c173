#include "sched/trigger/history_purger.hpp"

#include <tuple>

#include <gtest/gtest.h>

#include "master_lease_fixture.hpp"
#include "sched/common/clock.hpp"
#include "sched/db/migrator.hpp"
#include "sched/db/testing/test_database.hpp"
#include "sched/lock/lock_store.hpp"
#include "sched/lock/sql_lock_store.hpp"
#include "sched/store/audit.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/fire_log.hpp"
#include "sched/store/job.hpp"

namespace sched::trigger {
namespace {

using namespace std::chrono_literals;

constexpr std::int64_t kHourMs = 3600 * 1000;

class HistoryPurgerTest : public MasterLeaseTest {
  protected:
    HistoryPurgerTest() {
        config_.history_retention = 1h;
        config_.history_max_per_job = 1000;
        config_.purge_batch = 1000;
    }

    HistoryPurger MakePurger() { return HistoryPurger(pool_, *fence_, *time_, config_, metrics_); }

    std::int64_t CreateJob(const std::string& name) {
        return CreateJobOf(name, "app", "echo", ScheduleType::kCron, "* * * * * ?");
    }

    struct Row {
        std::int64_t scheduled_time = 0;
        std::string status = "succeeded";
        std::optional<std::int64_t> finished_at;
        int followup = 0;
        int attempt = 0;
    };

    /// Inserts the rows in one transaction; returns their ids in order.
    std::vector<std::int64_t> Insert(std::int64_t job_id, const std::vector<Row>& rows) {
        std::vector<std::int64_t> ids;
        auto done = db().Run([&](soci::session& s) {
            for (const auto& r : rows) {
                soci::indicator finished_ind = r.finished_at ? soci::i_ok : soci::i_null;
                std::int64_t finished = r.finished_at.value_or(0);
                std::int64_t job = job_id;
                std::int64_t scheduled = r.scheduled_time;
                std::string status = r.status;
                int followup = r.followup;
                int attempt = r.attempt;
                s << "INSERT INTO job_fire (job_id, scheduled_time, kind, attempt, epoch, status, due_at, followup, "
                     "created_at, finished_at) VALUES (:j, :t, 'schedule', :a, 1, :st, :t2, :f, :t3, :fin)",
                    soci::use(job), soci::use(scheduled), soci::use(attempt), soci::use(status), soci::use(scheduled),
                    soci::use(followup), soci::use(scheduled), soci::use(finished, finished_ind);
                std::int64_t id = 0;
                s << "SELECT id FROM job_fire WHERE job_id = :j AND scheduled_time = :t AND attempt = :a",
                    soci::use(job), soci::use(scheduled), soci::use(attempt), soci::into(id);
                ids.push_back(id);
            }
        });
        EXPECT_TRUE(done.ok()) << done.ToString();
        return ids;
    }

    /// Many succeeded fires of one job, one per ms from `first`, ended at `first` + 1 s.
    void InsertMany(std::int64_t job_id, std::int64_t first, int count) {
        auto done = db().Run([&](soci::session& s) {
            std::int64_t job = job_id;
            std::int64_t scheduled = first;
            std::int64_t finished = first + 1000;
            soci::statement st =
                (s.prepare << "INSERT INTO job_fire (job_id, scheduled_time, kind, epoch, status, "
                              "due_at, created_at, finished_at) VALUES (:j, :t, 'schedule', 1, "
                              "'succeeded', :t2, :t3, :fin)",
                 soci::use(job), soci::use(scheduled), soci::use(scheduled), soci::use(scheduled), soci::use(finished));
            for (int i = 0; i < count; ++i, ++scheduled) st.execute(true);
        });
        ASSERT_TRUE(done.ok()) << done.ToString();
    }

    std::vector<std::int64_t> Ids(std::int64_t job_id) {
        std::vector<std::int64_t> ids;
        auto done = db().Run([&](soci::session& s) {
            std::int64_t id = 0;
            std::int64_t job = job_id;
            soci::statement st =
                (s.prepare << "SELECT id FROM job_fire WHERE job_id = :j ORDER BY id", soci::use(job), soci::into(id));
            st.execute();
            while (st.fetch()) ids.push_back(id);
        });
        EXPECT_TRUE(done.ok()) << done.ToString();
        return ids;
    }

    std::int64_t Count() {
        std::int64_t n = 0;
        auto done = db().Run([&](soci::session& s) { s << "SELECT COUNT(*) FROM job_fire", soci::into(n); });
        EXPECT_TRUE(done.ok()) << done.ToString();
        return n;
    }

    double Purged(const std::string& reason) {
        return metrics_.Counter("sched_master_fires_purged_total", "", {"reason"}).Labels({reason}).Value();
    }

    std::int64_t Now() { return time_->NowMs(); }
};

TEST_P(HistoryPurgerTest, AgeDeletesOnlyOldEndedFiresWithoutAPendingFollowup) {
    const std::int64_t job = CreateJob("aged");
    const std::int64_t old = Now() - 2 * kHourMs;
    const auto ids = Insert(job, {
                                     {.scheduled_time = old, .finished_at = old + 1000},  // 0: goes
                                     {.scheduled_time = old + 1, .status = "failed"},     // 1: goes (no finished_at)
                                     {.scheduled_time = old + 2, .status = "pending"},    // 2: stays (not ended)
                                     {.scheduled_time = old + 3, .status = "running"},    // 3: stays
                                     {.scheduled_time = old + 4,
                                      .status = "failed",
                                      .finished_at = old + 5000,
                                      .followup = 1},  // 4: stays (its retry is still to be made)
                                     // 5: stays: scheduled long ago but ended 10 min ago (a long run)
                                     {.scheduled_time = old + 5, .status = "timeout", .finished_at = Now() - 600000},
                                     {.scheduled_time = Now() - 1000, .finished_at = Now()},  // 6: stays (recent)
                                 });
    // A stored log goes with its fire; a kept fire keeps its log.
    for (const std::size_t i : {std::size_t{0}, std::size_t{6}}) {
        store::ExecutorResult result;
        result.fire_id = ids[i];
        result.log = "line of fire " + std::to_string(ids[i]);
        ASSERT_TRUE(db().Run([&](soci::session& s) { store::FireLogs::StoreMany(s, {&result}); }).ok());
    }
    const auto has_log = [&](std::int64_t fire_id) {
        auto found = db().Run([&](soci::session& s) { return store::FireLogs::Find(s, fire_id).has_value(); });
        return found.ok() && *found;
    };
    ASSERT_TRUE(has_log(ids[0]));
    auto purger = MakePurger();
    // Both reasons are exported from the start, at 0.
    const std::string before = metrics_.Render();
    EXPECT_NE(before.find("sched_master_fires_purged_total{reason=\"age\"} 0\n"), std::string::npos) << before;
    EXPECT_NE(before.find("sched_master_fires_purged_total{reason=\"cap\"} 0\n"), std::string::npos) << before;
    auto round = purger.PurgeRound(epoch_);
    ASSERT_TRUE(round.ok()) << round.status().ToString();
    EXPECT_EQ(round->by_age, 2);
    EXPECT_EQ(round->by_cap, 0);
    EXPECT_EQ(Ids(job), (std::vector<std::int64_t>{ids[2], ids[3], ids[4], ids[5], ids[6]}));
    EXPECT_EQ(Purged("age"), 2);
    EXPECT_EQ(Purged("cap"), 0);
    EXPECT_FALSE(has_log(ids[0])) << "the log of a purged fire outlived it";
    EXPECT_TRUE(has_log(ids[6]));

    // An hour later the long run's fire and the recent one have aged out too; the fires that
    // have not ended (or whose follow-up is pending) never do.
    clock_.Advance(1h + 1s);
    round = purger.PurgeRound(epoch_);
    ASSERT_TRUE(round.ok()) << round.status().ToString();
    EXPECT_EQ(round->by_age, 2);
    EXPECT_EQ(Ids(job), (std::vector<std::int64_t>{ids[2], ids[3], ids[4]}));
}

TEST_P(HistoryPurgerTest, CapKeepsTheNewestFiresOfEachJob) {
    config_.history_max_per_job = 5;
    const std::int64_t busy = CreateJob("busy");
    const std::int64_t quiet = CreateJob("quiet");
    const std::int64_t t = Now() - 60000;  // all well within the retention
    std::vector<Row> rows;
    rows.push_back({.scheduled_time = t - 1000, .status = "pending"});  // the oldest, but not ended
    rows.push_back({.scheduled_time = t - 999, .status = "failed", .finished_at = t, .followup = 1});
    for (int i = 0; i < 8; ++i) rows.push_back({.scheduled_time = t + i * 1000, .finished_at = t + i * 1000 + 10});
    const auto busy_ids = Insert(busy, rows);
    const auto quiet_ids = Insert(quiet, {{.scheduled_time = t}, {.scheduled_time = t + 1000}});

    auto purger = MakePurger();
    auto round = purger.PurgeRound(epoch_);
    ASSERT_TRUE(round.ok()) << round.status().ToString();
    EXPECT_EQ(round->by_cap, 3);  // of the 10, the 5 newest stay; of the 5 older, 3 have ended
    EXPECT_EQ(round->jobs_capped, 2);
    EXPECT_EQ(Ids(busy), (std::vector<std::int64_t>{busy_ids[0], busy_ids[1], busy_ids[5], busy_ids[6], busy_ids[7],
                                                    busy_ids[8], busy_ids[9]}));
    EXPECT_EQ(Ids(quiet), quiet_ids);
    EXPECT_EQ(Purged("cap"), 3);

    // Nothing more to do: a second round deletes nothing.
    round = purger.PurgeRound(epoch_);
    ASSERT_TRUE(round.ok()) << round.status().ToString();
    EXPECT_EQ(round->by_cap + round->by_age, 0);
}

TEST_P(HistoryPurgerTest, ARoundFindsTheJobsOverTheCapAmongManyAndTrimsOnlyThose) {
    config_.history_max_per_job = 5;
    const std::int64_t t = Now() - 60000;
    std::vector<std::int64_t> quiet;
    for (int j = 0; j < 30; ++j) {
        quiet.push_back(CreateJob("quiet-" + std::to_string(j)));
        Insert(quiet.back(), {{.scheduled_time = t, .finished_at = t + 1}, {.scheduled_time = t + 1000}});
    }
    const std::int64_t at_cap = CreateJob("at-cap");
    std::vector<Row> five;
    for (int i = 0; i < 5; ++i) five.push_back({.scheduled_time = t + i * 1000, .finished_at = t + i * 1000 + 1});
    const auto at_cap_ids = Insert(at_cap, five);
    const std::int64_t busy = CreateJob("busy");
    std::vector<Row> eight;
    for (int i = 0; i < 8; ++i) eight.push_back({.scheduled_time = t + i * 1000, .finished_at = t + i * 1000 + 1});
    const auto busy_ids = Insert(busy, eight);
    // A retry shares the fifth-newest time of this one: both are kept (strictly before).
    const std::int64_t sharded = CreateJob("retried");
    const auto sharded_ids = Insert(sharded, {{.scheduled_time = t, .finished_at = t + 1},
                                              {.scheduled_time = t + 1000, .finished_at = t + 1001},
                                              {.scheduled_time = t + 1000, .finished_at = t + 1002, .attempt = 1},
                                              {.scheduled_time = t + 2000, .finished_at = t + 2001},
                                              {.scheduled_time = t + 3000, .finished_at = t + 3001},
                                              {.scheduled_time = t + 4000, .finished_at = t + 4001}});

    auto purger = MakePurger();
    auto round = purger.PurgeRound(epoch_);
    ASSERT_TRUE(round.ok()) << round.status().ToString();
    EXPECT_EQ(round->jobs_capped, 33);
    EXPECT_EQ(round->by_cap, 4);   // busy's 3 oldest, retried's oldest
    EXPECT_EQ(round->batches, 2);  // a fenced transaction for each job over the cap, none for the others
    EXPECT_EQ(Ids(busy), std::vector<std::int64_t>(busy_ids.begin() + 3, busy_ids.end()));
    EXPECT_EQ(Ids(sharded), std::vector<std::int64_t>(sharded_ids.begin() + 1, sharded_ids.end()));
    EXPECT_EQ(Ids(at_cap), at_cap_ids);
    for (const auto job : quiet) EXPECT_EQ(Ids(job).size(), 2u);
}

TEST_P(HistoryPurgerTest, ABatchDeletesAtMostPurgeBatchRows) {
    const std::int64_t job = CreateJob("backlog");
    InsertMany(job, Now() - 3 * kHourMs, 2500);
    ASSERT_EQ(Count(), 2500);
    auto purger = MakePurger();
    // Each call is one fenced transaction with one DELETE of at most purge-batch rows.
    auto first = purger.PurgeExpiredBatch(epoch_);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    EXPECT_EQ(*first, 1000);
    EXPECT_EQ(Count(), 1500);
    auto second = purger.PurgeExpiredBatch(epoch_);
    ASSERT_TRUE(second.ok());
    EXPECT_EQ(*second, 1000);
    EXPECT_EQ(Count(), 500);
    auto third = purger.PurgeExpiredBatch(epoch_);
    ASSERT_TRUE(third.ok());
    EXPECT_EQ(*third, 500);
    EXPECT_EQ(Count(), 0);
    EXPECT_EQ(Purged("age"), 2500);

    // A round drains the same backlog in the same three batches.
    InsertMany(job, Now() - 3 * kHourMs, 2500);
    auto round = purger.PurgeRound(epoch_);
    ASSERT_TRUE(round.ok()) << round.status().ToString();
    EXPECT_EQ(round->by_age, 2500);
    EXPECT_EQ(round->batches, 3);
    EXPECT_EQ(Count(), 0);
}

TEST_P(HistoryPurgerTest, ARoundStopsWhenAskedBetweenBatches) {
    config_.purge_batch = 100;
    const std::int64_t job = CreateJob("backlog");
    InsertMany(job, Now() - 3 * kHourMs, 250);
    auto purger = MakePurger();
    int asked = 0;
    auto round = purger.PurgeRound(epoch_, [&] { return ++asked > 1; });  // one batch, then stop
    ASSERT_TRUE(round.ok()) << round.status().ToString();
    EXPECT_EQ(round->by_age, 100);
    EXPECT_EQ(Count(), 150);
}

TEST_P(HistoryPurgerTest, AuditEntriesOlderThanTheRetentionGoInBoundedBatches) {
    config_.purge_batch = 100;
    // 250 entries 3 h old and 5 written now: only the old ones are past history-retention (1 h).
    auto inserted = db().Run([&](soci::session& s) {
        for (int i = 0; i < 255; ++i) {
            std::int64_t at = i < 250 ? Now() - 3 * kHourMs : Now();
            std::string target = std::to_string(i);
            s << "INSERT INTO audit_log (at_ms, actor, actor_role, action, target_kind, target_id, target_name) "
                 "VALUES (:at, 'alice', 'operator', 'update', 'job', :id, 'x')",
                soci::use(at, "at"), soci::use(target, "id");
        }
    });
    ASSERT_TRUE(inserted.ok()) << inserted.ToString();
    const auto count = [&] {
        return store::AuditRepository(db()).List({.limit = 1000})->size();
    };
    auto purger = MakePurger();
    auto first = purger.PurgeAuditBatch(epoch_);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    EXPECT_EQ(*first, 100);
    EXPECT_EQ(count(), 155u);
    auto round = purger.PurgeRound(epoch_);
    ASSERT_TRUE(round.ok()) << round.status().ToString();
    EXPECT_EQ(round->audit, 150);
    EXPECT_EQ(count(), 5u);
    // A node that lost the lease deletes none.
    ASSERT_TRUE(db().Run([](soci::session& s) {
                        s << "UPDATE scheduler_lock SET owner = 'node-b', epoch = epoch + 1 WHERE namespace = 'master'";
                    })
                    .ok());
    EXPECT_FALSE(purger.PurgeAuditBatch(epoch_).ok());
}

TEST_P(HistoryPurgerTest, EndedAlertDeliveriesOlderThanTheRetentionGoAndPendingOnesStay) {
    // fire_id, status, created 3 h ago (past history-retention, 1 h) or now.
    const std::vector<std::tuple<int, std::string, bool>> rows = {
        {1, "delivered", true}, {2, "failed", true}, {3, "pending", true}, {4, "delivered", false}};
    auto inserted = db().Run([&](soci::session& s) {
        for (const auto& [fire, status, old] : rows) {
            std::int64_t created = old ? Now() - 3 * kHourMs : Now();
            std::int64_t fire_id = fire;
            std::string st = status;
            s << "INSERT INTO alert_delivery (rule_id, job_id, fire_id, event, payload, status, attempts, "
                 "next_attempt_at, created_at) VALUES (1, 1, :fire, 'failed', '{}', :st, 1, 0, :created)",
                soci::use(fire_id, "fire"), soci::use(st, "st"), soci::use(created, "created");
        }
    });
    ASSERT_TRUE(inserted.ok()) << inserted.ToString();
    const auto left = [&] {
        std::vector<std::int64_t> fires;
        auto read = db().Run([&](soci::session& s) {
            std::int64_t fire = 0;
            soci::statement st = (s.prepare << "SELECT fire_id FROM alert_delivery ORDER BY fire_id", soci::into(fire));
            st.execute();
            while (st.fetch()) fires.push_back(fire);
        });
        EXPECT_TRUE(read.ok()) << read.ToString();
        return fires;
    };
    auto purger = MakePurger();
    auto round = purger.PurgeRound(epoch_);
    ASSERT_TRUE(round.ok()) << round.status().ToString();
    EXPECT_EQ(round->deliveries, 2);
    EXPECT_EQ(left(), (std::vector<std::int64_t>{3, 4}));
    // A node that lost the lease deletes none.
    ASSERT_TRUE(db().Run([](soci::session& s) {
                        s << "UPDATE alert_delivery SET status = 'delivered' WHERE fire_id = 3";
                        s << "UPDATE scheduler_lock SET owner = 'node-b', epoch = epoch + 1 WHERE namespace = 'master'";
                    })
                    .ok());
    EXPECT_FALSE(purger.PurgeDeliveryBatch(epoch_).ok());
    EXPECT_EQ(left(), (std::vector<std::int64_t>{3, 4}));
}

TEST_P(HistoryPurgerTest, ANodeThatLostTheLeaseDeletesNothing) {
    config_.history_max_per_job = 1;
    const std::int64_t job = CreateJob("kept");
    InsertMany(job, Now() - 3 * kHourMs, 10);
    ASSERT_TRUE(db().Run([](soci::session& s) {
                        s << "UPDATE scheduler_lock SET owner = 'node-b', epoch = epoch + 1 WHERE namespace = 'master'";
                    })
                    .ok());
    auto purger = MakePurger();
    auto batch = purger.PurgeExpiredBatch(epoch_);
    ASSERT_FALSE(batch.ok());
    EXPECT_TRUE(lock::IsLeaseLost(batch.status())) << batch.status().ToString();
    auto capped = purger.PurgeOverCapBatch(epoch_, job);
    ASSERT_FALSE(capped.ok());
    EXPECT_TRUE(lock::IsLeaseLost(capped.status())) << capped.status().ToString();
    auto round = purger.PurgeRound(epoch_);
    ASSERT_FALSE(round.ok());
    EXPECT_TRUE(lock::IsLeaseLost(round.status())) << round.status().ToString();
    EXPECT_EQ(Count(), 10);
    EXPECT_EQ(Purged("age") + Purged("cap"), 0);
}

TEST(HistoryRetentionConfig, KeysAreReadWithinBounds) {
    auto c = MasterConfig::FromYaml(ConfigNode::LoadString(
        "history-retention: 7d\nhistory-max-per-job: 500\npurge-interval: 2s\npurge-batch: 200\n"));
    EXPECT_EQ(c.history_retention, std::chrono::hours(24 * 7));
    EXPECT_EQ(c.history_max_per_job, 500);
    EXPECT_EQ(c.purge_interval, 2s);
    EXPECT_EQ(c.purge_batch, 200);
    const MasterConfig defaults = MasterConfig::FromYaml(ConfigNode::LoadString("{}"));
    EXPECT_EQ(defaults.history_retention, std::chrono::hours(24 * 30));
    EXPECT_EQ(defaults.history_max_per_job, 10000);
    EXPECT_EQ(defaults.purge_interval, 10s);
    EXPECT_EQ(defaults.purge_batch, 1000);
    // No "keep forever": 0 is refused, naming the key.
    EXPECT_THROW(MasterConfig::FromYaml(ConfigNode::LoadString("history-retention: 0s\n")), ConfigError);
    EXPECT_THROW(MasterConfig::FromYaml(ConfigNode::LoadString("history-max-per-job: 0\n")), ConfigError);
    EXPECT_THROW(MasterConfig::FromYaml(ConfigNode::LoadString("purge-batch: 100000\n")), ConfigError);
    EXPECT_THROW(MasterConfig::FromYaml(ConfigNode::LoadString("purge-interval: 1ms\n")), ConfigError);
}

SCHED_DB_TEST_SUITE(HistoryPurgerTest);

}  // namespace
}  // namespace sched::trigger
