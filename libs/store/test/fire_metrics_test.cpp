#include "sched/store/fire_metrics.hpp"

#include <map>

#include <soci/soci.h>

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
// refresh them repeats what the tracker knew (and reads no fire), except a tracker's first.
TEST_P(FireMetricsTest, ALastSuccessRefreshCanBeLeftForALaterRead) {
    Job(1, "billing", "invoice");
    auto now_us = db().NowUs();
    ASSERT_TRUE(now_us.ok());
    const long long now_ms = *now_us / 1000;
    Fire(20, 1, "succeeded", 0, now_ms - 2000);
    LastSuccessTracker tracker;
    auto first = ReadClusterGauges(db(), 5000, 30000, tracker, /*refresh_last_success=*/false);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    ASSERT_EQ(first->last_success.size(), 1u) << "a tracker's first read happens whatever the caller asks";
    EXPECT_EQ(first->last_success[0].finished_ms, now_ms - 2000);

    Fire(21, 1, "succeeded", 0, now_ms - 1000);
    auto kept = ReadClusterGauges(db(), 5000, 30000, tracker, /*refresh_last_success=*/false);
    ASSERT_TRUE(kept.ok()) << kept.status().ToString();
    ASSERT_EQ(kept->last_success.size(), 1u);
    EXPECT_EQ(kept->last_success[0].finished_ms, now_ms - 2000);
    auto refreshed = ReadClusterGauges(db(), 5000, 30000, tracker);
    ASSERT_TRUE(refreshed.ok()) << refreshed.status().ToString();
    ASSERT_EQ(refreshed->last_success.size(), 1u);
    EXPECT_EQ(refreshed->last_success[0].finished_ms, now_ms - 1000);
}

// After its first read the tracker reads only what finished since (less the overlap): a newer
// success moves its job, a success older than that window is not read again (the history is not
// scanned), a renamed job keeps its time under its new name, a deleted job drops out, and a job's
// last success outlives the purge of that fire.
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

TEST_P(FireMetricsTest, LastSuccessesAreReadFromWhatEndedSinceThePreviousRead) {
    Job(1, "billing", "invoice");
    Job(2, "billing", "report");
    Job(3, "search", "reindex");
    // The reads run at times the test gives (the database clock's, as the caller read it).
    const std::int64_t t0 = 1'800'000'000'000;
    Fire(10, 1, "succeeded", 0, t0 - 3'600'000);  // an hour ago: only the first read sees it
    Fire(11, 2, "succeeded", 0, t0 - 1'000);
    Fire(12, 3, "failed", 0, t0 - 1'000);
    LastSuccessTracker tracker(60'000, 5'000);  // deep reads a minute back, others 5 s
    const auto read = [&](std::int64_t now_ms) {
        EXPECT_TRUE(db().InTransaction(db::TxMode::kRead, [&](soci::session& s) { tracker.Refresh(s, now_ms); }).ok());
        std::map<std::int64_t, std::pair<std::string, std::int64_t>> jobs;
        for (const auto& j : tracker.Jobs()) jobs[j.job_id] = {j.name, j.finished_ms};
        return jobs;
    };
    using Seen = std::map<std::int64_t, std::pair<std::string, std::int64_t>>;
    EXPECT_TRUE(tracker.first_read());
    EXPECT_EQ(read(t0), (Seen{{1, {"invoice", t0 - 3'600'000}}, {2, {"report", t0 - 1'000}}}));
    EXPECT_FALSE(tracker.first_read());

    Fire(13, 3, "succeeded", 0, t0 + 1'000);      // new: job 3 appears, with its name
    Fire(14, 1, "succeeded", 0, t0 - 7'200'000);  // applied late, older than the overlap: never read
    Fire(16, 1, "succeeded", 0, t0 - 20'000);     // applied late, within the overlap: the deep read's
    Exec("UPDATE job SET name = 'monthly-report' WHERE id = 2");
    Exec("DELETE FROM job_fire WHERE id = 11");  // purged: job 2 keeps its time
    EXPECT_EQ(read(t0 + 2'000),
              (Seen{{1, {"invoice", t0 - 3'600'000}}, {2, {"report", t0 - 1'000}}, {3, {"reindex", t0 + 1'000}}}))
        << "a recent read: the last 5 s only, and the names of the jobs it found";

    EXPECT_EQ(read(t0 + 60'000),
              (Seen{{1, {"invoice", t0 - 20'000}}, {2, {"monthly-report", t0 - 1'000}}, {3, {"reindex", t0 + 1'000}}}))
        << "a deep read: a minute back from the previous deep read, and every tracked job's name";

    Exec("DELETE FROM job WHERE id = 3");
    Fire(15, 1, "succeeded", 0, t0 + 61'000);
    EXPECT_EQ(read(t0 + 62'000),
              (Seen{{1, {"invoice", t0 + 61'000}}, {2, {"monthly-report", t0 - 1'000}}, {3, {"reindex", t0 + 1'000}}}))
        << "job 3's delete shows at the next deep read";
    EXPECT_EQ(read(t0 + 120'000), (Seen{{1, {"invoice", t0 + 61'000}}, {2, {"monthly-report", t0 - 1'000}}}));
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
