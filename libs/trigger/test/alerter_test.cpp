#include "sched/trigger/alerter.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <deque>

#include <gtest/gtest.h>

#include "master_lease_fixture.hpp"
#include "sched/common/clock.hpp"
#include "sched/common/crypto.hpp"
#include "sched/db/migrator.hpp"
#include "sched/db/testing/test_database.hpp"
#include "sched/lock/lock_store.hpp"
#include "sched/lock/sql_lock_store.hpp"
#include "sched/store/audit.hpp"
#include "sched/store/fire_metrics.hpp"
#include "sched/store/job.hpp"

namespace sched::trigger {
namespace {

using namespace std::chrono_literals;
using store::AlertEvent;

store::AlertableFire Fire(const std::string& status, std::optional<std::string> reason = std::nullopt) {
    store::AlertableFire f;
    f.id = 10;
    f.job_id = 3;
    f.job_name = "nightly";
    f.app = "billing";
    f.status = status;
    f.reason = std::move(reason);
    return f;
}

store::AlertRule Rule(std::vector<AlertEvent> events, std::optional<std::int64_t> job = std::nullopt, int n = 1) {
    store::AlertRule r;
    r.id = 1;
    r.name = "pager";
    r.job_id = job;
    r.events = std::move(events);
    r.consecutive_failures = n;
    r.url = "http://127.0.0.1:1/hook";
    r.secret = "topsecret";
    return r;
}

TEST(AlertMatching, OnlyFailuresTimeoutsLostAndMisfireRowsAreEvents) {
    EXPECT_EQ(FireAlertEvent(Fire("failed")), AlertEvent::kFailed);
    EXPECT_EQ(FireAlertEvent(Fire("timeout")), AlertEvent::kTimeout);
    EXPECT_EQ(FireAlertEvent(Fire("lost", "slave_died")), AlertEvent::kLost);
    EXPECT_EQ(FireAlertEvent(Fire("skipped", "misfire")), AlertEvent::kMisfire);
    EXPECT_FALSE(FireAlertEvent(Fire("skipped", "blocked")));
    EXPECT_FALSE(FireAlertEvent(Fire("succeeded")));
    EXPECT_FALSE(FireAlertEvent(Fire("killed")));
}

TEST(AlertMatching, ARuleWantsItsJobOrEveryJobAndItsEventsWhileEnabled) {
    const auto fire = Fire("failed");
    EXPECT_TRUE(RuleWants(Rule({AlertEvent::kFailed}), fire, AlertEvent::kFailed));
    EXPECT_TRUE(RuleWants(Rule({AlertEvent::kFailed}, 3), fire, AlertEvent::kFailed));
    EXPECT_FALSE(RuleWants(Rule({AlertEvent::kFailed}, 4), fire, AlertEvent::kFailed));
    EXPECT_FALSE(RuleWants(Rule({AlertEvent::kTimeout, AlertEvent::kMisfire}), fire, AlertEvent::kFailed));
    auto disabled = Rule({AlertEvent::kFailed});
    disabled.enabled = false;
    EXPECT_FALSE(RuleWants(disabled, fire, AlertEvent::kFailed));
}

TEST(AlertMatching, ConsecutiveFailuresNeedAStreakOfNButNotForMisfires) {
    const auto rule = Rule({AlertEvent::kFailed, AlertEvent::kMisfire}, std::nullopt, 3);
    EXPECT_FALSE(StreakSatisfies(rule, AlertEvent::kFailed, 2));
    EXPECT_TRUE(StreakSatisfies(rule, AlertEvent::kFailed, 3));
    EXPECT_TRUE(StreakSatisfies(rule, AlertEvent::kFailed, 4));
    EXPECT_TRUE(StreakSatisfies(rule, AlertEvent::kMisfire, 0));
}

TEST(AlertSignature, IsTheHmacSha256OfTimestampDotBody) {
    const std::string body = R"({"event":"failed"})";
    const std::string material = "1700000000." + body;
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    const std::string key = "topsecret";
    HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
         reinterpret_cast<const unsigned char*>(material.data()), material.size(), mac, &len);
    const std::string expected = "sha256=" + crypto::HexEncode(std::string(reinterpret_cast<char*>(mac), len));
    EXPECT_EQ(WebhookSignature(key, 1700000000, body), expected);
    EXPECT_NE(WebhookSignature(key, 1700000001, body), expected);
    EXPECT_NE(WebhookSignature("other", 1700000000, body), expected);
}

TEST(AlertDelivery, BackoffDoublesFromTheBaseUpToTheCap) {
    EXPECT_EQ(DeliveryBackoff(1, 5s, 10min), 5s);
    EXPECT_EQ(DeliveryBackoff(2, 5s, 10min), 10s);
    EXPECT_EQ(DeliveryBackoff(4, 5s, 10min), 40s);
    EXPECT_EQ(DeliveryBackoff(20, 5s, 10min), 10min);
    EXPECT_EQ(DeliveryBackoff(1000, 5s, 10min), 10min);
}

TEST(AlertPayloadTest, CarriesTheFireAndBoundsTheMessage) {
    auto fire = Fire("failed");
    fire.result_message = std::string(5000, 'x');
    fire.result_code = 2;
    const auto body = AlertPayload(Rule({AlertEvent::kFailed}), fire, AlertEvent::kFailed, 1, "http://ui");
    EXPECT_EQ(body["event"], "failed");
    EXPECT_EQ(body["job_name"], "nightly");
    EXPECT_EQ(body["fire_id"], 10);
    EXPECT_EQ(body["cluster_url"], "http://ui");
    EXPECT_EQ(body["result_message"].get<std::string>().size(), 1000u);
    EXPECT_TRUE(body["reason"].is_null());
}

class FakeSender final : public WebhookSender {
  public:
    struct Call {
        std::string url;
        Headers headers;
        std::string body;
    };
    void Start(const std::string& url, const Headers& headers, std::string body, Done done) override {
        calls.push_back({url, headers, std::move(body)});
        if (answers.empty()) return done(200);
        auto next = answers.front();
        answers.pop_front();
        done(std::move(next));
    }
    std::string Header(std::size_t call, const std::string& name) const {
        for (const auto& [k, v] : calls.at(call).headers) {
            if (k == name) return v;
        }
        return "";
    }
    std::vector<Call> calls;
    std::deque<Result<int>> answers;
};

class AlerterTest : public MasterLeaseTest {
  protected:
    AlerterTest() {
        config_.alert_settle = 0s;
        config_.alert_backoff = 5s;
        config_.alert_max_attempts = 3;
    }

