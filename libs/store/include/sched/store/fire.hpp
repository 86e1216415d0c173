#pragma once

/// Fires: one row per (job, scheduled time, kind, attempt, shard) in table `job_fire`.
///
/// The states and the moves between them are the model's (sched/model/fire.hpp, model::MayMove).
/// Every transition is a compare-and-set on the current state (Transition), so two parties
/// racing on one fire (a callback and a timeout, say) produce exactly one outcome.

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <soci/soci.h>

#include "sched/common/name_table.hpp"
#include "sched/common/status.hpp"
#include "sched/db/database.hpp"
#include "sched/model/fire.hpp"
#include "sched/store/shard.hpp"

namespace sched::store {

struct FireFilter {
    std::optional<std::int64_t> job_id;
    std::optional<model::FireStatus> status;
    std::optional<model::FireReason> reason;
    std::optional<std::int64_t> scheduled_from;  ///< inclusive, epoch ms
    std::optional<std::int64_t> scheduled_to;    ///< exclusive, epoch ms
    std::int64_t before_id = 0;                  ///< cursor: newest first, ids < before_id (0 = from the newest)
    int limit = 50;
};

/// The columns a transition may set besides the status (unset = unchanged).
struct FireUpdate {
    std::optional<std::string> assigned_node;
    std::optional<std::int64_t> dispatch_epoch;
    std::optional<std::string> executor_address;
    std::optional<std::int64_t> dispatched_at;
    std::optional<std::int64_t> started_at;
    std::optional<std::int64_t> finished_at;
    std::optional<int> result_code;
    std::optional<std::string> result_message;
    std::optional<model::FireReason> reason;
    std::optional<bool> followup;
};

/// An executor's result for a fire (one item of `POST /api/v1/callback`), as the web module
/// checked its syntax and the caller's app scope.
struct ExecutorResult {
    std::int64_t fire_id = 0;
    int attempt = 0;
    /// The dispatch epoch the executor got in /v1/run; nullopt: not checked (only callers that
    /// are not app-scoped may leave it out).
    std::optional<std::int64_t> epoch;
    /// The executor's advertised address; nullopt: not checked (as for epoch).
    std::optional<std::string> address;
    model::FireStatus status = model::FireStatus::kSucceeded;  ///< a final status: succeeded, failed, timeout, killed
    int result_code = 0;
    std::string result_message;
    std::int64_t started_ms = 0;  ///< 0: unknown
    std::int64_t finished_ms = 0;
    /// The tail of the run's log (callback field `log`), stored in `job_fire_log` when the
    /// result is applied (store::FireLogs); nullopt: the executor sent none.
    std::optional<std::string> log;
    std::int64_t log_truncated_bytes = 0;  ///< bytes the executor cut from the log's front
};

/// What became of an ExecutorResult. Only kApplied changed the row.
enum class ResultOutcome {
    kApplied,        ///< the fire moved to the result's status
    kDuplicate,      ///< the fire already has this status for this attempt (a resend)
    kConflict,       ///< the fire ended differently already, or was never dispatched
    kNotFound,       ///< no such fire
    kForbidden,      ///< the fire's job is not of an app the caller may act for (or is gone)
    kStaleAttempt,   ///< the fire is at another attempt
    kStaleEpoch,     ///< the fire was dispatched under another lease epoch
    kWrongExecutor,  ///< the fire was dispatched to another address, or the address is not a
                     ///< registered instance of the fire's app
};
/// "applied", "duplicate", "conflict", "not_found", "forbidden", "stale_attempt",
/// "stale_epoch", "wrong_executor" (the callback's per-item outcomes).
std::string_view ResultOutcomeName(ResultOutcome outcome);

/// What FireRepository::InsertManyIfAbsent found stored for one fire.
struct StoredFire {
    std::int64_t id = 0;
    /// The stored row is what the call wrote: same epoch and assigned node, still pending. That
    /// is every row it inserted, and also an identical twin planned earlier under the same epoch
    /// that no slave has claimed yet (MySQL's affected rows cannot tell the two apart, see
    /// db::Dialect::InsertRowsIfAbsent); notifying its node again is harmless (a slave's claim is
    /// a CAS), so the master counts and notifies exactly these rows.
    bool as_written = false;
};

class FireRepository {
  public:
    explicit FireRepository(db::Database& db) : db_(db) {}

    Result<model::Fire> Get(std::int64_t id);
    Result<std::vector<model::Fire>> List(const FireFilter& filter);
    /// CAS: moves the fire to `to` (and sets `update`) only if its status is one of `from`.
    /// kNotFound: no such fire; kAborted: it was in another state (the message says which).
    Status Transition(std::int64_t id, std::initializer_list<model::FireStatus> from, model::FireStatus to,
                      const FireUpdate& update = {});

    // ---- session-level operations, for transactions ----

