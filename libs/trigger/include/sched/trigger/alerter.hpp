#pragma once

/// Alerts: the master evaluates ended fires against the alert rules and sends webhooks
/// (docs/architecture/alerts.md; tables in store/alert.hpp).
///
/// Evaluation: a cursor (finished_at, id) over ended fires (store::AlertRepository::
/// ListEndedAfter) moves in batches of `alert-batch`; each batch is one transaction fenced with
/// the lease epoch that inserts one delivery per matching (rule, event, fire) if absent. The
/// enabled rules are read once per Round, before its steps, by a plain read. The cursor lives
/// in memory: a new master (a new epoch) starts it `alert-lookback` back, and the unique key of
/// alert_delivery turns the re-evaluated fires into no-ops, so a failover creates no delivery twice. Only fires that
/// ended at least `alert-settle` ago (DB clock) are read, so one committed a moment late is still ahead of the cursor.
/// finished_at is the executor's clock for results: a fire whose recorded finish is older than the settle time when it
/// is written can be missed.
///
/// Matching (RuleWants): the rule's job (or any job) and one of its events; for failed,
/// timeout and lost with consecutive-failures N > 1, only when the job's last N ended runs up
/// to this fire all failed (AlertRepository::FailureStreak), so every failure from the N-th in a
/// row on alerts.
///
/// Pausing: a job with pause_after_failures N > 0 whose failure streak (as above) reaches N is
/// paused in the same fenced transaction (store::JobRepository::Pause: enabled 0, version + 1;
/// only if still enabled, so a failover does not pause it twice), logged as a warning, and the
/// rules of that job wanting `paused` get a delivery of event `paused` for that fire.
///
/// No success within X (event no_success, rules with no_success_within_ms): once per Round,
/// after the fire batches, when an enabled rule asks for it, one transaction fenced with the
/// epoch that, for each enabled such rule, reads its enabled jobs (the rule's job, or every job) with their latest
/// succeeded fire (store::AlertRepository::LastSuccesses: job_last_success by job, at most kMaxNoSuccessJobsPerRound
/// jobs; a global rule over more jobs walks them by id across rounds with an in-memory cursor per rule that wraps
/// around). A job whose reference time - its latest succeeded fire's finished_at, or its created_at when it has none -
/// is older than now - X (DB clock) is in breach and gets one delivery keyed (rule, no_success, job, latest succeeded
/// fire id or 0): re-evaluations in later rounds or by a new master are no-ops, and a success
/// changes the key, so the next breach is a new episode. created_at rather than an
/// enabled-since time (not stored): a job resumed after a pause whose last success is older
/// than X alerts on the next round. A disabled job is never evaluated. A job keeps its last
/// success after the purge of that fire, so a breach outliving the purge keeps its key.
///
/// Delivery: pending deliveries that are due are sent through a WebhookSender without waiting
/// for one another: POST of the stored JSON payload with
///   X-Sched-Delivery: <delivery id>        (the receiver's key for dropping repeats)
///   X-Sched-Timestamp: <unix seconds>
///   X-Sched-Signature: sha256=<hex HMAC-SHA256(secret, timestamp + "." + body)>
/// Each round starts the due deliveries (earliest first, at most alert-batch listed) while at
/// most alert-concurrency calls are in flight in all and alert-receiver-concurrency to one
/// receiver (the URL's host:port); a delivery still in flight is not started again, and a
/// receiver at its limit is left out of the listing, so a slow receiver delays only its own
/// deliveries. Every call is bounded (webhook_sender.hpp: alert-timeout for the whole call,
/// alert-connect-timeout, alert-first-byte-timeout, alert-body-limit), so every attempt ends.
/// An attempt's outcome is recorded by the round that finds it ended (the same round when the
/// sender answers at once): a 2xx answer is delivered; anything else (another status, a
/// timeout, a refused address, a connection error) is a failed attempt, retried after
/// alert-backoff * 2^(attempts-1) (capped at alert-backoff-max) until alert-max-attempts, then
/// failed, with the reason in last_error. Every attempt is recorded (attempts, last_error,
/// delivered_at) in its own transaction fenced with the epoch it was started under, so a deposed
/// master records nothing and its deliveries stay pending for the next one; a webhook may
/// therefore arrive more than once (at least once).
///
/// Metrics: sched_alert_deliveries_total{result="delivered"|"retry"|"failed"},
/// sched_alert_deliveries_created_total.
///
/// Not thread-safe: one loop (TriggerNode's alert thread, while it leads) calls it; the sender's
/// completions may come from any thread.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sched/common/metrics.hpp"
#include "sched/common/status.hpp"
#include "sched/db/database.hpp"
#include "sched/lock/fenced.hpp"
#include "sched/store/alert.hpp"
#include "sched/trigger/db_time.hpp"
#include "sched/trigger/master.hpp"
#include "sched/trigger/webhook_sender.hpp"