    void SetUpDatabase() override {
        MasterLeaseTest::SetUpDatabase();
        if (HasFatalFailure()) return;
        job_ = CreateBillingJob("nightly");
        ASSERT_NE(job_, 0);
    }

    Alerter MakeAlerter() { return Alerter(pool_, *fence_, *time_, config_, metrics_, sender_); }

    std::int64_t AddFire(const std::string& status, std::int64_t ago_ms = 1000) {
        const std::int64_t finished = time_->NowMs() - ago_ms;
        const std::int64_t scheduled = finished - 10;
        auto id = db().Run([&](soci::session& s) {
            s << "INSERT INTO job_fire (job_id, scheduled_time, kind, epoch, status, due_at, created_at, finished_at) "
                 "VALUES (:j, :t, 'schedule', 1, :st, :t2, :t3, :f)",
                soci::use(job_), soci::use(scheduled), soci::use(status), soci::use(scheduled), soci::use(scheduled),
                soci::use(finished);
            long long new_id = 0;
            s.get_last_insert_id("job_fire", new_id);
            // A success as the results path records it too.
            if (status == "succeeded") {
                store::RecordLastSuccesses(s, {{.job_id = job_, .finished_ms = finished, .fire_id = new_id}});
            }
            return static_cast<std::int64_t>(new_id);
        });
        EXPECT_TRUE(id.ok()) << id.status().ToString();
        return *id;
    }

    // Rule()'s rule of job_, stored (the repository assigns its id).
    std::int64_t AddRule(std::vector<AlertEvent> events, int n = 1) {
        auto r = Rule(std::move(events), job_, n);
        r.id = 0;
        return Store(r);
    }

    std::int64_t Store(const store::AlertRule& r) {
        auto created = store::AlertRepository(db()).CreateRule(r);
        EXPECT_TRUE(created.ok()) << created.status().ToString();
        return created->id;
    }

