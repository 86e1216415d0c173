#pragma once

/// The transaction lock Quartz and XXL-JOB use: `SELECT ... FOR UPDATE` on a row of
/// `scheduler_lock` (named "row:<key>", created on first use), held for exactly one
/// transaction.
///
///   Status s = sched::lock::WithRowLock(db, "billing-run", 2s, [&](soci::session& s) -> Status {
///       ... reads and writes that must not interleave with another holder ...
///       return Status::Ok();
///   });
///   if (sched::lock::IsNotAcquired(s)) { /* someone else held it for the whole 2 s */ }
///
/// Guarantees: fn runs while this transaction holds the row's exclusive lock (SQLite: the
/// database's write lock), and the lock is released by commit, rollback or a dead connection -
/// no lease to expire, no cleanup. fn's writes commit atomically with the lock's lifetime, so
/// the writes fn makes *to this database* are truly exclusive.
/// Does not: protect anything outside this database (an HTTP call made inside fn can still
/// overlap a later holder's call if this transaction is rolled back after a timeout), and it
/// holds a connection and a row lock for the whole of fn: keep fn short.
///
/// The wait: MySQL/MariaDB innodb_lock_wait_timeout for the locking SELECT (whole seconds,
/// rounded up, at least 1 s); SQLite busy timeout for BEGIN IMMEDIATE (milliseconds). SQLite
/// has one write lock per file, so every row lock (and every other writer) excludes every other.

#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "sched/common/duration.hpp"
#include "sched/common/status.hpp"
#include "sched/db/database.hpp"

namespace sched::lock {

/// The status WithRowLock returns when the lock was not acquired within the wait: code
/// kDeadlineExceeded, message starting "row lock not acquired".
bool IsNotAcquired(const Status& status);

namespace impl {

/// One row-lock transaction on a pooled session. Not for direct use: see WithRowLock.
class RowLockTransaction {
  public:
    RowLockTransaction(db::Database& db, std::string_view key, Micros wait);
    ~RowLockTransaction();
    RowLockTransaction(const RowLockTransaction&) = delete;
    RowLockTransaction& operator=(const RowLockTransaction&) = delete;

    /// Begins the transaction and locks the row: OK, not acquired, or another error.
    Status Acquire();
    soci::session& session() { return **session_; }
    /// Commit; a soci error becomes a Status (and the session is dropped if broken).
    Status Commit();
    void Rollback();
    /// Classifies an error thrown by fn's statements and rolls back.
    Status Fail(const soci::soci_error& e);

  private:
    Status Lock(soci::session& s);
    void SetWait(soci::session& s, Micros wait);

    db::Database& db_;
    std::string name_;
    Micros wait_;
    std::optional<db::PooledSession> session_;
    bool open_ = false;  // a transaction is in progress
};

}  // namespace impl

/// Runs fn(soci::session&) in a transaction that first locks the row for `key`, waiting at most
/// `wait` (see above). Committed when fn returns normally with an OK value, rolled back
/// otherwise. Returns what Database::InTransaction would, or the not-acquired status (see
/// IsNotAcquired) without running fn. kInvalidArgument for an empty or too long key.
template <typename F>
auto WithRowLock(db::Database& db, std::string_view key, Micros wait, F&& fn) ->
    typename db::impl::RunResult<std::invoke_result_t<F, soci::session&>>::type {
    using R = std::invoke_result_t<F, soci::session&>;
    using Out = typename db::impl::RunResult<R>::type;
    impl::RowLockTransaction tx(db, key, wait);
    if (Status locked = tx.Acquire(); !locked.ok()) return locked;
    try {
        if constexpr (std::is_void_v<R>) {
            fn(tx.session());
            return tx.Commit();
        } else {
            Out result = fn(tx.session());
            if (!db::impl::IsOk(result)) {
                tx.Rollback();
                return result;
            }
            if (Status committed = tx.Commit(); !committed.ok()) return committed;
            return result;
        }
    } catch (const soci::soci_error& e) {
        return tx.Fail(e);
    } catch (...) {
        tx.Rollback();
        throw;
    }
}

}  // namespace sched::lock