namespace sched::trigger {

namespace impl {
class WebhookFlights;
}

/// The event an ended fire is, if any: failed, timeout, lost; skipped with reason misfire.
std::optional<store::AlertEvent> FireAlertEvent(const store::AlertableFire& fire);
/// Whether the rule is about this fire's job and this event (consecutive failures aside).
bool RuleWants(const store::AlertRule& rule, const store::AlertableFire& fire, store::AlertEvent event);
/// Whether a failure streak of `streak` satisfies the rule (always true for misfire).
bool StreakSatisfies(const store::AlertRule& rule, store::AlertEvent event, int streak);
/// The webhook body: event, rule id and name, job id, name and app, fire id, scheduled time,
/// status, reason, attempt, result code and message (at most 1,000 bytes), failure streak,
/// cluster url (when configured).
nlohmann::json AlertPayload(const store::AlertRule& rule, const store::AlertableFire& fire, store::AlertEvent event,
                            int streak, const std::string& cluster_url);
/// Whether the job is in breach of the rule's no_success_within_ms at `now_ms` (false without
/// one): its latest success (else its creation) is older than now_ms - no_success_within_ms.
bool NoSuccessBreached(const store::AlertRule& rule, const store::JobLastSuccess& job, std::int64_t now_ms);
/// The no_success webhook body: event, rule id and name, job id, name and app,
/// no_success_within_ms, last_success_at_ms and last_success_fire_id (null without one),
/// job_created_at_ms, cluster url (when configured).
nlohmann::json NoSuccessPayload(const store::AlertRule& rule, const store::JobLastSuccess& job,
                                const std::string& cluster_url);
/// "sha256=" + hex HMAC-SHA256 under `secret` of `timestamp + "." + body`.
std::string WebhookSignature(const std::string& secret, std::int64_t timestamp_s, const std::string& body);
/// The delay after `attempts` failed attempts (>= 1): base * 2^(attempts-1), at most `max`.
Micros DeliveryBackoff(int attempts, Micros base, Micros max);

struct AlertReport {
    int fires_evaluated = 0;
    int deliveries_created = 0;
    int jobs_paused = 0;
    int slo_jobs_checked = 0;  ///< jobs looked at for no_success
    int delivered = 0;
    int retried = 0;
    int failed = 0;
};

class Alerter {
  public:
    Alerter(std::shared_ptr<db::Database> db, lock::Fence& fence, const DbTime& time, MasterConfig config,
            MetricsRegistry& metrics, WebhookSender& sender);
    ~Alerter();
    Alerter(const Alerter&) = delete;
    Alerter& operator=(const Alerter&) = delete;

    /// Webhook calls started and not yet recorded.
    int InFlight() const;

    /// Evaluation batches until one is not full (at most 20), EvaluateNoSuccess, then DeliverDue,
    /// all with the enabled rules read once at the start of the round.
    Result<AlertReport> Round(std::int64_t epoch, const std::function<bool()>& should_stop = {});
    /// At most this many jobs per no_success rule per round.
    static constexpr int kMaxNoSuccessJobsPerRound = 500;

  private:
    // The enabled rules (at most kMaxRules), a plain read.
    Result<std::vector<store::AlertRule>> ReadRules();
    // One evaluation batch (see above) against `rules`. LeaseLost: nothing created, the cursor
    // stays.
    Result<AlertReport> EvaluateBatch(std::int64_t epoch, const std::vector<store::AlertRule>& rules);
    // The no_success evaluation (see above); no transaction when no rule has no_success_within_ms.
    // LeaseLost: nothing created, the cursors stay.
    Result<AlertReport> EvaluateNoSuccess(std::int64_t epoch, const std::vector<store::AlertRule>& rules);
    // Records the attempts that ended since the last call, then starts the due deliveries of
    // `enabled` rules (see above; at most alert-batch), stopping early when `should_stop` says
    // so. The report counts the attempts recorded.
    Result<AlertReport> DeliverDue(std::int64_t epoch, const std::vector<store::AlertRule>& enabled,
                                   const std::function<bool()>& should_stop);
    // Records what landed; the error of a fenced write under the current epoch stops it.
    Status RecordLanded(std::int64_t epoch, AlertReport& report);

    std::shared_ptr<db::Database> db_;
    lock::Fence& fence_;
    const DbTime& time_;
    MasterConfig config_;
    WebhookSender& sender_;
    std::int64_t cursor_epoch_ = -1;
    std::int64_t cursor_ms_ = 0;
    std::int64_t cursor_id_ = 0;
    std::map<std::int64_t, std::int64_t> slo_cursor_;  ///< rule id -> last job id evaluated
    CounterChild& delivered_;
    CounterChild& retried_;
    CounterChild& failed_;
    CounterChild& created_;
    /// The calls in flight and their outcomes, shared with the sender's completions.
    std::shared_ptr<impl::WebhookFlights> flights_;
};

}  // namespace sched::trigger
