#include "sched/store/fire_metrics.hpp"

#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <soci/soci.h>

#include "sched/db/migrator.hpp"
#include "store_test_base.hpp"

namespace sched::store {

using model::Fire;
using model::FireStatus;
namespace {

class FireMetricsTest : public StoreTest {
  protected:
    void Exec(const std::string& sql) {
        ASSERT_TRUE(db().Run([&](soci::session& s) { s << sql; }).ok()) << sql;
    }
    void Job(int id, const std::string& app, const std::string& name, bool enabled = true) {
        Exec(
            "INSERT INTO job (id, name, app, handler, params, schedule_type, schedule_expr, enabled, created_at, "
            "updated_at) VALUES (" +
            std::to_string(id) + ", '" + name + "', '" + app + "', 'h', '{}', 'cron', '* * * * * ?', " +
            (enabled ? "1" : "0") + ", 0, 0)");
    }
    void Record(const std::vector<JobSuccess>& successes) {
        ASSERT_TRUE(db().Run([&](soci::session& s) { RecordLastSuccesses(s, successes); }).ok());
    }
    // job id -> (finished_at, recorded_at) as job_last_success holds them.
    std::map<std::int64_t, std::pair<std::int64_t, std::int64_t>> Recorded() {
        std::map<std::int64_t, std::pair<std::int64_t, std::int64_t>> out;
        EXPECT_TRUE(db().Run([&](soci::session& s) {
                            long long job = 0, finished = 0, recorded = 0;
                            soci::statement st = (s.prepare << "SELECT job_id, finished_at, recorded_at FROM "
                                                               "job_last_success",
                                                  soci::into(job), soci::into(finished), soci::into(recorded));
                            st.execute();
                            while (st.fetch()) out[job] = {finished, recorded};
                        })
                        .ok());
        return out;
    }
    // A fire due `due_ago_ms` before the database clock.
    void Fire(int id, int job_id, const std::string& status, long long due_ago_ms, long long finished_ms = 0) {
        const std::string now(db().dialect().NowMs());
        Exec(
            "INSERT INTO job_fire (id, job_id, scheduled_time, kind, epoch, status, due_at, created_at, finished_at) "
            "VALUES (" +
            std::to_string(id) + ", " + std::to_string(job_id) + ", " + std::to_string(id) + ", 'schedule', 1, '" +
            status + "', " + now + " - " + std::to_string(due_ago_ms) + ", 0, " +
            (finished_ms ? std::to_string(finished_ms) : "NULL") + ")");
    }
};

TEST_P(FireMetricsTest, ClusterGaugesCountByStatusOverdueExecutorsAndLastSuccess) {
    Job(1, "billing", "invoice");
    Job(2, "billing", "report");
    Job(3, "search", "reindex");
    Job(4, "paused", "old", /*enabled=*/false);
    Job(5, "paused", "older", /*enabled=*/false);
    Job(6, "search", "a-disabled-first", /*enabled=*/false);  // the app's first job by name is off
    Job(7, "zeta", "z", /*enabled=*/false);                   // the last app has no enabled job
    Fire(10, 1, "pending", 0);
    Fire(11, 1, "pending", 60'000);  // overdue with a 5 s threshold
    Fire(12, 2, "dispatching", 0);
    Fire(13, 2, "running", 0);
    Fire(14, 1, "succeeded", 0, 1'000'000);
    Fire(15, 1, "succeeded", 0, 2'000'000);
    Fire(16, 2, "failed", 0, 3'000'000);
    Record({{1, 1'000'000}, {1, 2'000'000}});  // what the results path records of fires 14 and 15
    Exec(
        "INSERT INTO executor_instance (app, address, handlers, last_heartbeat_ms, registered_at_ms) VALUES "
        "('billing', 'h:1', '[]', " +
        std::string(db().dialect().NowMs()) + ", 0)");
    Exec(
        "INSERT INTO executor_instance (app, address, handlers, last_heartbeat_ms, registered_at_ms) VALUES "
        "('billing', 'h:2', '[]', 0, 0)");  // expired

    LastSuccessTracker tracker;
    auto g = ReadClusterGauges(db(), 5000, 30000, tracker);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    EXPECT_EQ(g->pending, 3);
    EXPECT_EQ(g->running, 1);
    EXPECT_EQ(g->overdue, 1);
    using Live = std::vector<std::pair<std::string, std::int64_t>>;
    EXPECT_EQ(g->executors_live, (Live{{"billing", 1}, {"search", 0}}));
    ASSERT_EQ(g->last_success.size(), 1u);
    EXPECT_EQ(g->last_success[0].app, "billing");
    EXPECT_EQ(g->last_success[0].job_id, 1);
    EXPECT_EQ(g->last_success[0].name, "invoice");
    EXPECT_EQ(g->last_success[0].finished_ms, 2'000'000);

    auto jobs = db().Run([](soci::session& s) { return JobsOfFires(s, {16, 13, 999}); });
    ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
    ASSERT_EQ(jobs->size(), 2u);
    for (const auto& j : *jobs) {
        EXPECT_EQ(j.job_id, j.fire_id == 16 || j.fire_id == 13 ? 2 : -1);
        EXPECT_EQ(j.app, "billing");
    }
}

// The node refreshes the last successes less often than the other gauges: a read that does not
// refresh them repeats what the tracker knew (and reads nothing), except a tracker's first.
TEST_P(FireMetricsTest, ALastSuccessRefreshCanBeLeftForALaterRead) {
    Job(1, "billing", "invoice");
    auto now_us = db().NowUs();
    ASSERT_TRUE(now_us.ok());
    const long long now_ms = *now_us / 1000;
    Record({{1, now_ms - 2000}});
    LastSuccessTracker tracker;
    auto first = ReadClusterGauges(db(), 5000, 30000, tracker, /*refresh_last_success=*/false);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    ASSERT_EQ(first->last_success.size(), 1u) << "a tracker's first read happens whatever the caller asks";
    EXPECT_EQ(first->last_success[0].finished_ms, now_ms - 2000);

    Record({{1, now_ms - 1000}});
    auto kept = ReadClusterGauges(db(), 5000, 30000, tracker, /*refresh_last_success=*/false);
    ASSERT_TRUE(kept.ok()) << kept.status().ToString();
    ASSERT_EQ(kept->last_success.size(), 1u);
    EXPECT_EQ(kept->last_success[0].finished_ms, now_ms - 2000);
    auto refreshed = ReadClusterGauges(db(), 5000, 30000, tracker);
    ASSERT_TRUE(refreshed.ok()) << refreshed.status().ToString();
    ASSERT_EQ(refreshed->last_success.size(), 1u);
    EXPECT_EQ(refreshed->last_success[0].finished_ms, now_ms - 1000);
}

TEST_P(FireMetricsTest, ExecutorsLiveListsEveryAppWithAnEnabledJobAndNoOther) {
    // 40 apps of 3 jobs each; app i has an enabled job unless i % 4 == 0, and which of its three
    // jobs is the enabled one varies, so the walk over apps must ask each app about all its jobs.
    using Live = std::vector<std::pair<std::string, std::int64_t>>;
    Live expected;
    int id = 1;
    for (int i = 0; i < 40; ++i) {
        const std::string app = "app" + std::string(i < 10 ? "0" : "") + std::to_string(i);
        for (int k = 0; k < 3; ++k) Job(id++, app, "job" + std::to_string(k), i % 4 != 0 && k == i % 3);
        if (i % 4 != 0) expected.emplace_back(app, 0);
    }
    LastSuccessTracker tracker;
    auto g = ReadClusterGauges(db(), 5000, 30000, tracker);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    EXPECT_EQ(g->executors_live, expected);
}

// A job's row moves only forward: an older finish (a result applied late) leaves it and its
// recorded_at as they were; a newer one moves both. A job named twice in one call keeps its
// latest, and a call of more jobs than one statement takes writes them all.
TEST_P(FireMetricsTest, ARecordedLastSuccessOnlyMovesForward) {
    Record({{1, 1'000}, {1, 3'000}, {2, 500}});
    auto rows = Recorded();
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[1].first, 3'000);
    EXPECT_EQ(rows[2].first, 500);
    Exec("UPDATE job_last_success SET recorded_at = 7");

    Record({{1, 2'000}});
    EXPECT_EQ(Recorded()[1], std::make_pair(std::int64_t{3'000}, std::int64_t{7})) << "an older finish changes nothing";
    Record({{1, 4'000}, {2, 400}});
    rows = Recorded();
    EXPECT_EQ(rows[1].first, 4'000);
    EXPECT_GT(rows[1].second, 7) << "recorded at the database's time";
    EXPECT_EQ(rows[2], std::make_pair(std::int64_t{500}, std::int64_t{7}));

    std::vector<JobSuccess> many;
    for (int job = 100; job < 1'300; ++job) many.push_back({job, job * 10});
    Record(many);
    rows = Recorded();
    EXPECT_EQ(rows.size(), 1'202u);
    EXPECT_EQ(rows[1'299].first, 12'990);

    // The fire moves with its finish: an older finish or the same one leaves it.
    const auto fire_of = [&](std::int64_t job) {
        long long fire = 0, fire_finished = 0;
        EXPECT_TRUE(db().Run([&](soci::session& s) {
                            s << "SELECT fire_id, fire_finished_at FROM job_last_success WHERE job_id = :j",
                                soci::use(job), soci::into(fire), soci::into(fire_finished);
                        })
                        .ok());
        return std::make_pair(static_cast<std::int64_t>(fire), static_cast<std::int64_t>(fire_finished));
    };
    Record({{3, 5'000, 31}});
    Record({{3, 4'000, 30}});
    Record({{3, 5'000, 29}});
    EXPECT_EQ(fire_of(3), std::make_pair(std::int64_t{31}, std::int64_t{5'000}));
    Record({{3, 6'000, 32}, {3, 6'000, 33}, {3, 5'500, 34}});
    EXPECT_EQ(fire_of(3), std::make_pair(std::int64_t{33}, std::int64_t{6'000})) << "of one finish, the larger id";
}

// Migration 025 names each recorded job's latest succeeded fire, and the finish it goes with, for
// the rows written before it (or by a writer of an older build: fire_finished_at differs).
TEST_P(FireMetricsTest, TheMigrationNamesEachRecordedJobsLatestSucceededFire) {
    Job(1, "billing", "invoice");
    Job(2, "billing", "report");
    Fire(21, 1, "succeeded", 0, 1'000);
    Fire(22, 1, "succeeded", 0, 2'000);
    Fire(23, 1, "failed", 0, 3'000);
    Record({{1, 2'000, 22}, {2, 700}});
    Exec("UPDATE job_last_success SET fire_id = 0, fire_finished_at = 0");  // as 024 left them
    const auto m025 = [] {
        for (auto& m : db::BuiltinMigrations(GetParam())) {
            if (m.version == 25) return m;
        }
        return db::Migration{};
    }();
    ASSERT_EQ(m025.version, 25);
    for (const auto& statement : db::SplitStatements(m025.sql)) {
        // Re-runnable on MySQL (the column's ALTER is skipped); SQLite's columns exist already.
        if (GetParam() == db::Backend::kSqlite && statement.starts_with("ALTER")) continue;
        Exec(statement);
    }
    long long fire = -1, fire_finished = -1, other_fire = -1, other_finished = -1;
    ASSERT_TRUE(db().Run([&](soci::session& s) {
                        s << "SELECT fire_id, fire_finished_at FROM job_last_success WHERE job_id = 1",
                            soci::into(fire), soci::into(fire_finished);
                        s << "SELECT fire_id, fire_finished_at FROM job_last_success WHERE job_id = 2",
                            soci::into(other_fire), soci::into(other_finished);
                    })
                    .ok());
    EXPECT_EQ(fire, 22) << "the latest succeeded fire, not the later failure";
    EXPECT_EQ(fire_finished, 2'000);
    EXPECT_EQ(other_fire, 0) << "no succeeded fire retained";
    EXPECT_EQ(other_finished, 700);
}

// A finish is the executor's word: one far ahead of the database's clock (a clock set wrong, a
// hostile value) would pin a row that only moves forward; it is bounded to a minute ahead, and a
// missing one (0) is the database's clock.
TEST_P(FireMetricsTest, AFinishFarAheadOrMissingIsBoundedByTheDatabaseClock) {
    auto before_us = db().NowUs();
    ASSERT_TRUE(before_us.ok());
    Record({{1, std::numeric_limits<std::int64_t>::max()}, {2, 0}});
    auto after_us = db().NowUs();
    ASSERT_TRUE(after_us.ok());
    const std::int64_t before_ms = *before_us / 1000, after_ms = *after_us / 1000;
    auto rows = Recorded();
    EXPECT_GE(rows[1].first, before_ms + 60'000);
    EXPECT_LE(rows[1].first, after_ms + 60'000);
    EXPECT_GE(rows[2].first, before_ms);
    EXPECT_LE(rows[2].first, after_ms);
    Record({{1, after_ms + 120'000}});  // still ahead: the row stays where the bound put it
    EXPECT_LE(Recorded()[1].first, after_ms + 65'000) << "bounded again by the clock of the second write";
}

// After its first read the tracker reads only the jobs recorded since the previous read (less
// the overlap): a newer success moves its job, an older one recorded late changes nothing, and a
// job not recorded since is not read. A deep read reads every row again: a rename shows and a
// deleted job drops out. A job's last success outlives the purge of that fire.
TEST_P(FireMetricsTest, LastSuccessesAreReadFromTheJobsRecordedSinceThePreviousRead) {
    Job(1, "billing", "invoice");
    Job(2, "billing", "report");
    Job(3, "search", "reindex");
    Record({{1, 100}, {2, 200}});
    LastSuccessTracker tracker(60'000, 5'000);  // a deep read each minute, the others 5 s back
    using Seen = std::map<std::int64_t, std::pair<std::string, std::int64_t>>;
    const auto read = [&](std::optional<std::int64_t> at_ms = std::nullopt) {
        EXPECT_TRUE(
            db().InTransaction(db::TxMode::kRead,
                               [&](soci::session& s) { at_ms ? tracker.Refresh(s, *at_ms) : tracker.Refresh(s); })
                .ok());
        Seen jobs;
        for (const auto& j : tracker.Jobs()) jobs[j.job_id] = {j.name, j.finished_ms};
        return jobs;
    };
    const auto age = [&] {
        Exec("UPDATE job_last_success SET recorded_at = recorded_at - 3600000");
    };

    EXPECT_TRUE(tracker.first_read());
    EXPECT_EQ(read(), (Seen{{1, {"invoice", 100}}, {2, {"report", 200}}}));
    EXPECT_FALSE(tracker.first_read());
    EXPECT_EQ(tracker.last_rows_read(), 2u);

    age();
    Record({{3, 300}, {1, 50}});  // job 3's first success; job 1's, older than its last, applied late
    Exec("UPDATE job SET name = 'monthly-report' WHERE id = 2");
    EXPECT_EQ(read(), (Seen{{1, {"invoice", 100}}, {2, {"report", 200}}, {3, {"reindex", 300}}}))
        << "a recent read: the jobs recorded since, with their names";
    EXPECT_EQ(tracker.last_rows_read(), 1u) << "job 3 alone: job 1 did not move, job 2 was not recorded";

    age();
    Record({{1, 400}});
    EXPECT_EQ(read(), (Seen{{1, {"invoice", 400}}, {2, {"report", 200}}, {3, {"reindex", 300}}}));
    EXPECT_EQ(tracker.last_rows_read(), 1u);

    Exec("DELETE FROM job WHERE id = 3");
    auto now_us = db().NowUs();
    ASSERT_TRUE(now_us.ok());
    EXPECT_EQ(read(*now_us / 1000 + 60'000), (Seen{{1, {"invoice", 400}}, {2, {"monthly-report", 200}}}))
        << "a deep read: every job, the rename and the delete";
    EXPECT_EQ(tracker.last_rows_read(), 2u);
}

// What a read costs the database: the rows recorded since the previous read and their jobs by
// primary key, whatever the number of jobs tracked (MariaDB's handler counters of the session).
TEST_P(FireMetricsTest, ARecentReadExaminesOnlyTheJobsRecordedSince) {
    if (GetParam() != db::Backend::kMySql) GTEST_SKIP() << "MariaDB's handler counters";
    std::vector<JobSuccess> all;
    for (int id = 1; id <= 300; ++id) {
        Job(id, "app", "job" + std::to_string(id));
        all.push_back({id, id});
    }
    Record(all);
    LastSuccessTracker tracker;
    ASSERT_TRUE(db().Run([&](soci::session& s) { tracker.Refresh(s); }).ok());
    EXPECT_EQ(tracker.last_rows_read(), 300u);
    Exec("UPDATE job_last_success SET recorded_at = recorded_at - 3600000");
    Record({{7, 1'000}, {8, 1'000}, {9, 1'000}});

    long long examined = 0;
    ASSERT_TRUE(db().Run([&](soci::session& s) { examined = RowsExamined(s, [&] { tracker.Refresh(s); }); }).ok());
    EXPECT_EQ(tracker.last_rows_read(), 3u);
    EXPECT_LE(examined, 20) << "3 rows by idx_last_success_recorded and their 3 jobs, not the 300 tracked";
}

TEST_P(FireMetricsTest, OutcomeMetricsCountByAppJobAndStatus) {
    MetricsRegistry registry;
    FireOutcomeMetrics m(registry);
    m.Ended("billing", 7, FireStatus::kSucceeded, 1.5);
    m.Ended("billing", 7, FireStatus::kSucceeded, std::nullopt);
    m.Ended("billing", 7, FireStatus::kFailed);
    const std::string text = registry.Render();
    EXPECT_NE(text.find("sched_fire_outcomes_total{app=\"billing\",job_id=\"7\",status=\"succeeded\"} 2\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("sched_fire_outcomes_total{app=\"billing\",job_id=\"7\",status=\"failed\"} 1\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("sched_fire_duration_seconds_count{app=\"billing\"} 1\n"), std::string::npos) << text;
}

SCHED_DB_TEST_SUITE(FireMetricsTest);

}  // namespace
}  // namespace sched::store