    /// Inserts the fire unless its (job, scheduled_time, kind, attempt, shard_index) exists.
    /// Returns the new id, or nullopt for a duplicate (a repeat of the same work is a no-op).
    /// created_at is the DB clock.
    static std::optional<std::int64_t> InsertIfAbsent(soci::session& s, const db::Dialect& dialect,
                                                      const model::Fire& fire);
    /// InsertIfAbsent for many fires: multi-row INSERTs of up to 200 rows that skip existing
    /// keys and, where the dialect allows (db::Dialect::rows_returned: MariaDB), return every
    /// row they name; otherwise (and for any row not returned) the rows are read back by key
    /// with one SELECT per few hundred jobs (each term a job-id list and a scheduled-time range
    /// of at most 5 s, served by the unique key). Returns,
    /// aligned with `fires`, what is stored under each fire's key (nullopt only if the row
    /// vanished meanwhile, which nothing does). A fire's dispatch_epoch and dispatched_at are
    /// written as given (a fire planned already claimed, FireClaims "Planned fires").
    static std::vector<std::optional<StoredFire>> InsertManyIfAbsent(soci::session& s, const db::Dialect& dialect,
                                                                     const std::vector<model::Fire>& fires);
    /// Ledger rows: fires that are final from the start and carry a reason (a run of scheduled
    /// times skipped by the misfire policy, with skipped_until and skipped_count), inserted
    /// with multi-row statements that skip existing keys, followup 0, finished_at as given.
    /// Throws std::logic_error for a row that is not final or has no reason. Returns the
    /// statements' affected-row count (on MySQL an existing key may count too).
    static int InsertLedgerRows(soci::session& s, const db::Dialect& dialect, const std::vector<model::Fire>& rows);
    /// See the Database-level Transition; returns the number of rows moved (0 or 1).
    static int Transition(soci::session& s, std::int64_t id, std::initializer_list<model::FireStatus> from,
                          model::FireStatus to, const FireUpdate& update);
    /// Fires assigned to `node` in one of `statuses`, earliest due first.
    static std::vector<model::Fire> ListAssigned(soci::session& s, const std::string& node,
                                                 std::initializer_list<model::FireStatus> statuses, int limit);
    /// Fires in one of `statuses` whose assigned node is not in `live_nodes` (or is NULL):
    /// unassigned manual/retry fires, and the fires of dead slaves. Earliest due first.
    static std::vector<model::Fire> ListOrphans(soci::session& s, const std::vector<std::string>& live_nodes,
                                                std::initializer_list<model::FireStatus> statuses, int limit);
    /// Moves a fire in one of `from` to `node` (CAS); returns whether it moved.
    static bool Reassign(soci::session& s, std::int64_t id, std::initializer_list<model::FireStatus> from,
                         const std::string& node);
    /// Reassign for many fires to one node, with one UPDATE per 500 ids (plus one SELECT when
    /// not all moved). Returns the ids that moved. A fire counts as moved when it is now on
    /// `node` in one of `from`; meant for orphans, which by definition were on no live node.
    static std::vector<std::int64_t> ReassignMany(soci::session& s, const std::vector<std::int64_t>& ids,
                                                  std::initializer_list<model::FireStatus> from,
                                                  const std::string& node);
    /// Running fires after the cursor (scheduled_time, id), in that order, at most `limit`: the
    /// master's sweep for runs that nobody will finish. Served by idx_fire_state (status, assigned_node,
    /// scheduled_time) and a sort of the running fires alone (they are the runs in flight).
    static std::vector<model::Fire> ListRunning(soci::session& s, std::int64_t after_scheduled, std::int64_t after_id,
                                                int limit);
    /// Fires whose followup flag is set, of `shard` (JobShard::FollowupFilter), oldest first. On MySQL a locking read
    /// (FOR UPDATE, which the master's clearing of the flags takes next anyway): a lost fire's success applied by a
    /// callback meanwhile is either committed before this read, which then sees `succeeded`,
    /// or waits for the master's commit and then finds the retry it planned (ApplyResult).
    static std::vector<model::Fire> ListFollowups(soci::session& s, int limit, const JobShard& shard = {});
    /// Every fire of the given workflow runs (job_fire.workflow_run_id), in id order: a run's
    /// step fires and skip rows, at most 64 steps x their shards and tries each. Served by
    /// idx_fire_workflow_run; one statement per 500 run ids.
    static std::vector<model::Fire> ListForWorkflowRuns(soci::session& s, const std::vector<std::int64_t>& run_ids);
    /// The newest fire of each of `job_ids` that has one, by job id: the latest scheduled time,
    /// of that time the latest row (a retry over its failed try). Two statements per 500 jobs,
    /// each job's row found by a one-row backward read of the (job_id, scheduled_time) index
    /// (idx_fire_job on SQLite, the leading columns of uk_fire_once on MariaDB), however long its
    /// history (the job list shows it for every job of a page).
    static std::map<std::int64_t, model::Fire> NewestOfJobs(soci::session& s, const std::vector<std::int64_t>& job_ids);
    static void ClearFollowup(soci::session& s, std::int64_t id);
    /// ClearFollowup for many fires, one UPDATE per 500 ids.
    static void ClearFollowups(soci::session& s, const std::vector<std::int64_t>& ids);