    // A no_success rule (of job_ unless `global`).
    std::int64_t AddSloRule(std::int64_t within_ms, bool global = false) {
        store::AlertRule r;
        r.name = "slo";
        if (!global) r.job_id = job_;
        r.events = {AlertEvent::kNoSuccess};
        r.no_success_within_ms = within_ms;
        r.url = "http://127.0.0.1:1/slo";
        r.secret = "topsecret";
        return Store(r);
    }

    // Jobs are created on the real DB clock; the alerter runs on the fake one.
    void SetJob(std::int64_t job, std::int64_t created_ago_ms, bool enabled = true) {
        const std::int64_t created = time_->NowMs() - created_ago_ms;
        const int on = enabled ? 1 : 0;
        ASSERT_TRUE(db().Run([&](soci::session& s) {
                            s << "UPDATE job SET created_at = :c, enabled = :e WHERE id = :id", soci::use(created),
                                soci::use(on), soci::use(job);
                        })
                        .ok());
    }

    std::vector<store::AlertDelivery> Deliveries(AlertEvent event) {
        std::vector<store::AlertDelivery> out;
        for (auto& d : Deliveries()) {
            if (d.event == event) out.push_back(std::move(d));
        }
        return out;
    }

    std::vector<store::AlertDelivery> Deliveries() { return *store::AlertRepository(db()).ListDeliveries({}); }
    double Sent(const std::string& result) {
        return metrics_.Counter("sched_alert_deliveries_total", "", {"result"}).Labels({result}).Value();
    }

    FakeSender sender_;
};

TEST_P(AlerterTest, AFailedFireCreatesOneSignedDeliveryEvenWhenANewMasterEvaluatesItAgain) {
    const auto rule = AddRule({AlertEvent::kFailed});
    const auto fire = AddFire("failed", 2000);
    AddFire("succeeded", 1000);
    auto alerter = MakeAlerter();
    auto round = alerter.Round(epoch_);
    ASSERT_TRUE(round.ok()) << round.status().ToString();
    EXPECT_EQ(round->fires_evaluated, 1);
    EXPECT_EQ(round->deliveries_created, 1);
    EXPECT_EQ(round->delivered, 1);
    ASSERT_EQ(sender_.calls.size(), 1u);
    const auto& call = sender_.calls[0];
    EXPECT_EQ(call.url, "http://127.0.0.1:1/hook");
    const auto body = nlohmann::json::parse(call.body);
    EXPECT_EQ(body["fire_id"], fire);
    EXPECT_EQ(body["rule_id"], rule);
    EXPECT_EQ(body["job_name"], "nightly");
    const std::string ts = sender_.Header(0, "X-Sched-Timestamp");
    EXPECT_EQ(sender_.Header(0, "X-Sched-Signature"), WebhookSignature("topsecret", std::stoll(ts), call.body));
    auto stored = Deliveries();
    ASSERT_EQ(stored.size(), 1u);
    EXPECT_EQ(sender_.Header(0, "X-Sched-Delivery"), std::to_string(stored[0].id));
    EXPECT_EQ(stored[0].status, store::DeliveryStatus::kDelivered);
    EXPECT_EQ(stored[0].attempts, 1);
    EXPECT_EQ(Sent("delivered"), 1);

    // Another master (a fresh cursor) looks at the same fires: nothing new, nothing resent.
    auto successor = MakeAlerter();
    auto again = successor.Round(epoch_);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->fires_evaluated, 1);
    EXPECT_EQ(again->deliveries_created, 0);
    EXPECT_EQ(sender_.calls.size(), 1u);
    // And the first one's cursor has moved past it.
    EXPECT_EQ(alerter.Round(epoch_)->fires_evaluated, 0);
}

