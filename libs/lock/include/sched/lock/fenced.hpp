#pragma once

/// Fenced transactions: master writes that can never land after another
/// node has taken the lease over.
///
///   sched::lock::Fence fence(db, elector.config().name, elector.node_id());
///   Status s = fence.RunFenced(leadership.epoch, [&](soci::session& s) -> Status {
///       ... insert fires, advance next_fire_time ...
///       return Status::Ok();
///   });
///   if (sched::lock::IsLeaseLost(s)) { /* stop master work: another node leads */ }
///
/// RunFenced opens a write transaction (MySQL START TRANSACTION; SQLite BEGIN IMMEDIATE), checks
/// the lease (a plain read: not held -> LeaseLost without running fn; skipped while this Fence's
/// last final check at the same epoch passed, see below), runs fn, and then, as the
/// last statement before COMMIT, reads the lease row again under a shared row lock (MySQL LOCK
/// IN SHARE MODE; SQLite's write lock covers the whole file) and checks that it is still held by
/// `owner` at `epoch` and not expired by the database clock; it commits only then. A take-over is
/// an UPDATE of that row, so it waits for that commit: once any other node holds the lease,
/// every fenced transaction of an older term fails, even one that a paused process resumes.
/// fn's writes are invisible to others until the commit, so checking at the end protects them
/// exactly as checking at the start would, while the lease row is locked for one statement
/// instead of the whole transaction: the leader's own renew (an UPDATE of the row) no longer
/// waits for a long scan (at 1,000 fires/s scans of ~2 s made renews time out).
///
/// The price: a take-over (and the leader's own renew) waits for a fenced transaction between
/// its final check and its commit.
///
/// The first check only spares fn's work when the lease is gone; the final one alone decides.
/// A leader's transactions follow one another at one epoch, so once a final check at an epoch
/// passed, the next transaction at that epoch skips the first (one statement fewer per
/// transaction) until a check fails: a lease lost meanwhile costs one fn run that rolls back,
/// and the transaction after it checks first again.

///
/// A process paused *inside* a fenced transaction would block take-overs for as long as its
/// transaction stays open. On MariaDB, RunFenced therefore runs on a session with
/// idle_transaction_timeout set (FenceOptions): the server aborts a transaction left idle that
/// long and drops its connection, and a new leader can proceed. The setting is a
/// db::SessionSetting: the pool keeps such a session for the next fenced transaction and
/// restores the default before lending it to any other use. MySQL 8 has no such setting (and SQLite no server to abort
/// a paused writer): there a paused process blocks take-over until it resumes or dies.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

#include "sched/common/status.hpp"
#include "sched/db/database.hpp"
#include "sched/lock/lock_store.hpp"

namespace sched::lock {

struct FenceOptions {
    /// MariaDB only: a fenced transaction idle (between statements) for this long is aborted by
    /// the server. Whole seconds; 0 leaves the server's setting.
    std::chrono::seconds idle_transaction_timeout{1};
    /// MySQL only; set on a Galera cluster (database.topology: galera). The final check is then
    /// an UPDATE of the lease row that matches only while the row is held by `owner` at `epoch`
    /// and unexpired (it bumps `fence_writes`), instead of a shared-lock read. Row locks are
    /// local to one Galera node, so a take-over through another node would not wait for a
    /// read's lock; but it writes the same row, and Galera certification lets only the first of
    /// two transactions that write one row commit: a fenced transaction ordered after a
    /// take-over aborts at COMMIT (deadlock error 1213, returned as kAborted), one ordered
    /// before it committed in an earlier term, and a take-over already applied on this node
    /// makes the update match nothing (LeaseLost). The new leader, whose take-over certified
    /// against every fenced write of the old term, therefore reads all of them.
    bool certify_by_write = false;
};

/// Thread-safe; one Fence may serve any number of concurrent transactions.
class Fence {
  public:
    /// `name` is the lease row (ElectionConfig::name), `owner` the node id that holds it.
    Fence(std::shared_ptr<db::Database> db, std::string name, std::string owner, FenceOptions options = {});

    /// Runs fn(soci::session&) in a write transaction fenced as described above. Returns what
    /// Database::InTransaction would (fn may return void, Status, Result<T> or T), or LeaseLost
    /// ("lease lost: ...", code kAborted) - without running fn when the first check fails, after
    /// a rollback of fn's work when the final one does. Committed only when fn returns normally
    /// with an OK value and the final check passes; exceptions other than soci errors propagate
    /// after a rollback.
    template <typename F>
    auto RunFenced(std::int64_t epoch, F&& fn) ->
        typename db::impl::RunResult<std::invoke_result_t<F, soci::session&>>::type;

    /// The check alone, on a session already inside a write transaction: OK, LeaseLost, or a
    /// soci error thrown. With `lock_row` the row is read under a shared lock that holds off a
    /// take-over until the transaction ends (make it the last statement before COMMIT). For
    /// callers composing their own transactions.
    Status Check(soci::session& s, std::int64_t epoch, bool lock_row = true) const;

    const std::string& name() const { return name_; }
    const std::string& owner() const { return owner_; }

  private:
    /// The checks and the session setting of a transaction fenced at `epoch`.
    db::TxGuard Guard(std::int64_t epoch) const;

    std::shared_ptr<db::Database> db_;
    std::string name_;
    std::string owner_;
    FenceOptions options_;
    // The session setting of fenced transactions on MariaDB (nullptr: none).
    std::shared_ptr<const db::SessionSetting> idle_timeout_;
    // Set once a server has refused idle_transaction_timeout (MySQL 8): not asked again.
    std::shared_ptr<std::atomic<bool>> idle_timeout_unsupported_;
    // The epoch whose last final check passed (0: none, or a check failed since): the first
    // check is skipped at it.
    std::shared_ptr<std::atomic<std::int64_t>> confirmed_epoch_;
};

/// The fencing epoch the lease row `name` is at, read inside the caller's transaction (a plain
/// read, no lock): nullopt when there is no such row. The slave stamps its claims with it, so
/// each run carries the epoch in force when its fire left `pending`.
std::optional<std::int64_t> ReadLeaseEpoch(soci::session& s, const std::string& name);

/// The sum of the epochs of the lease rows `name` and those matching the LIKE `pattern` (an
/// election split into several leases: one per shard), read inside the caller's transaction;
/// nullopt when there is no such row. Every row's epoch only grows, so the sum never decreases
/// and grows with every change of holder of any of them: the slave stamps its claims with it,
/// and executors, which refuse a run older than the newest they have seen, are fenced against
/// every shard's take-overs at once. With one row it is that row's epoch. The slave's claim
/// reads the same sum inside its UPDATE (store::FireClaims::Claim, store::LeaseRows); this read
/// serves its re-stamp.
std::optional<std::int64_t> ReadEpochSum(soci::session& s, const std::string& name, const std::string& pattern);

// ---- template implementation ----

template <typename F>
auto Fence::RunFenced(std::int64_t epoch, F&& fn) ->
    typename db::impl::RunResult<std::invoke_result_t<F, soci::session&>>::type {
    return db_->InTransaction(db::TxMode::kWrite, std::forward<F>(fn), Guard(epoch));
}

}  // namespace sched::lock
