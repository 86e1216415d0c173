#include "sched/store/alert.hpp"

#include "sched/store/fire_metrics.hpp"
#include "sched/store/job.hpp"
#include "store_test_base.hpp"

namespace sched::store {

namespace {

class AlertRepositoryTest : public StoreTest {
  protected:
    std::int64_t AddJob(const std::string& name = "nightly") {
        return CreateJob({.name = name,
                          .app = "billing",
                          .handler = "report",
                          .params = "{}",
                          .schedule_type = sched::ScheduleType::kManual})
            .id;
    }
    // A fire row as the ledger or a result would leave it; a success also as the results path
    // records it (job_last_success).
    std::int64_t AddFire(std::int64_t job_id, std::int64_t scheduled, const std::string& status,
                         std::optional<std::int64_t> finished, const std::string& reason = "") {
        auto id = db().Run([&](soci::session& s) {
            impl_NullReason r{reason};
            soci::indicator fin_ind = finished ? soci::i_ok : soci::i_null;
            std::int64_t fin = finished.value_or(0);
            soci::indicator reason_ind = reason.empty() ? soci::i_null : soci::i_ok;
            s << "INSERT INTO job_fire (job_id, scheduled_time, kind, epoch, status, due_at, created_at, finished_at, "
                 "reason) VALUES (:j, :t, 'schedule', 1, :st, :t2, :t3, :f, :r)",
                soci::use(job_id), soci::use(scheduled), soci::use(status), soci::use(scheduled), soci::use(scheduled),
                soci::use(fin, fin_ind), soci::use(r.reason, reason_ind);
            long long new_id = 0;
            s.get_last_insert_id("job_fire", new_id);
            return static_cast<std::int64_t>(new_id);
        });
        EXPECT_TRUE(id.ok()) << id.status().ToString();
        if (id.ok() && status == "succeeded" && finished) {
            EXPECT_TRUE(db().Run([&](soci::session& s) {
                                RecordLastSuccesses(s, {{.job_id = job_id, .finished_ms = *finished, .fire_id = *id}});
                            })
                            .ok());
        }
        return id.ok() ? *id : 0;
    }
    void Exec(const std::string& sql) {
        ASSERT_TRUE(db().Run([&](soci::session& s) { s << sql; }).ok()) << sql;
    }
    std::vector<JobLastSuccess> LastSuccesses(std::optional<std::int64_t> job, std::int64_t after, int limit) {
        return *db().Run([&](soci::session& s) { return AlertRepository::LastSuccesses(s, job, after, limit); });
    }
    struct impl_NullReason {
        std::string reason;
    };
};

TEST_P(AlertRepositoryTest, RuleRoundTripsAndDeleteTakesItsDeliveries) {
    AlertRepository alerts(db());
    AlertRule in;
    in.name = "pager";
    in.job_id = 42;
    in.events = {AlertEvent::kFailed, AlertEvent::kMisfire};
    in.consecutive_failures = 3;
    in.url = "http://127.0.0.1:9/hook";
    in.secret = "s3cret";
    auto created = alerts.CreateRule(in);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    EXPECT_GT(created->id, 0);
    EXPECT_GT(created->created_at, 0);
    EXPECT_EQ(created->job_id, 42);
    EXPECT_EQ(created->events, in.events);
    EXPECT_EQ(created->consecutive_failures, 3);
    EXPECT_EQ(created->secret, "s3cret");
    EXPECT_FALSE(created->no_success_within_ms.has_value());

    AlertRule global = in;
    global.job_id.reset();
    global.enabled = false;
    global.events = {AlertEvent::kNoSuccess};
    global.no_success_within_ms = 3'600'000;
    auto second = alerts.CreateRule(global);
    ASSERT_TRUE(second.ok());
    EXPECT_FALSE(second->job_id.has_value());
    EXPECT_EQ(second->events, global.events);
    EXPECT_EQ(second->no_success_within_ms, 3'600'000);
    EXPECT_EQ(alerts.GetRule(second->id)->no_success_within_ms, 3'600'000);
    EXPECT_EQ(alerts.ListRules(0, 10)->size(), 2u);
    EXPECT_EQ(alerts.ListRules(created->id, 10)->size(), 1u);
    auto enabled = db().Run([](soci::session& s) { return AlertRepository::EnabledRules(s, 10); });
    ASSERT_EQ(enabled->size(), 1u);
    EXPECT_EQ(enabled->front().id, created->id);

    AlertDelivery d{.rule_id = created->id, .job_id = 42, .fire_id = 7, .payload = "{}", .next_attempt_at = 1};
    ASSERT_TRUE(
        *db().Run([&](soci::session& s) { return AlertRepository::InsertDeliveryIfAbsent(s, db().dialect(), d); }));
    ASSERT_TRUE(alerts.DeleteRule(created->id).ok());
    EXPECT_EQ(alerts.GetRule(created->id).status().code(), Code::kNotFound);
    EXPECT_EQ(alerts.DeleteRule(created->id).code(), Code::kNotFound);
    EXPECT_TRUE(alerts.ListDeliveries({})->empty());
}

TEST_P(AlertRepositoryTest, ADeliveryIsCreatedOncePerRuleEventAndFireAndRecordsAttempts) {
    AlertRepository alerts(db());
    AlertDelivery d{.rule_id = 1, .job_id = 2, .fire_id = 3, .payload = R"({"event":"failed"})", .next_attempt_at = 5};
    const auto insert = [&](const AlertDelivery& x) {
        return *db().Run(
            [&](soci::session& s) { return AlertRepository::InsertDeliveryIfAbsent(s, db().dialect(), x); });
    };
    EXPECT_TRUE(insert(d));
    EXPECT_FALSE(insert(d));  // a second master evaluating the same fire
    AlertDelivery other = d;
    other.event = AlertEvent::kTimeout;
    EXPECT_TRUE(insert(other));
    // no_success episodes: the key includes the job, so two jobs never-succeeded (fire_id 0)
    // of a global rule do not collide, while one job's same episode does.
    AlertDelivery episode{.rule_id = 1,
                          .job_id = 2,
                          .fire_id = 0,
                          .event = AlertEvent::kNoSuccess,
                          .payload = "{}",
                          .next_attempt_at = 50};
    EXPECT_TRUE(insert(episode));
    EXPECT_FALSE(insert(episode));
    AlertDelivery other_job = episode;
    other_job.job_id = 4;
    EXPECT_TRUE(insert(other_job));

    auto due = db().Run([](soci::session& s) { return AlertRepository::ListDue(s, 5, 10); });
    ASSERT_EQ(due->size(), 2u);
    EXPECT_TRUE(db().Run([](soci::session& s) { return AlertRepository::ListDue(s, 4, 10); })->empty());
    AlertDelivery first = due->front();
    EXPECT_EQ(first.status, DeliveryStatus::kPending);
    EXPECT_EQ(first.attempts, 0);
    first.attempts = 1;
    first.next_attempt_at = 100;
    first.last_error = std::string(2000, 'x');
    ASSERT_TRUE(*db().Run([&](soci::session& s) { return AlertRepository::RecordAttempt(s, first); }));
    first.attempts = 2;
    first.status = DeliveryStatus::kDelivered;
    first.delivered_at = 150;
    first.last_error.reset();
    ASSERT_TRUE(*db().Run([&](soci::session& s) { return AlertRepository::RecordAttempt(s, first); }));
    // Final: a late attempt by a deposed master changes nothing.
    EXPECT_FALSE(*db().Run([&](soci::session& s) { return AlertRepository::RecordAttempt(s, first); }));
    auto stored = alerts.GetDelivery(first.id);
    ASSERT_TRUE(stored.ok());
    EXPECT_EQ(stored->attempts, 2);
    EXPECT_EQ(stored->status, DeliveryStatus::kDelivered);
    EXPECT_EQ(stored->delivered_at, 150);
    EXPECT_FALSE(stored->last_error.has_value());
    EXPECT_EQ(alerts.ListDeliveries({.status = DeliveryStatus::kDelivered})->size(), 1u);
    EXPECT_EQ(alerts.ListDeliveries({.rule_id = 1, .status = DeliveryStatus::kPending})->size(), 3u);  // + 2 episodes
    EXPECT_TRUE(alerts.ListDeliveries({.rule_id = 9})->empty());
}

TEST_P(AlertRepositoryTest, EndedFiresAreListedByFinishTimeAfterTheCursorWithTheirJob) {
    const std::int64_t job = AddJob();
    const std::int64_t failed = AddFire(job, 1000, "failed", 2000);
    AddFire(job, 1100, "succeeded", 2100);
    const std::int64_t misfire = AddFire(job, 1200, "skipped", 2000, "misfire");
    AddFire(job, 1300, "skipped", 2200, "blocked");
    AddFire(job, 1400, "running", std::nullopt);
    const std::int64_t lost = AddFire(job, 1500, "lost", 2300, "slave_died");
    const std::int64_t late = AddFire(job, 1600, "timeout", 9000);

    auto all = *db().Run([](soci::session& s) { return AlertRepository::ListEndedAfter(s, 0, 0, 5000, 10); });
    ASSERT_EQ(all.size(), 3u);
    EXPECT_EQ(all[0].id, failed);
    EXPECT_EQ(all[1].id, misfire);
    EXPECT_EQ(all[2].id, lost);
    EXPECT_EQ(all[0].job_name, "nightly");
    EXPECT_EQ(all[0].app, "billing");
    EXPECT_EQ(all[1].reason, "misfire");
    // The cursor (2000, failed) skips the first; a page of one stops there.
    auto page = *db().Run([&](soci::session& s) { return AlertRepository::ListEndedAfter(s, 2000, failed, 9000, 1); });
    ASSERT_EQ(page.size(), 1u);
    EXPECT_EQ(page[0].id, misfire);
    auto rest = *db().Run([&](soci::session& s) { return AlertRepository::ListEndedAfter(s, 2300, lost, 9000, 10); });
    ASSERT_EQ(rest.size(), 1u);
    EXPECT_EQ(rest[0].id, late);
}

TEST_P(AlertRepositoryTest, FailureStreakCountsEndedRunsFailedInARowUpToTheFire) {
    const std::int64_t job = AddJob();
    AddFire(job, 1000, "failed", 1001);
    AddFire(job, 2000, "succeeded", 2001);
    AddFire(job, 3000, "failed", 3001);
    AddFire(job, 3500, "skipped", 3501, "misfire");  // not a run: ignored
    AddFire(job, 4000, "timeout", 4001);
    const std::int64_t third = AddFire(job, 5000, "lost", 5001, "slave_died");
    AddFire(job, 6000, "succeeded", 6001);
    const auto streak = [&](std::int64_t t, std::int64_t id, int max) {
        return *db().Run([&](soci::session& s) { return AlertRepository::FailureStreak(s, job, t, id, max); });
    };
    EXPECT_EQ(streak(5000, third, 10), 3);
    EXPECT_EQ(streak(5000, third, 2), 2);
    EXPECT_EQ(streak(6000, third + 1, 10), 0);
}

TEST_P(AlertRepositoryTest, LastSuccessesGivesEnabledJobsWithTheirLatestSucceededFireInPages) {
    const std::int64_t a = AddJob();
    const std::int64_t b = AddJob("b");
    const std::int64_t paused = AddJob("paused");
    const std::int64_t c = AddJob("c");
    AddFire(a, 1000, "succeeded", 1500);
    const std::int64_t latest = AddFire(a, 2000, "succeeded", 2500);
    AddFire(a, 3000, "failed", 3500);
    AddFire(b, 1000, "failed", 1100);
    AddFire(paused, 1000, "succeeded", 1100);
    ASSERT_TRUE(
        db().Run([&](soci::session& s) { s << "UPDATE job SET enabled = 0 WHERE id = :id", soci::use(paused); }).ok());
    ASSERT_TRUE(db().Run([&](soci::session& s) { s << "UPDATE job SET created_at = 77"; }).ok());
    const auto list = [&](std::optional<std::int64_t> job, std::int64_t after, int limit) {
        return LastSuccesses(job, after, limit);
    };
    auto all = list(std::nullopt, 0, 10);
    ASSERT_EQ(all.size(), 3u);
    EXPECT_EQ(all[0].job_id, a);
    EXPECT_EQ(all[0].job_name, "nightly");
    EXPECT_EQ(all[0].app, "billing");
    EXPECT_EQ(all[0].created_at, 77);
    EXPECT_EQ(all[0].last_success_at, 2500);
    EXPECT_EQ(all[0].last_success_fire_id, latest);
    EXPECT_EQ(all[1].job_id, b);
    EXPECT_FALSE(all[1].last_success_at.has_value());
    EXPECT_FALSE(all[1].last_success_fire_id.has_value());
    EXPECT_EQ(all[2].job_id, c);
    // Pages of one by id, and one job only.
    auto page = list(std::nullopt, a, 1);
    ASSERT_EQ(page.size(), 1u);
    EXPECT_EQ(page[0].job_id, b);
    auto one = list(a, 0, 10);
    ASSERT_EQ(one.size(), 1u);
    EXPECT_EQ(one[0].last_success_fire_id, latest);
    EXPECT_TRUE(list(paused, 0, 10).empty());
}

// A row whose finish a writer that does not know the fire moved (a node of a build before
// migration 025, during a rolling upgrade) cannot give the episode key: that job's last success
// is read from its fires. A success the fires no longer hold (purged) keeps the row's finish.
TEST_P(AlertRepositoryTest, ALastSuccessMovedWithoutItsFireIsReadFromTheFires) {
    const std::int64_t job = AddJob();
    const std::int64_t first = AddFire(job, 1000, "succeeded", 1500);
    ASSERT_EQ(LastSuccesses(job, 0, 10).at(0).last_success_fire_id, first);

    // The older build's upsert: finished_at and recorded_at only.
    const std::int64_t second = AddFire(job, 2000, "failed", 2500);
    Exec("UPDATE job_fire SET status = 'succeeded' WHERE id = " + std::to_string(second));
    Exec("UPDATE job_last_success SET finished_at = 2500, recorded_at = recorded_at + 1");
    auto read = LastSuccesses(job, 0, 10);
    ASSERT_EQ(read.size(), 1u);
    EXPECT_EQ(read[0].last_success_at, 2500);
    EXPECT_EQ(read[0].last_success_fire_id, second) << "the key moves with the success";

    Exec("DELETE FROM job_fire");
    Exec("UPDATE job_last_success SET finished_at = 3500");
    read = LastSuccesses(job, 0, 10);
    EXPECT_EQ(read.at(0).last_success_at, 3500) << "the row's finish, its fires purged";
    EXPECT_EQ(read.at(0).last_success_fire_id, first) << "the fire the row last knew";

    // A job without a row has no success recorded, whatever its fires say.
    const std::int64_t other = AddJob("other");
    AddFire(other, 1000, "failed", 1500);
    Exec("UPDATE job_fire SET status = 'succeeded' WHERE job_id = " + std::to_string(other));
    read = LastSuccesses(other, 0, 10);
    ASSERT_EQ(read.size(), 1u);
    EXPECT_FALSE(read[0].last_success_at.has_value());
    EXPECT_FALSE(read[0].last_success_fire_id.has_value());
}

// What the no_success rule's read costs the database: a row per job and its last success by
// primary key, not the job's history (MariaDB's handler counters of the session).
TEST_P(AlertRepositoryTest, LastSuccessesExamineTheJobsNotTheirHistory) {
    if (GetParam() != db::Backend::kMySql) GTEST_SKIP() << "MariaDB's handler counters";
    const std::int64_t job = AddJob();
    AddJob("other");
    std::string history =
        "INSERT INTO job_fire (job_id, scheduled_time, kind, epoch, status, due_at, created_at, finished_at) VALUES ";
    for (int i = 1; i <= 2000; ++i) {
        const std::string t = std::to_string(i * 1000);
        history += (i > 1 ? ", (" : "(") + std::to_string(job) + ", " + t + ", 'schedule', 1, 'succeeded', " + t +
                   ", " + t + ", " + t + ")";
    }
    Exec(history);
    const std::int64_t last = AddFire(job, 3'000'000, "succeeded", 3'000'500);

    long long examined = 0;
    std::vector<JobLastSuccess> read;
    ASSERT_TRUE(db().Run([&](soci::session& s) {
                        examined =
                            RowsExamined(s, [&] { read = AlertRepository::LastSuccesses(s, std::nullopt, 0, 500); });
                    })
                    .ok());
    ASSERT_EQ(read.size(), 2u);
    EXPECT_EQ(read[0].last_success_at, 3'000'500);
    EXPECT_EQ(read[0].last_success_fire_id, last);
    EXPECT_LE(examined, 10) << "2 jobs and 1 row of job_last_success, not 2,001 fires";
}

TEST_P(AlertRepositoryTest, UpdateRuleNeedsTheVersionReadAndBumpsIt) {
    AlertRepository alerts(db());
    AlertRule in{.name = "pager", .events = {AlertEvent::kFailed}, .url = "http://h/x", .secret = "s3cret"};
    auto created = alerts.CreateRule(in);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    EXPECT_EQ(created->version, 1);

    AlertRule edit = *created;
    edit.name = "pager-2";
    edit.events = {AlertEvent::kTimeout, AlertEvent::kLost};
    edit.enabled = false;
    auto updated = alerts.UpdateRule(edit, 1);
    ASSERT_TRUE(updated.ok()) << updated.status().ToString();
    EXPECT_EQ(updated->version, 2);
    EXPECT_EQ(updated->name, "pager-2");
    EXPECT_EQ(updated->events, (std::vector<AlertEvent>{AlertEvent::kTimeout, AlertEvent::kLost}));
    EXPECT_FALSE(updated->enabled);
    EXPECT_EQ(updated->created_at, created->created_at);

    edit.name = "stale";
    auto stale = alerts.UpdateRule(edit, 1);
    ASSERT_EQ(stale.status().code(), Code::kAborted);
    EXPECT_NE(stale.status().message().find("changed since it was read"), std::string::npos);
    EXPECT_EQ(alerts.GetRule(created->id)->name, "pager-2");
    edit.id = created->id + 100;
    EXPECT_EQ(alerts.UpdateRule(edit, 1).status().code(), Code::kNotFound);
}

TEST_P(AlertRepositoryTest, ManagedByRoundTripsThroughCreateUpdateAndClears) {
    AlertRepository alerts(db());
    AlertRule in{.name = "pager", .events = {AlertEvent::kFailed}, .url = "http://h/x", .secret = "s3cret"};
    auto by_hand = alerts.CreateRule(in);
    ASSERT_TRUE(by_hand.ok()) << by_hand.status().ToString();
    EXPECT_FALSE(by_hand->managed_by.has_value());
    in.managed_by = "ops.yaml";
    auto managed = alerts.CreateRule(in);
    ASSERT_TRUE(managed.ok()) << managed.status().ToString();
    EXPECT_EQ(alerts.GetRule(managed->id)->managed_by, "ops.yaml");
    auto listed = alerts.ListRules(0, 10);
    ASSERT_TRUE(listed.ok()) << listed.status().ToString();
    ASSERT_EQ(listed->size(), 2u);
    EXPECT_EQ((*listed)[1].managed_by, "ops.yaml");

    AlertRule edit = *managed;
    edit.managed_by = "other.yaml";
    ASSERT_EQ(alerts.UpdateRule(edit, 1)->managed_by, "other.yaml");
    edit.managed_by.reset();
    auto cleared = alerts.UpdateRule(edit, 2);
    ASSERT_TRUE(cleared.ok()) << cleared.status().ToString();
    EXPECT_FALSE(cleared->managed_by.has_value());
    EXPECT_FALSE(alerts.GetRule(managed->id)->managed_by.has_value());
}

TEST_P(AlertRepositoryTest, TestDeliveriesTakeNegativeFireIdsBesideTheRealOnes) {
    AlertRepository alerts(db());
    auto rule = alerts.CreateRule({.name = "p", .events = {AlertEvent::kFailed}, .url = "http://h/x", .secret = "s"});
    ASSERT_TRUE(rule.ok()) << rule.status().ToString();
    AlertDelivery real{.rule_id = rule->id, .job_id = 7, .fire_id = 3, .payload = "{}"};
    ASSERT_TRUE(
        db().Run([&](soci::session& s) { return AlertRepository::InsertDeliveryIfAbsent(s, db().dialect(), real); })
            .ok());
    auto first = alerts.QueueTestDelivery(rule->id, 7, AlertEvent::kFailed, R"({"test":true})");
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    auto second = alerts.QueueTestDelivery(rule->id, 7, AlertEvent::kFailed, R"({"test":true})");
    ASSERT_TRUE(second.ok()) << second.status().ToString();
    EXPECT_EQ(first->fire_id, -1);
    EXPECT_EQ(second->fire_id, -2);
    EXPECT_EQ(second->status, DeliveryStatus::kPending);
    EXPECT_EQ(second->payload, R"({"test":true})");
    auto due = db().Run([](soci::session& s) { return AlertRepository::ListDue(s, INT64_MAX / 2, 10); });
    ASSERT_TRUE(due.ok());
    EXPECT_EQ(due->size(), 3u);
    EXPECT_EQ(alerts.QueueTestDelivery(rule->id + 100, 0, AlertEvent::kFailed, "{}").status().code(), Code::kNotFound);
    // At most kMaxPendingTests wait at once; one sent makes room for the next.
    for (int i = 2; i < AlertRepository::kMaxPendingTests; ++i) {
        ASSERT_TRUE(alerts.QueueTestDelivery(rule->id, 7, AlertEvent::kFailed, "{}").ok());
    }
    EXPECT_EQ(alerts.QueueTestDelivery(rule->id, 7, AlertEvent::kFailed, "{}").status().code(),
              Code::kResourceExhausted);
    AlertDelivery sent = *first;
    sent.status = DeliveryStatus::kDelivered;
    sent.attempts = 1;
    sent.delivered_at = 1;
    ASSERT_TRUE(db().Run([&](soci::session& s) { return AlertRepository::RecordAttempt(s, sent); }).ok());
    EXPECT_TRUE(alerts.QueueTestDelivery(rule->id, 7, AlertEvent::kFailed, "{}").ok());
}

SCHED_DB_TEST_SUITE(AlertRepositoryTest);

}  // namespace
}  // namespace sched::store