// A round with no rule enabled and nothing ended reads the rules once and runs the one fenced
// batch that moves the cursor: no no_success transaction and no delivery listing (MariaDB: the
// transactions and SELECTs its one session counted; a SET is neither).
TEST_P(AlerterTest, AQuietRoundWithoutRulesIsOneTransactionAndThreeReads) {
    if (db().backend() != db::Backend::kMySql) GTEST_SKIP() << "counts a MariaDB session's statements";
    db::DbUrl url = test_db().url();
    url.pool = 1;
    auto one = db::Database::Open(url);
    ASSERT_TRUE(one.ok()) << one.status().ToString();
    lock::Fence fence(*one, "master", "node-a");
    Alerter alerter(*one, fence, *time_, config_, metrics_, sender_);
    struct Counts {
        long long begins = 0;
        long long selects = 0;
    };
    const auto counts = [&] {
        auto read = (*one)->Run([](soci::session& s) {
            std::vector<std::string> names(4);
            std::vector<long long> values(4);
            s << "SHOW SESSION STATUS WHERE Variable_name IN ('Com_begin', 'Com_select')", soci::into(names),
                soci::into(values);
            Counts c;
            for (std::size_t i = 0; i < names.size(); ++i) {
                (names[i] == "Com_begin" ? c.begins : c.selects) = values[i];
            }
            return c;
        });
        EXPECT_TRUE(read.ok()) << read.status().ToString();
        return read.ok() ? *read : Counts{};
    };
    ASSERT_TRUE(alerter.Round(epoch_).ok());  // the first also confirms the epoch (one check fewer)
    const Counts before = counts();
    auto round = alerter.Round(epoch_);
    ASSERT_TRUE(round.ok()) << round.status().ToString();
    const Counts after = counts();
    EXPECT_EQ(after.begins - before.begins, 1) << "the cursor's batch only";
    EXPECT_EQ(after.selects - before.selects, 3) << "the rules, the ended fires, the lease's check";
    EXPECT_TRUE(sender_.calls.empty());
}

TEST_P(AlerterTest, ARoundWithoutAlertEventsMovesTheCursorToTheSettledPoint) {
    // In a healthy cluster a round finds no failure; its cursor still moves to the point it read
    // up to (now - alert-settle, 0 s here), or every round would read again every fire ended
    // since the term began (1.6 million rows per round at 8,000 fires/s after 200 s).
    AddRule({AlertEvent::kFailed});
    AddFire("succeeded", 3000);
    AddFire("succeeded", 2000);
    auto alerter = MakeAlerter();
    ASSERT_EQ(alerter.Round(epoch_)->fires_evaluated, 0);
    // A failure recorded as ended before that point is behind the cursor (alert-settle is the
    // time an end may take to commit); one ended after it is read.
    AddFire("failed", 1500);
    EXPECT_EQ(alerter.Round(epoch_)->fires_evaluated, 0) << "the cursor did not move past the successes";
    clock_.Advance(5s);
    const auto later = AddFire("failed", 1000);
    const auto round = alerter.Round(epoch_);
    ASSERT_TRUE(round.ok()) << round.status().ToString();
    EXPECT_EQ(round->fires_evaluated, 1);
    ASSERT_EQ(Deliveries().size(), 1u);
    EXPECT_EQ(Deliveries()[0].fire_id, later);
    // A new master's cursor starts alert-lookback back and finds both.
    EXPECT_EQ(MakeAlerter().Round(epoch_)->fires_evaluated, 2);
}

TEST_P(AlerterTest, ConsecutiveFailuresAlertFromTheNthFailureInARow) {
    AddRule({AlertEvent::kFailed, AlertEvent::kTimeout}, 3);
    AddFire("failed", 5000);
    AddFire("timeout", 4000);
    auto alerter = MakeAlerter();
    EXPECT_EQ(alerter.Round(epoch_)->deliveries_created, 0);
    clock_.Advance(5s);  // each later fire ends after the point the last round read up to
    const auto third = AddFire("failed", 3000);
    EXPECT_EQ(alerter.Round(epoch_)->deliveries_created, 1);
    clock_.Advance(5s);
    AddFire("succeeded", 2000);
    AddFire("failed", 1000);
    EXPECT_EQ(alerter.Round(epoch_)->deliveries_created, 0);
    auto stored = Deliveries();
    ASSERT_EQ(stored.size(), 1u);
    EXPECT_EQ(stored[0].fire_id, third);
    EXPECT_EQ(nlohmann::json::parse(stored[0].payload)["consecutive_failures"], 3);
}

