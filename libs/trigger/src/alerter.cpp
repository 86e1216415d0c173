#include "sched/trigger/alerter.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <mutex>
#include <utility>

#include <spdlog/spdlog.h>

#include "sched/common/backoff.hpp"
#include "sched/common/crypto.hpp"
#include "sched/http/url.hpp"
#include "sched/store/audit.hpp"
#include "sched/store/job.hpp"

namespace sched::trigger {

namespace impl {

// The webhook calls in flight: started by the alert loop, ended on the sender's threads. A
// delivery counts as in flight from its start until the round that records its outcome takes
// it, so it is never started twice at once.
class WebhookFlights {
  public:
    struct Landed {
        store::AlertDelivery delivery;
        std::int64_t epoch = 0;
        Result<int> outcome;
    };
    struct Counts {
        std::vector<std::int64_t> ids;
        std::map<std::string, int> per_receiver;
    };

    void Launch(std::int64_t id, const std::string& receiver) {
        std::lock_guard lock(mu_);
        flying_[id] = receiver;
    }
    void Land(Landed landed) {
        std::lock_guard lock(mu_);
        landed_.push_back(std::move(landed));
    }
    std::vector<Landed> TakeLanded() {
        std::lock_guard lock(mu_);
        for (const auto& l : landed_) flying_.erase(l.delivery.id);
        return std::exchange(landed_, {});
    }
    Counts Snapshot() const {
        std::lock_guard lock(mu_);
        Counts c;
        for (const auto& [id, receiver] : flying_) {
            c.ids.push_back(id);
            ++c.per_receiver[receiver];
        }
        return c;
    }
    int Count() const {
        std::lock_guard lock(mu_);
        return static_cast<int>(flying_.size());
    }

