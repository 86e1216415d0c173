#pragma once

/// A fire: one run of a job at one scheduled time (kind, attempt, shard); stored one row each in
/// table `job_fire` by store::FireRepository.
///
/// States: pending -> dispatching -> running -> succeeded | failed | timeout | killed;
/// pending | dispatching -> lost (its slave died); -> skipped (block/overlap policy).
/// The store makes every transition a compare-and-set on the current state, so two parties
/// racing on one fire (a callback and a timeout, say) produce exactly one outcome.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sched/common/name_table.hpp"

namespace sched::model {

enum class FireStatus { kPending, kDispatching, kRunning, kSucceeded, kFailed, kTimeout, kKilled, kLost, kSkipped };

/// The stored and API spelling of each status, in enum order.
inline constexpr auto kFireStatusNames = MakeNameTable<FireStatus>(
    {"pending", "dispatching", "running", "succeeded", "failed", "timeout", "killed", "lost", "skipped"});
/// "pending", "dispatching", ... (the stored spelling).
std::string_view FireStatusName(FireStatus s);
std::optional<FireStatus> ParseFireStatus(std::string_view name);
/// True for the states a fire never leaves (but for lost -> succeeded, below).
bool IsFinal(FireStatus s);
/// The fire state machine: whether a fire in `from` may move to `to`. A fire only moves forward
/// (pending -> dispatching -> running -> a final state, skipping steps allowed), with two
/// exceptions: a claim given back (dispatching -> pending: it waited for a concurrency seat or
/// its slave stopped before sending it), and a late success (lost -> succeeded: the run happened
/// after its slave or executor was taken for dead). Every transition the store makes is one of
/// these; a call asking for another is a bug (store::FireRepository::Transition throws).
bool MayMove(FireStatus from, FireStatus to);

/// Why a fire ended without running, or why scheduled times got no fire (the ledger: every
/// scheduled time is fired or recorded with one of these; docs/architecture/fire-ledger.md).
enum class FireReason {
    kMisfire,         ///< skipped by the job's misfire policy (a summary row may stand for many times)
    kPaused,          ///< the job was paused after the fire was planned
    kJobDeleted,      ///< the job was deleted after the fire was planned
    kBlocked,         ///< the block strategy discarded it (the job was still running)
    kNoExecutor,      ///< no live executor instance accepted it
    kSlaveDied,       ///< its slave died while dispatching (lost: it may or may not have run)
    kSlaveRestarted,  ///< its slave restarted while dispatching (lost)
    kExecutorGone,    ///< its executor stopped heartbeating while it ran (lost)
    kNoResult,        ///< no result within the job's timeout, none recorded by the slave
    kCalendar,        ///< in an excluded period of the job's calendar (a summary row may stand for many times)
    kUpstream,        ///< a workflow step whose parents ended so that an edge into it does not hold (docs/workflows.md)
    kRunTimeout,      ///< a workflow step not started, or a step fire still pending, when its run timed out
    /// The one reason on a fire that ran: its success came after it had been recorded lost
    /// (status succeeded, ApplyResult), and on the retry that success made unnecessary, ended
    /// before it ran (status skipped).
    kSucceededLate,
    kConcurrency,  ///< pending: waiting for a seat of its job's concurrency limit (not an end)
};
/// The stored and API spelling of each reason, in enum order: every reader (the API's `reason`
/// filter and its 400, the rows) takes them from here.
inline constexpr auto kFireReasonNames = MakeNameTable<FireReason>(
    {"misfire", "paused", "job_deleted", "blocked", "no_executor", "slave_died", "slave_restarted", "executor_gone",
     "no_result", "calendar", "upstream", "run_timeout", "succeeded_late", "concurrency"});
/// kFireReasonNames.Name(r).
std::string_view FireReasonName(FireReason r);
std::optional<FireReason> ParseFireReason(std::string_view name);

/// kBackfill: a past scheduled time run by a backfill (store/backfill.hpp); its due_at is when
/// the backfill created it, so lateness is measured from then, not from the scheduled time.
/// kWorkflow: a step of a workflow run (docs/workflows.md); its attempt is 1000 x the run's
/// generation + the try, and its retries keep this kind.
enum class FireKind { kSchedule, kManual, kRetry, kMisfire, kBackfill, kWorkflow };
/// The stored and API spelling of each kind, in enum order.
inline constexpr auto kFireKindNames =
    MakeNameTable<FireKind>({"schedule", "manual", "retry", "misfire", "backfill", "workflow"});
/// "schedule", "manual", "retry", "misfire", "backfill", "workflow".
std::string_view FireKindName(FireKind k);
std::optional<FireKind> ParseFireKind(std::string_view name);

struct Fire {
    std::int64_t id = 0;
    std::int64_t job_id = 0;
    std::int64_t scheduled_time = 0;
    FireKind kind = FireKind::kSchedule;
    int attempt = 0;
    int shard_index = 0;
    int shard_total = 1;
    std::int64_t epoch = 0;  ///< the master's lease epoch that created it (fencing)
    /// The lease epoch the slave read when it claimed the fire (sent in /v1/run; a callback must
    /// carry it). nullopt until claimed, and for fires claimed before migration 002.
    std::optional<std::int64_t> dispatch_epoch;
    std::optional<std::string> assigned_node;
    std::optional<std::string> executor_address;
    FireStatus status = FireStatus::kPending;
    /// When the slave should dispatch it: scheduled_time, or later for a retry (backoff).
    /// 0 on insert means "= scheduled_time".
    std::int64_t due_at = 0;
    /// Set with every final transition; the master then does what follows a fire's end (a
    /// retry row, a fixed-delay job's next time) and clears it.
    bool followup = false;
    std::int64_t created_at = 0;
    std::optional<std::int64_t> dispatched_at;
    std::optional<std::int64_t> started_at;
    std::optional<std::int64_t> finished_at;
    std::optional<int> result_code;
    std::optional<std::string> result_message;
    /// Why it ended without running (nullopt: it ran, or ended before the ledger existed).
    std::optional<FireReason> reason;
    /// A summary row (status skipped, reason misfire or calendar) stands for `skipped_count`
    /// scheduled times from scheduled_time to `skipped_until` (inclusive), none of which has a
    /// fire of its own (counting stops at 100,000; result_message then says "at least").
    std::optional<std::int64_t> skipped_until;
    std::optional<std::int64_t> skipped_count;
    /// A workflow step's fire (kind workflow, or a ledger row of the step): its run and step
    /// (docs/workflows.md "Fire keys"); nullopt for every other fire.
    std::optional<std::int64_t> workflow_run_id;
    std::optional<std::string> workflow_step;
    /// A manual trigger's caller context (W3C `traceparent`, `tracestate` headers, checked by the
    /// API): the fire's runs carry the caller's trace id. nullopt: the trace is derived from the
    /// fire (docs/architecture/logs-and-traces.md).
    std::optional<std::string> trace_parent;
    std::optional<std::string> trace_state;
};

/// The due time `fire` is stored with: its due_at, or its scheduled time when that is 0.
inline std::int64_t StoredDueAt(const Fire& fire) {
    return fire.due_at != 0 ? fire.due_at : fire.scheduled_time;
}

}  // namespace sched::model