TEST_P(AlerterTest, AFailingWebhookIsRetriedWithBackoffThenMarkedFailed) {
    AddRule({AlertEvent::kFailed});
    AddFire("failed");
    sender_.answers = {Unavailable("connection refused"), 500, 503};
    auto alerter = MakeAlerter();
    auto first = alerter.Round(epoch_);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    EXPECT_EQ(first->retried, 1);
    auto d = Deliveries().at(0);
    EXPECT_EQ(d.status, store::DeliveryStatus::kPending);
    EXPECT_EQ(d.attempts, 1);
    EXPECT_NE(d.last_error.value_or("").find("connection refused"), std::string::npos);
    const std::int64_t retry_at = d.next_attempt_at;
    EXPECT_EQ(retry_at - time_->NowMs(), 5000);
    // Not due yet: nothing is sent.
    clock_.Advance(4s);
    EXPECT_EQ(alerter.Round(epoch_)->retried, 0);
    EXPECT_EQ(sender_.calls.size(), 1u);
    clock_.Advance(1s);
    EXPECT_EQ(alerter.Round(epoch_)->retried, 1);
    d = Deliveries().at(0);
    EXPECT_EQ(d.attempts, 2);
    EXPECT_EQ(d.last_error, "HTTP 500");
    EXPECT_EQ(d.next_attempt_at - time_->NowMs(), 10000);  // doubled
    clock_.Advance(10s);
    EXPECT_EQ(alerter.Round(epoch_)->failed, 1);
    d = Deliveries().at(0);
    EXPECT_EQ(d.status, store::DeliveryStatus::kFailed);
    EXPECT_EQ(d.attempts, 3);
    EXPECT_EQ(Sent("retry"), 2);
    EXPECT_EQ(Sent("failed"), 1);
    clock_.Advance(1h);
    (void)alerter.Round(epoch_);
    EXPECT_EQ(sender_.calls.size(), 3u);
}

TEST_P(AlerterTest, ADeposedMasterCreatesAndRecordsNothing) {
    AddRule({AlertEvent::kFailed});
    AddFire("failed");
    auto alerter = MakeAlerter();
    auto refused = alerter.Round(epoch_ + 1);
    EXPECT_FALSE(refused.ok());
    EXPECT_TRUE(Deliveries().empty());
    EXPECT_TRUE(sender_.calls.empty());
}

TEST_P(AlerterTest, AJobIsPausedOnceAfterPauseAfterFailuresFailuresInARowWithAPausedAlert) {
    auto job = *store::JobRepository(db()).Get(job_);
    job.pause_after_failures = 2;
    job.schedule_type = sched::ScheduleType::kCron;
    job.schedule_expr = "* * * * * ?";
    job.next_fire_time = time_->NowMs() + 1000;
    ASSERT_TRUE(store::JobRepository(db()).Update(job, job.version).ok());
    // The fires below ended after that change (updated_at is the real DB clock, the fires' times
    // the fake one).
    ASSERT_TRUE(db().Run([&](soci::session& s) { s << "UPDATE job SET updated_at = 0"; }).ok());
    const auto rule = AddRule({AlertEvent::kPaused});
    AddFire("failed", 2000);
    auto alerter = MakeAlerter();
    auto first = alerter.Round(epoch_);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    EXPECT_EQ(first->jobs_paused, 0);
    EXPECT_TRUE(store::JobRepository(db()).Get(job_)->enabled);
    clock_.Advance(5s);  // ends after the point the first round read up to
    const auto second_failure = AddFire("timeout", 500);
    auto second = alerter.Round(epoch_);
    ASSERT_TRUE(second.ok()) << second.status().ToString();
    EXPECT_EQ(second->jobs_paused, 1);
    const auto paused = *store::JobRepository(db()).Get(job_);
    EXPECT_FALSE(paused.enabled);
    EXPECT_EQ(paused.version, job.version + 2);
    EXPECT_FALSE(paused.next_fire_time.has_value());
    // Who paused it and why, on the job and in the audit log, as the scheduler.
    ASSERT_TRUE(paused.paused.has_value());
    EXPECT_EQ(paused.paused->by, "scheduler");
    EXPECT_NE(paused.paused->note.find("failed runs in a row"), std::string::npos) << paused.paused->note;
    store::AuditFilter by_job;
    by_job.target_kind = "job";
    by_job.target_id = std::to_string(job_);
    const auto audit = *store::AuditRepository(db()).List(by_job);
    ASSERT_EQ(audit.size(), 1u);
    EXPECT_EQ(audit[0].actor, "scheduler");
    EXPECT_EQ(audit[0].action, "pause");
    auto stored = Deliveries();
    ASSERT_EQ(stored.size(), 1u);
    EXPECT_EQ(stored[0].rule_id, rule);
    EXPECT_EQ(stored[0].event, AlertEvent::kPaused);
    EXPECT_EQ(stored[0].fire_id, second_failure);
    EXPECT_EQ(sender_.Header(0, "X-Sched-Event"), "paused");

    // Resumed by hand: a successor re-evaluating the same fires does not pause it again.
    auto resumed = paused;
    resumed.enabled = true;
    resumed.next_fire_time = time_->NowMs() + 1000;
    ASSERT_TRUE(store::JobRepository(db()).Update(resumed, resumed.version).ok());
    auto successor = MakeAlerter();
    EXPECT_EQ(successor.Round(epoch_)->jobs_paused, 0);
    EXPECT_TRUE(store::JobRepository(db()).Get(job_)->enabled);
    EXPECT_EQ(Deliveries().size(), 1u);
}