  private:
    mutable std::mutex mu_;
    std::map<std::int64_t, std::string> flying_;  // delivery id -> receiver
    std::vector<Landed> landed_;
};

}  // namespace impl

namespace {

using store::AlertEvent;

constexpr std::size_t kMaxMessageBytes = 1000;
constexpr int kMaxRules = 1000;
constexpr int kMaxBatchesPerRound = 20;

// Calls to one host:port share its capacity whatever rule they come from; an unparsable URL
// (refused by the API, so only an old row) is its own receiver.
std::string ReceiverOf(const std::string& url) {
    auto parsed = http::Url::Parse(url);
    return parsed.ok() ? parsed->Authority() : url;
}

bool IsFailure(AlertEvent e) {
    return e == AlertEvent::kFailed || e == AlertEvent::kTimeout || e == AlertEvent::kLost;
}

std::string CutUtf8(const std::string& text, std::size_t max) {
    if (text.size() <= max) return text;
    std::size_t end = max;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    return text.substr(0, end);
}

// The automatic pause in the audit log, inside the fenced transaction that paused the job: the
// web module's job view is not reachable from here (layers), so before/after carry the fields
// that changed.
void RecordSchedulerPause(soci::session& s, const db::Dialect& dialect, std::int64_t job_id,
                          const std::string& job_name, const std::string& why) {
    store::AuditEntry e;
    e.actor = store::kSchedulerActor;
    e.actor_role = store::kSchedulerActor;
    e.action = "pause";
    e.target_kind = "job";
    e.target_id = std::to_string(job_id);
    e.target_name = job_name;
    e.before_json = nlohmann::json{{"enabled", true}, {"paused", nullptr}}.dump();
    e.after_json =
        nlohmann::json{{"enabled", false}, {"paused", {{"by", store::kSchedulerActor}, {"note", why}}}}.dump();
    store::AuditRepository::Record(s, dialect, e);
}

}  // namespace

std::optional<AlertEvent> FireAlertEvent(const store::AlertableFire& fire) {
    if (fire.status == "failed") return AlertEvent::kFailed;
    if (fire.status == "timeout") return AlertEvent::kTimeout;
    if (fire.status == "lost") return AlertEvent::kLost;
    if (fire.status == "skipped" && fire.reason == "misfire") return AlertEvent::kMisfire;
    return std::nullopt;
}

bool RuleWants(const store::AlertRule& rule, const store::AlertableFire& fire, AlertEvent event) {
    if (!rule.enabled) return false;
    if (rule.job_id && *rule.job_id != fire.job_id) return false;
    return std::find(rule.events.begin(), rule.events.end(), event) != rule.events.end();
}

bool StreakSatisfies(const store::AlertRule& rule, AlertEvent event, int streak) {
    return !IsFailure(event) || streak >= rule.consecutive_failures;
}

nlohmann::json AlertPayload(const store::AlertRule& rule, const store::AlertableFire& fire, AlertEvent event,
                            int streak, const std::string& cluster_url) {
    nlohmann::json body = {
        {"event", store::AlertEventName(event)},
        {"rule_id", rule.id},
        {"rule_name", rule.name},
        {"job_id", fire.job_id},
        {"job_name", fire.job_name},
        {"app", fire.app},
        {"fire_id", fire.id},
        {"scheduled_time_ms", fire.scheduled_time},
        {"finished_at_ms", fire.finished_at},
        {"status", fire.status},
        {"reason", fire.reason ? nlohmann::json(*fire.reason) : nlohmann::json()},
        {"attempt", fire.attempt},
        {"result_code", fire.result_code ? nlohmann::json(*fire.result_code) : nlohmann::json()},
        {"result_message",
         fire.result_message ? nlohmann::json(CutUtf8(*fire.result_message, kMaxMessageBytes)) : nlohmann::json()},
        {"consecutive_failures", streak}};
    if (!cluster_url.empty()) body["cluster_url"] = cluster_url;
    return body;
}

bool NoSuccessBreached(const store::AlertRule& rule, const store::JobLastSuccess& job, std::int64_t now_ms) {
    if (!rule.no_success_within_ms) return false;
    return job.last_success_at.value_or(job.created_at) < now_ms - *rule.no_success_within_ms;
}

nlohmann::json NoSuccessPayload(const store::AlertRule& rule, const store::JobLastSuccess& job,
                                const std::string& cluster_url) {
    const auto or_null = [](const std::optional<std::int64_t>& v) {
        return v ? nlohmann::json(*v) : nlohmann::json();
    };
    nlohmann::json body = {{"event", store::AlertEventName(AlertEvent::kNoSuccess)},
                           {"rule_id", rule.id},
                           {"rule_name", rule.name},
                           {"job_id", job.job_id},
                           {"job_name", job.job_name},
                           {"app", job.app},
                           {"no_success_within_ms", or_null(rule.no_success_within_ms)},
                           {"last_success_at_ms", or_null(job.last_success_at)},
                           {"last_success_fire_id", or_null(job.last_success_fire_id)},
                           {"job_created_at_ms", job.created_at}};
    if (!cluster_url.empty()) body["cluster_url"] = cluster_url;
    return body;
}

std::string WebhookSignature(const std::string& secret, std::int64_t timestamp_s, const std::string& body) {
    return "sha256=" + crypto::HmacSha256Hex(secret, std::to_string(timestamp_s) + "." + body);
}

Micros DeliveryBackoff(int attempts, Micros base, Micros max) {
    return CappedExponential(base, attempts, max);
}

Alerter::Alerter(std::shared_ptr<db::Database> db, lock::Fence& fence, const DbTime& time, MasterConfig config,
                 MetricsRegistry& metrics, WebhookSender& sender)
    : db_(std::move(db)),
      fence_(fence),
      time_(time),
      config_(std::move(config)),
      sender_(sender),
      delivered_(
          metrics
              .Counter("sched_alert_deliveries_total", "Alert webhook attempts by the master, by result.", {"result"})
              .Labels({"delivered"})),
      retried_(metrics.Counter("sched_alert_deliveries_total", "", {"result"}).Labels({"retry"})),
      failed_(metrics.Counter("sched_alert_deliveries_total", "", {"result"}).Labels({"failed"})),
      created_(metrics
                   .Counter("sched_alert_deliveries_created_total",
                            "Alert deliveries created by the master's rule evaluation.")
                   .Labels({})),
      flights_(std::make_shared<impl::WebhookFlights>()) {}

Alerter::~Alerter() = default;

int Alerter::InFlight() const {
    return flights_->Count();
}

Result<std::vector<store::AlertRule>> Alerter::ReadRules() {
    return db_->Run([](soci::session& s) { return store::AlertRepository::EnabledRules(s, kMaxRules); });
}

Result<AlertReport> Alerter::EvaluateBatch(std::int64_t epoch, const std::vector<store::AlertRule>& rules) {
    const std::int64_t now = time_.NowMs();
    if (epoch != cursor_epoch_) {
        // A new term: what the previous master may not have evaluated lies within the lookback;
        // re-evaluating what it did is a no-op (the deliveries' unique key).
        cursor_epoch_ = epoch;
        cursor_ms_ = now - std::chrono::duration_cast<std::chrono::milliseconds>(config_.alert_lookback).count();
        cursor_id_ = 0;
    }
    const std::int64_t until =
        now - std::chrono::duration_cast<std::chrono::milliseconds>(config_.alert_settle).count();
    struct Batch {
        AlertReport report;
        std::int64_t last_ms = 0;
        std::int64_t last_id = 0;
        struct Paused {
            std::int64_t job_id;
            std::string name;
            int streak;
        };
        std::vector<Paused> paused;
    };
    auto batch = fence_.RunFenced(epoch, [&](soci::session& s) -> Result<Batch> {
        Batch b;
        b.last_ms = cursor_ms_;
        b.last_id = cursor_id_;
        const auto fires =
            store::AlertRepository::ListEndedAfter(s, cursor_ms_, cursor_id_, until, config_.alert_batch);
        const bool cut = static_cast<int>(fires.size()) >= config_.alert_batch;
        if (!cut && until > cursor_ms_) {
            // Not cut by the batch: every fire that ended up to `until` was read. The cursor
            // moves there, past the successes after the last alert event; otherwise, in a
            // healthy cluster, each round would read again every fire since the term began.
            b.last_ms = until;
            b.last_id = std::numeric_limits<std::int64_t>::max();
        }
        if (fires.empty()) return b;
        const auto deliver = [&](const store::AlertRule& rule, const store::AlertableFire& fire, AlertEvent event,
                                 int streak) {
            store::AlertDelivery d;
            d.rule_id = rule.id;
            d.job_id = fire.job_id;
            d.fire_id = fire.id;
            d.event = event;
            d.payload = AlertPayload(rule, fire, event, streak, config_.cluster_url).dump();
            d.next_attempt_at = now;
            if (store::AlertRepository::InsertDeliveryIfAbsent(s, db_->dialect(), d)) ++b.report.deliveries_created;
        };
        for (const auto& fire : fires) {
            if (cut) {
                b.last_ms = fire.finished_at;
                b.last_id = fire.id;
            }
            ++b.report.fires_evaluated;
            const auto event = FireAlertEvent(fire);
            if (!event) continue;
            int streak = 0;
            if (IsFailure(*event)) {
                // As deep as the strictest wanting rule or the job's pause needs (the API bounds
                // both by 1,000); a depth of 1 is this fire itself.
                int depth = std::max(1, fire.pause_after_failures);
                for (const auto& r : rules) {
                    if (RuleWants(r, fire, *event)) depth = std::max(depth, r.consecutive_failures);
                }
                streak = depth == 1 ? 1
                                    : store::AlertRepository::FailureStreak(s, fire.job_id, fire.scheduled_time,
                                                                            fire.id, depth);
            }
            for (const auto& rule : rules) {
                if (RuleWants(rule, fire, *event) && StreakSatisfies(rule, *event, streak)) {
                    deliver(rule, fire, *event, streak);
                }
            }
            // Only a job not changed since the fire ended is paused: a successor re-evaluating
            // this fire (the lookback) must not pause again a job someone resumed meanwhile.
            const std::string why = "pause_after_failures: " + std::to_string(streak) +
                                    " failed runs in a row (last: fire " + std::to_string(fire.id) + ")";
            if (IsFailure(*event) && fire.pause_after_failures > 0 && streak >= fire.pause_after_failures &&
                store::JobRepository::Pause(s, db_->dialect(), fire.job_id, fire.finished_at, why)) {
                b.paused.push_back({fire.job_id, fire.job_name, streak});
                RecordSchedulerPause(s, db_->dialect(), fire.job_id, fire.job_name, why);
                for (const auto& rule : rules) {
                    if (RuleWants(rule, fire, AlertEvent::kPaused)) deliver(rule, fire, AlertEvent::kPaused, streak);
                }
            }
        }
        return b;
    });
    if (!batch.ok()) return batch.status();
    cursor_ms_ = batch->last_ms;
    cursor_id_ = batch->last_id;
    if (batch->report.deliveries_created > 0) created_.Inc(batch->report.deliveries_created);
    for (const auto& p : batch->paused) {
        spdlog::warn("master paused job {} ({}) after {} failed runs in a row (pause_after_failures)", p.job_id, p.name,
                     p.streak);
    }
    batch->report.jobs_paused = static_cast<int>(batch->paused.size());
    return batch->report;
}

Result<AlertReport> Alerter::EvaluateNoSuccess(std::int64_t epoch, const std::vector<store::AlertRule>& rules) {
    // No rule about no_success (the usual case): no transaction at all.
    if (std::none_of(rules.begin(), rules.end(), [](const auto& r) { return r.no_success_within_ms.has_value(); })) {
        slo_cursor_.clear();
        return AlertReport{};
    }
    const std::int64_t now = time_.NowMs();
    struct Evaluated {
        AlertReport report;
        std::map<std::int64_t, std::int64_t> cursors;
    };
    auto evaluated = fence_.RunFenced(epoch, [&](soci::session& s) -> Result<Evaluated> {
        Evaluated e;
        for (const auto& rule : rules) {
            if (!rule.no_success_within_ms) continue;
            const auto known = slo_cursor_.find(rule.id);
            const std::int64_t after = known == slo_cursor_.end() ? 0 : known->second;
            const auto jobs = store::AlertRepository::LastSuccesses(s, rule.job_id, after, kMaxNoSuccessJobsPerRound);
            // A short page is the end of the jobs: the next round starts again from the first.
            e.cursors[rule.id] = static_cast<int>(jobs.size()) < kMaxNoSuccessJobsPerRound ? 0 : jobs.back().job_id;
            for (const auto& job : jobs) {
                ++e.report.slo_jobs_checked;
                if (!NoSuccessBreached(rule, job, now)) continue;
                store::AlertDelivery d;
                d.rule_id = rule.id;
                d.job_id = job.job_id;
                // The episode key: a later success has a larger id, so it starts a new episode.
                d.fire_id = job.last_success_fire_id.value_or(0);
                d.event = AlertEvent::kNoSuccess;
                d.payload = NoSuccessPayload(rule, job, config_.cluster_url).dump();
                d.next_attempt_at = now;
                if (store::AlertRepository::InsertDeliveryIfAbsent(s, db_->dialect(), d)) {
                    ++e.report.deliveries_created;
                }
            }
        }
        return e;
    });
    if (!evaluated.ok()) return evaluated.status();
    // Rules gone or no longer about no_success drop their cursor with the swap.
    slo_cursor_ = std::move(evaluated->cursors);
    if (evaluated->report.deliveries_created > 0) created_.Inc(evaluated->report.deliveries_created);
    return evaluated->report;
}

Status Alerter::RecordLanded(std::int64_t epoch, AlertReport& report) {
    for (auto& landed : flights_->TakeLanded()) {
        auto& d = landed.delivery;
        const std::int64_t after = time_.NowMs();
        d.attempts += 1;
        const Result<int>& sent = landed.outcome;
        if (sent.ok() && *sent >= 200 && *sent < 300) {
            d.status = store::DeliveryStatus::kDelivered;
            d.delivered_at = after;
            d.last_error.reset();
        } else {
            d.last_error = sent.ok() ? "HTTP " + std::to_string(*sent) : sent.status().ToString();
            if (d.attempts >= config_.alert_max_attempts) {
                d.status = store::DeliveryStatus::kFailed;
            } else {
                d.next_attempt_at =
                    after + std::chrono::duration_cast<std::chrono::milliseconds>(
                                DeliveryBackoff(d.attempts, config_.alert_backoff, config_.alert_backoff_max))
                                .count();
            }
        }
        auto recorded = fence_.RunFenced(landed.epoch, [&](soci::session& s) -> Result<bool> {
            return store::AlertRepository::RecordAttempt(s, d);
        });
        if (!recorded.ok()) {
            // Started under an earlier term: its lease is gone, so is the right to record; the
            // delivery stays pending and is sent again (at least once).
            if (landed.epoch != epoch) continue;
            return recorded.status();
        }
        if (d.status == store::DeliveryStatus::kDelivered) {
            delivered_.Inc();
            ++report.delivered;
        } else if (d.status == store::DeliveryStatus::kFailed) {
            failed_.Inc();
            ++report.failed;
            spdlog::warn("alert delivery {} (rule {}, fire {}) failed after {} attempts: {}", d.id, d.rule_id,
                         d.fire_id, d.attempts, d.last_error.value_or(""));
        } else {
            retried_.Inc();
            ++report.retried;
        }
    }
    return Status::Ok();
}

Result<AlertReport> Alerter::DeliverDue(std::int64_t epoch, const std::vector<store::AlertRule>& enabled,
                                        const std::function<bool()>& should_stop) {
    AlertReport report;
    if (Status s = RecordLanded(epoch, report); !s.ok()) return s;
    // A delivery of a disabled rule stays pending until it is enabled again: with no rule
    // enabled, none is sent, and none is listed.
    if (enabled.empty()) return report;
    const std::int64_t now = time_.NowMs();
    auto snapshot = flights_->Snapshot();
    if (static_cast<int>(snapshot.ids.size()) >= config_.alert_concurrency) return report;
    std::map<std::int64_t, const store::AlertRule*> rules;
    std::vector<std::int64_t> saturated;
    for (const auto& r : enabled) {
        const auto flying = snapshot.per_receiver.find(ReceiverOf(r.url));
        if (flying != snapshot.per_receiver.end() && flying->second >= config_.alert_receiver_concurrency) {
            saturated.push_back(r.id);
        }
        rules.emplace(r.id, &r);
    }
    auto due = db_->Run([&](soci::session& s) {
        return store::AlertRepository::ListDue(s, now, config_.alert_batch, snapshot.ids, saturated);
    });
    if (!due.ok()) return due.status();
    auto& deliveries = *due;
    auto& per_receiver = snapshot.per_receiver;
    int in_flight = static_cast<int>(snapshot.ids.size());
    for (auto& d : deliveries) {
        if (in_flight >= config_.alert_concurrency || (should_stop && should_stop())) break;
        const auto rule = rules.find(d.rule_id);
        if (rule == rules.end()) continue;  // disabled: kept pending until it is enabled again
        const store::AlertRule& r = *rule->second;
        std::string receiver = ReceiverOf(r.url);
        int& flying = per_receiver[receiver];
        if (flying >= config_.alert_receiver_concurrency) continue;
        ++flying;
        ++in_flight;
        const std::int64_t timestamp_s = time_.NowMs() / 1000;
        const WebhookSender::Headers headers = {
            {"Content-Type", "application/json"},
            {"X-Sched-Delivery", std::to_string(d.id)},
            {"X-Sched-Event", std::string(store::AlertEventName(d.event))},
            {"X-Sched-Timestamp", std::to_string(timestamp_s)},
            {"X-Sched-Signature", WebhookSignature(r.secret, timestamp_s, d.payload)}};
        std::string body = d.payload;
        flights_->Launch(d.id, receiver);
        sender_.Start(r.url, headers, std::move(body), [flights = flights_, d, epoch](Result<int> outcome) mutable {
            flights->Land(impl::WebhookFlights::Landed{std::move(d), epoch, std::move(outcome)});
        });
    }
    // A sender that answered at once (or calls that were quick) is recorded in this round.
    if (Status s = RecordLanded(epoch, report); !s.ok()) return s;
    return report;
}

Result<AlertReport> Alerter::Round(std::int64_t epoch, const std::function<bool()>& should_stop) {
    AlertReport total;
    // The enabled rules once per round, for every step of it: each step read them (three reads
    // a round, and a fenced transaction for no_success whether any rule asked for it or not).
    auto rules = ReadRules();
    if (!rules.ok()) return rules.status();
    for (int i = 0; i < kMaxBatchesPerRound && !(should_stop && should_stop()); ++i) {
        auto batch = EvaluateBatch(epoch, *rules);
        if (!batch.ok()) return batch.status();
        total.fires_evaluated += batch->fires_evaluated;
        total.deliveries_created += batch->deliveries_created;
        total.jobs_paused += batch->jobs_paused;
        if (batch->fires_evaluated < config_.alert_batch) break;
    }
    if (!(should_stop && should_stop())) {
        auto slo = EvaluateNoSuccess(epoch, *rules);
        if (!slo.ok()) return slo.status();
        total.slo_jobs_checked = slo->slo_jobs_checked;
        total.deliveries_created += slo->deliveries_created;
    }
    auto sent = DeliverDue(epoch, *rules, should_stop);
    if (!sent.ok()) return sent.status();
    total.delivered = sent->delivered;
    total.retried = sent->retried;
    total.failed = sent->failed;
    return total;
}

}  // namespace sched::trigger
