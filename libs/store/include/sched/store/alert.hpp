#pragma once

/// Alerts (tables `alert_rule`, `alert_delivery`; docs/architecture/alerts.md).
///
/// A rule names a webhook to call when a fire of one job (job_id) or of any job (nullopt) ends
/// with one of its events. The master (trigger::Alerter) evaluates ended fires and creates one
/// delivery per (rule, event, fire) with InsertDeliveryIfAbsent inside its fenced transaction:
/// the unique key makes creation exactly-once across failovers. It then sends deliveries at
/// least once, recording every attempt (RecordAttempt).
///
/// Repositories are thread-safe and blocking (call them off the I/O threads). Times are epoch
/// milliseconds of the database clock.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <soci/soci.h>

#include "sched/common/status.hpp"
#include "sched/db/database.hpp"

namespace sched::store {

/// What a rule fires on: a fire that ended failed, timeout or lost, a misfire ledger row
/// (status skipped, reason misfire), or the master pausing a job after its
/// pause_after_failures failures in a row (about the fire that completed the streak), or an
/// enabled job that has not succeeded within the rule's no_success_within_ms (kNoSuccess, about
/// a breach episode, not a fire).
enum class AlertEvent { kFailed, kTimeout, kLost, kMisfire, kPaused, kNoSuccess };
/// "failed", "timeout", "lost", "misfire", "paused", "no_success" (stored and API spelling).
std::string_view AlertEventName(AlertEvent e);
std::optional<AlertEvent> ParseAlertEvent(std::string_view name);
/// "failed,timeout" <-> {kFailed, kTimeout} (the stored `events` column). Parsing skips
/// unknown names.
std::string AlertEventsText(const std::vector<AlertEvent>& events);
std::vector<AlertEvent> ParseAlertEvents(std::string_view text);

enum class DeliveryStatus { kPending, kDelivered, kFailed };
/// "pending", "delivered", "failed".
std::string_view DeliveryStatusName(DeliveryStatus s);
std::optional<DeliveryStatus> ParseDeliveryStatus(std::string_view name);

struct AlertRule {
    std::int64_t id = 0;
    std::string name;
    std::optional<std::int64_t> job_id;  ///< nullopt: every job
    std::vector<AlertEvent> events;
    /// failed/timeout/lost fire only when the job's last N ended runs all failed (1 = every one).
    int consecutive_failures = 1;
    /// The did-not-run SLO (event no_success): set exactly when `events` holds kNoSuccess.
    std::optional<std::int64_t> no_success_within_ms;
    std::string url;
    std::string secret;  ///< HMAC key; never leaves the server through the API
    bool enabled = true;
    std::int64_t created_at = 0;
    std::int64_t version = 1;  ///< +1 on every UpdateRule (optimistic concurrency)
    /// The file that declares the rule (`schedctl apply` sends its name), nullopt for one made by
    /// hand; the UI shows a managed rule read-only. Stored by CreateRule and UpdateRule as given.
    std::optional<std::string> managed_by;
};

struct AlertDelivery {
    std::int64_t id = 0;
    std::int64_t rule_id = 0;
    std::int64_t job_id = 0;
    /// The fire the event is about; for kNoSuccess the episode key instead: the job's latest
    /// succeeded fire id when the breach was found, 0 when it had none. (rule_id, event, job_id,
    /// fire_id) is unique.
    std::int64_t fire_id = 0;
    AlertEvent event = AlertEvent::kFailed;
    std::string payload;  ///< the JSON body sent, fixed at creation
    DeliveryStatus status = DeliveryStatus::kPending;
    int attempts = 0;
    std::int64_t next_attempt_at = 0;
    std::optional<std::string> last_error;  ///< at most kMaxErrorBytes
    std::int64_t created_at = 0;
    std::optional<std::int64_t> delivered_at;
};

struct DeliveryFilter {
    std::optional<std::int64_t> rule_id;
    std::optional<DeliveryStatus> status;
    int limit = 50;  ///< newest first
};

/// An ended fire the alerter looks at, with its job's name and app ("" when the job is gone).
struct AlertableFire {
    std::int64_t id = 0;
    std::int64_t job_id = 0;
    std::string job_name;
    std::string app;
    std::int64_t scheduled_time = 0;
    int attempt = 0;
    std::string status;
    std::optional<std::string> reason;
    std::int64_t finished_at = 0;
    std::optional<int> result_code;
    std::optional<std::string> result_message;
    int pause_after_failures = 0;  ///< the job's (0 when gone)
};

/// An enabled job and its latest success, for the no_success SLO.
struct JobLastSuccess {
    std::int64_t job_id = 0;
    std::string job_name;
    std::string app;
    std::int64_t created_at = 0;
    std::optional<std::int64_t> last_success_at;       ///< the finish of its latest succeeded fire
    std::optional<std::int64_t> last_success_fire_id;  ///< that fire
};

class AlertRepository {
  public:
    explicit AlertRepository(db::Database& db) : db_(db) {}