TEST_P(AlerterTest, AJobWithoutSuccessWithinXGetsOneNoSuccessDeliveryAcrossRoundsAndAFailover) {
    constexpr std::int64_t kHour = 3'600'000;
    SetJob(job_, 2 * kHour);
    AddFire("failed", 1000);  // a failure is no success
    const auto rule = AddSloRule(kHour);
    auto alerter = MakeAlerter();
    auto first = alerter.Round(epoch_);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    EXPECT_EQ(first->slo_jobs_checked, 1);
    EXPECT_EQ(first->deliveries_created, 1);
    ASSERT_EQ(sender_.calls.size(), 1u);
    EXPECT_EQ(sender_.calls[0].url, "http://127.0.0.1:1/slo");
    EXPECT_EQ(sender_.Header(0, "X-Sched-Event"), "no_success");
    const auto body = nlohmann::json::parse(sender_.calls[0].body);
    EXPECT_EQ(body["event"], "no_success");
    EXPECT_EQ(body["rule_id"], rule);
    EXPECT_EQ(body["job_id"], job_);
    EXPECT_EQ(body["job_name"], "nightly");
    EXPECT_EQ(body["app"], "billing");
    EXPECT_EQ(body["no_success_within_ms"], kHour);
    EXPECT_TRUE(body["last_success_at_ms"].is_null());
    EXPECT_EQ(body["job_created_at_ms"], time_->NowMs() - 2 * kHour);

    // Later rounds of the same master, still in breach: nothing new.
    clock_.Advance(30min);
    EXPECT_EQ(alerter.Round(epoch_)->deliveries_created, 0);
    EXPECT_EQ(alerter.Round(epoch_)->deliveries_created, 0);

    // Failover: node-b takes the lease (a new epoch) and re-evaluates from scratch.
    auto released = lock_store_->ReleaseLock("master", holding_, "node-a");
    ASSERT_TRUE(released.ok() && *released) << released.status().ToString();
    auto taken = lock::TryAcquireOnce(*lock_store_, "master", "node-b", 30s);
    ASSERT_TRUE(taken.ok() && taken->has_value()) << taken.status().ToString();
    const std::int64_t new_epoch = (*taken)->epoch;
    ASSERT_NE(new_epoch, epoch_);
    lock::Fence fence_b(pool_, "master", "node-b");
    Alerter successor(pool_, fence_b, *time_, config_, metrics_, sender_);
    auto after_failover = successor.Round(new_epoch);
    ASSERT_TRUE(after_failover.ok()) << after_failover.status().ToString();
    EXPECT_EQ(after_failover->slo_jobs_checked, 1);
    EXPECT_EQ(after_failover->deliveries_created, 0);
    // The deposed master is refused.
    EXPECT_FALSE(alerter.Round(epoch_).ok());
    EXPECT_EQ(Deliveries(AlertEvent::kNoSuccess).size(), 1u);
    EXPECT_EQ(sender_.calls.size(), 1u);
}