    // ---- history retention (the master's purge; trigger::HistoryPurger) ----
    // "Purgeable" below means: in a final state (IsFinal) with followup = 0, so a fire whose
    // follow-up (a retry, a fixed-delay advance) is still to be done never vanishes.

    /// Ids of at most `limit` purgeable fires that ended before `cutoff_ms` (finished_at, or
    /// scheduled_time when finished_at is NULL) and were scheduled before it - the second
    /// condition keeps the query on idx_fire_time (scheduled_time); a fire ends after
    /// its scheduled time, so it only delays the odd fire cancelled ahead of its time.
    static std::vector<std::int64_t> ListExpired(soci::session& s, std::int64_t cutoff_ms, int limit);
    /// The scheduled_time of the job's keep-th newest fire (any state), by scheduled_time;
    /// nullopt when the job has fewer than `keep` (>= 1) fires. Served by the (job_id,
    /// scheduled_time) index, reading at most `keep` index entries.
    static std::optional<std::int64_t> CapBoundary(soci::session& s, std::int64_t job_id, int keep);
    /// CapBoundary for many jobs in one statement per 500 ids: (job id, boundary) of each of
    /// `job_ids` that has at least `keep` fires, in job id order. The same index reads as
    /// CapBoundary per job, one round trip instead of one per job.
    static std::vector<std::pair<std::int64_t, std::int64_t>> CapBoundaries(soci::session& s,
                                                                            const std::vector<std::int64_t>& job_ids,
                                                                            int keep);
    /// Ids of at most `limit` purgeable fires of the job scheduled strictly before `before_ms`
    /// (strictly: fires sharing the boundary's time, e.g. shards, are all kept). The (job_id,
    /// scheduled_time) index.
    static std::vector<std::int64_t> ListPurgeableBefore(soci::session& s, std::int64_t job_id, std::int64_t before_ms,
                                                         int limit);
    /// Deletes these fires and the rows of every table keyed by their fire_id (the list in
    /// fire.cpp, kFireChildTables), with one DELETE per table; the ids are inlined (they are
    /// integers), so any number goes in one statement. Returns the fire rows deleted.
    static int DeleteMany(soci::session& s, const std::vector<std::int64_t>& ids);
    /// Clears, in one statement, the followup flag of every ended fire after which nothing can
    /// follow: succeeded, skipped or killed fires of jobs that are not fixed-delay (no retry, no
    /// next time from the finish), except workflow step fires (their run advances on them).
    /// Only `shard`'s fires (JobShard::FollowupFilter). Returns how many.
    static int ClearTrivialFollowups(soci::session& s, const JobShard& shard = {});
    static std::optional<model::Fire> Find(soci::session& s, std::int64_t id);

    /// Applies an executor's result inside the caller's write transaction, after checking, in
    /// this order: the fire exists (kNotFound); its job's app passes `app_allowed` (kForbidden;
    /// a fire whose job is gone passes only when `app_allowed("")` does, i.e. for unscoped
    /// callers); the attempt (kStaleAttempt); a repeat of its final status (kDuplicate), another
    /// final status or `pending` (kConflict); the dispatch epoch when both sides know it
    /// (kStaleEpoch); the address (kWrongExecutor): a `running` fire's executor_address, or,
    /// for a fire still `dispatching` (a fast handler's result can beat the slave's record of
    /// the 202), a registered instance of the job's app, which then becomes the fire's
    /// executor_address. The final UPDATE repeats every condition, so a concurrent change
    /// cannot slip between check and write; when it lost that way (the slave recorded
    /// `running` meanwhile) the checks run again on the fire as it is now.
    ///
    /// A success for a fire recorded `lost` (its slave or executor was taken for dead, yet the
    /// run happened) is applied too, when it answers that dispatch: the same attempt, the fire's
    /// dispatch epoch (both must be known: kConflict otherwise, kStaleEpoch when they differ),
    /// and its executor_address, or a registered instance of its app when none was recorded
    /// (kWrongExecutor). The fire becomes `succeeded` with reason kSucceededLate and a message
    /// saying so, its followup flag as it was (a follow-up not yet done sees a success; one done
    /// is not done again); a `pending` retry of it (kind retry, attempt + 1, same time and shard)
    /// becomes `skipped`, kSucceededLate, so an at-least-once fire that succeeded does not run
    /// again. A retry already claimed runs: both runs are then recorded. Not for workflow step
    /// fires (their run was judged on the loss) nor other outcomes (kConflict, as before).
    ///
    /// A result that is not applied (kDuplicate, kConflict) but answers the fire's dispatch
    /// (same attempt, epoch and instance, as above) keeps its `log` when the fire has ended and
    /// has none stored yet: the log of a run the cluster ended itself (the API's kill, the
    /// slave's timeout, the sweep) is kept like any other.
    static ResultOutcome ApplyResult(soci::session& s, const ExecutorResult& result,
                                     const std::function<bool(const std::string& app)>& app_allowed);

  private:
    db::Database& db_;
};

}  // namespace sched::store