    static constexpr std::size_t kMaxErrorBytes = 500;
    /// Test deliveries of one rule that may wait to be sent at once (QueueTestDelivery).
    static constexpr int kMaxPendingTests = 5;

    /// Stores a new rule (id and created_at assigned).
    Result<AlertRule> CreateRule(const AlertRule& rule);
    /// kNotFound when absent.
    Result<AlertRule> GetRule(std::int64_t id);
    /// Rules by id, at most `limit` after `after_id`.
    Result<std::vector<AlertRule>> ListRules(std::int64_t after_id, int limit);
    /// Stores `rule` (every field but id, created_at and version) over the rule `rule.id` when
    /// it is still at `expected_version`, and bumps the version. kNotFound when absent;
    /// kAborted naming both versions when the rule changed since that version was read.
    Result<AlertRule> UpdateRule(const AlertRule& rule, std::int64_t expected_version);
    /// Queues a test delivery of the rule (pending, due now) for the master to send like any
    /// other: event `event` (so the receiver's routing on X-Sched-Event is exercised), job_id
    /// `job_id`, the next negative fire_id of the rule, `payload` as the body. kNotFound when the
    /// rule is gone; kResourceExhausted when kMaxPendingTests of its tests are still pending;
    /// kAborted when a concurrent test took the same fire_id (send again).
    Result<AlertDelivery> QueueTestDelivery(std::int64_t rule_id, std::int64_t job_id, AlertEvent event,
                                            const std::string& payload);
    /// Deletes the rule and its deliveries (pending ones are never sent). kNotFound when absent.
    Status DeleteRule(std::int64_t id);
    Result<std::vector<AlertDelivery>> ListDeliveries(const DeliveryFilter& filter);
    Result<AlertDelivery> GetDelivery(std::int64_t id);

    // ---- session-level operations, for the master's fenced transactions ----

    /// Every enabled rule (bounded by `limit`).
    static std::vector<AlertRule> EnabledRules(soci::session& s, int limit);
    /// Ended fires an alert may be about (failed, timeout, lost; skipped with reason misfire)
    /// with (finished_at, id) after the cursor and finished_at <= until_ms, in that order, at
    /// most `limit`. Served by idx_fire_finished.
    static std::vector<AlertableFire> ListEndedAfter(soci::session& s, std::int64_t after_ms, std::int64_t after_id,
                                                     std::int64_t until_ms, int limit);
    /// How many of the job's ended runs (succeeded, failed, timeout, lost, killed), newest
    /// first from the fire (scheduled_time, id) back, failed in a row (failed, timeout, lost),
    /// counting at most `max`. Served by the (job_id, scheduled_time) index: idx_fire_job on
    /// SQLite, the leading columns of uk_fire_once on MariaDB.
    static int FailureStreak(soci::session& s, std::int64_t job_id, std::int64_t scheduled_time, std::int64_t fire_id,
                             int max);
    /// Enabled jobs with id > after_job_id (only `job_id` when given), by id, at most `limit`,
    /// each with its latest succeeded fire as job_last_success records it (RecordLastSuccesses,
    /// the results path): one row per job by primary key, whatever the job's fire history. A
    /// row whose finish moved without its fire (fire_finished_at != finished_at: written by a
    /// node of a build before migration 025, during a rolling upgrade) is read from job_fire
    /// instead (MAX(finished_at), MAX(id) of that job's succeeded fires), so its episode key
    /// still changes with each success. A job without a row has no success recorded.
    static std::vector<JobLastSuccess> LastSuccesses(soci::session& s, std::optional<std::int64_t> job_id,
                                                     std::int64_t after_job_id, int limit);
    /// Inserts the delivery (status pending, attempts 0, created_at = DB now) unless its
    /// (rule_id, event, job_id, fire_id) exists. Returns whether it inserted.
    static bool InsertDeliveryIfAbsent(soci::session& s, const db::Dialect& dialect, const AlertDelivery& d);
    /// Pending deliveries with next_attempt_at <= now_ms, earliest first, at most `limit`,
    /// leaving out the deliveries `skip_ids` and those of the rules `skip_rules` (each at most
    /// a few thousand ids: they go into the statement).
    static std::vector<AlertDelivery> ListDue(soci::session& s, std::int64_t now_ms, int limit,
                                              const std::vector<std::int64_t>& skip_ids = {},
                                              const std::vector<std::int64_t>& skip_rules = {});
    /// Records one attempt's outcome: status, attempts, next_attempt_at, last_error (cut to
    /// kMaxErrorBytes) and delivered_at. Only a pending delivery changes; returns whether it did.
    static bool RecordAttempt(soci::session& s, const AlertDelivery& d);
    /// Deletes at most `limit` deliveries created before `cutoff_ms` that are no longer pending
    /// (delivered or failed), oldest first; returns how many. A pending one stays until it ends.
    static int PurgeEndedBefore(soci::session& s, std::int64_t cutoff_ms, int limit);

  private:
    db::Database& db_;
};

}  // namespace sched::store