TEST_P(AlerterTest, ASuccessEndsTheEpisodeAndTheNextBreachIsAlertedAgain) {
    constexpr std::int64_t kHour = 3'600'000;
    SetJob(job_, 2 * kHour);
    AddSloRule(kHour);
    auto alerter = MakeAlerter();
    EXPECT_EQ(alerter.Round(epoch_)->deliveries_created, 1);
    const auto success = AddFire("succeeded", 1000);
    EXPECT_EQ(alerter.Round(epoch_)->deliveries_created, 0);  // succeeded a second ago
    clock_.Advance(59min);
    EXPECT_EQ(alerter.Round(epoch_)->deliveries_created, 0);  // still within the hour
    clock_.Advance(2min);
    EXPECT_EQ(alerter.Round(epoch_)->deliveries_created, 1);  // a new episode
    EXPECT_EQ(alerter.Round(epoch_)->deliveries_created, 0);
    auto stored = Deliveries(AlertEvent::kNoSuccess);
    ASSERT_EQ(stored.size(), 2u);
    // Newest first: the second episode is keyed by the success that ended the first.
    EXPECT_EQ(stored[0].fire_id, success);
    EXPECT_EQ(stored[1].fire_id, 0);
    const auto body = nlohmann::json::parse(stored[0].payload);
    EXPECT_EQ(body["last_success_fire_id"], success);
    EXPECT_EQ(body["last_success_at_ms"], time_->NowMs() - 61 * 60'000 - 1000);
    EXPECT_EQ(sender_.calls.size(), 2u);
}

TEST_P(AlerterTest, AGlobalNoSuccessRuleSkipsPausedJobsAndJobsThatSucceededRecently) {
    constexpr std::int64_t kHour = 3'600'000;
    SetJob(job_, 5 * kHour);
    AddFire("failed", 3 * kHour);
    AddFire("succeeded", 10 * 60'000);  // ten minutes ago
    const auto paused = CreateBillingJob("paused");
    SetJob(paused, 5 * kHour, false);
    const auto silent = CreateBillingJob("silent");
    SetJob(silent, 5 * kHour);
    const auto young = CreateBillingJob("young");
    SetJob(young, 10 * 60'000);  // created ten minutes ago, never run
    AddSloRule(kHour, true);
    // A fire rule wanting only no_success is not about fires.
    auto alerter = MakeAlerter();
    auto round = alerter.Round(epoch_);
    ASSERT_TRUE(round.ok()) << round.status().ToString();
    EXPECT_EQ(round->slo_jobs_checked, 3);  // not the paused one
    EXPECT_EQ(round->deliveries_created, 1);
    auto stored = Deliveries(AlertEvent::kNoSuccess);
    ASSERT_EQ(stored.size(), 1u);
    EXPECT_EQ(stored[0].job_id, silent);
    EXPECT_EQ(nlohmann::json::parse(stored[0].payload)["job_name"], "silent");
    // Resumed, the paused job is in breach too (its creation is long ago): one delivery.
    SetJob(paused, 5 * kHour, true);
    EXPECT_EQ(alerter.Round(epoch_)->deliveries_created, 1);
    EXPECT_EQ(alerter.Round(epoch_)->deliveries_created, 0);
    EXPECT_EQ(Deliveries(AlertEvent::kNoSuccess).size(), 2u);
}

TEST(AlertNoSuccess, BreachedWhenTheLastSuccessOrElseCreationIsOlderThanTheThreshold) {
    auto rule = Rule({AlertEvent::kNoSuccess});
    store::JobLastSuccess job;
    job.created_at = 1000;
    EXPECT_FALSE(NoSuccessBreached(rule, job, 1'000'000));  // no threshold
    rule.no_success_within_ms = 60'000;
    EXPECT_FALSE(NoSuccessBreached(rule, job, 61'000));
    EXPECT_TRUE(NoSuccessBreached(rule, job, 61'001));
    job.last_success_at = 50'000;
    EXPECT_FALSE(NoSuccessBreached(rule, job, 61'001));
    EXPECT_TRUE(NoSuccessBreached(rule, job, 110'001));
}

SCHED_DB_TEST_SUITE(AlerterTest);

}  // namespace
}  // namespace sched::trigger
