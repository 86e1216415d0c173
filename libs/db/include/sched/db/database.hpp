#pragma once

/// A pool of soci sessions over one database, with errors as values.
///
/// soci is blocking: call Database from DB worker threads, never from an Asio I/O thread
/// (an I/O thread must never block). All members are thread-safe.
///
/// Every MySQL session runs with time_zone '+00:00', READ COMMITTED isolation and the URL's
/// lock-wait and statement timeouts. Every SQLite session runs in WAL mode with the URL's busy
/// timeout, so several processes may share one file. A SQLite file that does not exist yet is
/// created with mode 0600 (its -wal and -shm files follow it) in directories created 0700;
/// existing files and directories keep their modes (a warning names a database others can read).
/// Within a process, a call of a `priority` pool on a SQLite file (the election's) holds back the
/// start of other pools' calls on that file until it ends (DbUrl::priority).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include <soci/soci.h>

#include "sched/common/status.hpp"
#include "sched/db/db_url.hpp"
#include "sched/db/dialect.hpp"

namespace sched::db {

/// Maps an error thrown by soci to a Status:
///  - connection refused / lost / server gone / timeouts on the wire -> kUnavailable, and
///    `*connection_lost` = true (the session must not be reused);
///  - SQLite busy/locked -> kUnavailable (retry the call);
///  - a full disk (SQLite SQLITE_FULL; MariaDB ER_DISK_FULL 1021, table full 1114, errno 28
///    ENOSPC) -> kUnavailable with a message that says "disk is full" (503 in the APIs: retry
///    once an operator freed space; not 429, which would blame the caller's rate);
///  - lock wait timeout, statement timeout -> kDeadlineExceeded;
///  - deadlock -> kAborted; duplicate key / constraint -> kAlreadyExists;
///  - access denied -> kPermissionDenied; unknown database or table -> kFailedPrecondition;
///  - anything else -> kInternal.
Status ClassifyError(const std::exception& e, bool* connection_lost = nullptr);

/// Executes a prepared statement whose SQL came from Dialect::InsertIfAbsent and returns the
/// rows inserted: 1, or 0 when the unique key existed already. Other errors throw as usual.
/// Inside a MySQL transaction a duplicate key rolls back only that statement.
long long ExecuteInsertIfAbsent(soci::statement& st);

enum class TxMode {
    kRead,   ///< SQLite: deferred BEGIN; MySQL: START TRANSACTION
    kWrite,  ///< SQLite: BEGIN IMMEDIATE (takes the write lock up front); MySQL: START TRANSACTION
};

class Database;
namespace impl {
class SqliteFileGate;
}

/// A session variable some transactions run under (lock::Fence's idle_transaction_timeout, the
/// causal reads of Database::CausalReads): the statement that sets it, which also names it, and
/// the one that puts the server's default back. A session keeps its setting when it goes back to
/// the pool, which lends it first to the next transaction that wants the same setting and
/// restores the default before lending it to any other use: in the usual case such a
/// transaction costs no SET at all, where a SET before it and one after it were two statements.
struct SessionSetting {
    std::string apply;
    std::string restore;
};

/// A session borrowed from the pool; goes back on destruction (or is discarded if broken).
class PooledSession {
  public:
    PooledSession(PooledSession&& other) noexcept;
    PooledSession& operator=(PooledSession&&) = delete;
    PooledSession(const PooledSession&) = delete;
    PooledSession& operator=(const PooledSession&) = delete;
    ~PooledSession();

    soci::session& operator*() const { return *session_; }
    soci::session* operator->() const { return session_.get(); }
    /// The pool will close this database session instead of reusing it.
    void MarkBroken() { broken_ = true; }
    bool broken() const { return broken_; }

    /// The setting in force on this session; nullptr: the server's defaults.
    const SessionSetting* setting() const { return setting_.get(); }
    /// Puts `setting` in force (nullptr: the defaults) unless it already is, restoring another
    /// one first. A soci error becomes its Status (ClassifyError); a lost connection also marks
    /// the session broken. After an error the session carries no setting the pool knows of.
    Status Apply(std::shared_ptr<const SessionSetting> setting);

  private:
    friend class Database;
    PooledSession(Database* owner, std::unique_ptr<soci::session> session,
                  std::shared_ptr<const SessionSetting> setting)
        : owner_(owner), session_(std::move(session)), setting_(std::move(setting)) {}

    Database* owner_;
    std::unique_ptr<soci::session> session_;
    std::shared_ptr<const SessionSetting> setting_;
    bool broken_ = false;
};

namespace impl {
template <typename R>
struct RunResult {
    using type = Result<R>;
};
template <>
struct RunResult<void> {
    using type = Status;
};
template <>
struct RunResult<Status> {
    using type = Status;
};
template <typename T>
struct RunResult<Result<T>> {
    using type = Result<T>;
};
inline bool IsOk(const Status& s) {
    return s.ok();
}
template <typename T>
bool IsOk(const Result<T>& r) {
    return r.ok();
}
template <typename T>
bool IsOk(const T&) {
    return true;
}
}  // namespace impl

/// What a guarded transaction checks besides its own work (lock::Fence is the one user): a
/// condition tested right after BEGIN and again as the last statement before COMMIT, and a
/// session setting it runs under.
struct TxGuard {
    /// `final` is false right after BEGIN (fn does not run when it fails) and true just before
    /// COMMIT. A non-OK status rolls the transaction back and is returned instead of fn's result.
    std::function<Status(soci::session& s, bool final)> check;
    /// Put in force before BEGIN (PooledSession::Apply); the pool lends a session that already
    /// carries it when it has one (SessionSetting).
    std::shared_ptr<const SessionSetting> setting;
    /// Asked when the server refuses `setting` (an error that left the connection usable): true
    /// runs the transaction without it, false (or no hook) returns that error.
    std::function<bool(const Status& refused)> setting_refused;
};

class Database : public std::enable_shared_from_this<Database> {
  public:
    /// Connects one session to check that the database is reachable and the credentials work.
    /// kUnavailable: not reachable (worth retrying); other codes: retrying will not help.
    static Result<std::shared_ptr<Database>> Open(const DbUrl& url);

    /// Open(), retried with exponential backoff (200 ms doubling to 5 s, with jitter) while it
    /// fails with kUnavailable and `retry_for` has not passed; each failed attempt is logged with
    /// the redacted URL and the reason. `should_stop` (optional) aborts the wait early.
    static Result<std::shared_ptr<Database>> OpenWithRetry(const DbUrl& url, Micros retry_for,
                                                           const std::function<bool()>& should_stop = {});

    ~Database();
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;

    const DbUrl& url() const { return url_; }
    const Dialect& dialect() const { return dialect_; }
    Backend backend() const { return url_.backend; }

    /// Borrows a session, connecting a new one if the pool is not full. kUnavailable when no
    /// session frees up within the URL's acquire-timeout or a new connection fails. An idle
    /// session carrying `prefer` (by its `apply`; nullptr: one carrying none) is lent first; a
    /// session lent carries `prefer` or no setting at all (the pool restores any other).
    Result<PooledSession> Acquire(const SessionSetting* prefer = nullptr);

    /// Runs fn(soci::session&) on a pooled session. soci errors become Status values (see
    /// ClassifyError); a lost connection is dropped from the pool. Other exceptions propagate.
    /// fn may return void (-> Status), Status, Result<T>, or T (-> Result<T>).
    template <typename F>
    auto Run(F&& fn) -> typename impl::RunResult<std::invoke_result_t<F, soci::session&>>::type;

    /// Like Run, inside a transaction: committed when fn returns normally with an OK value, rolled
    /// back when it returns an error value or throws.
    template <typename F>
    auto InTransaction(TxMode mode, F&& fn) -> typename impl::RunResult<std::invoke_result_t<F, soci::session&>>::type {
        return InTransaction(mode, std::forward<F>(fn), TxGuard{});
    }
    /// InTransaction with `guard`'s checks and scope (TxGuard); the one transaction runner.
    template <typename F>
    auto InTransaction(TxMode mode, F&& fn, const TxGuard& guard) ->
        typename impl::RunResult<std::invoke_result_t<F, soci::session&>>::type;

    /// Reads that see every commit the cluster made before the transaction began. On a Galera
    /// cluster a commit made through another Galera node reaches this one a little later (and a
    /// donor node in a state transfer can fall seconds behind): a transaction answering a message
    /// sent after such a commit (an executor's result of a claimed fire) would read the rows as
    /// they were before it. With EnableCausalReads, this guard has the transaction's reads wait
    /// until this Galera node applied everything committed before them (MariaDB's
    /// `wsrep_sync_wait = 1` for the transaction's duration, two statements more); otherwise it
    /// does nothing.
    TxGuard CausalReads() const;
    /// Turns CausalReads on: OpenMigrated does, for `topology: galera`. Call before sharing.
    void EnableCausalReads() { causal_reads_ = true; }
    /// Whether CausalReads guards do anything (EnableCausalReads was called).
    bool causal_reads() const { return causal_reads_; }

    /// The database clock in epoch microseconds (SQLite: millisecond precision).
    Result<std::int64_t> NowUs();

    /// Starts/ends a transaction on a session in this database's dialect.
    void Begin(soci::session& s, TxMode mode) const;
    static void Commit(soci::session& s);
    static void Rollback(soci::session& s);

    /// A SQLite write transaction that waited this long for the file's write lock, or held it
    /// this long, is logged as a warning naming its caller (the function whose lambda ran in
    /// it), at most once per caller and kind every `kSlowWriteLogEvery`.
    static constexpr std::chrono::milliseconds kSlowWriteLock{1000};
    static constexpr std::chrono::seconds kSlowWriteLogEvery{5};

  private:
    explicit Database(DbUrl url);
    Result<std::unique_ptr<soci::session>> Connect() const;
    Result<PooledSession> AcquireFromPool(std::chrono::steady_clock::time_point deadline, const SessionSetting* prefer);
    void Return(std::unique_ptr<soci::session> s, std::shared_ptr<const SessionSetting> setting, bool broken);
    friend class PooledSession;
    // SQLite kWrite: `began` is the zero time_point when the write lock was never obtained.
    void NoteWriteLock(const std::type_info& caller, std::chrono::steady_clock::time_point asked,
                       std::chrono::steady_clock::time_point began) const;

    DbUrl url_;
    Dialect dialect_;
    bool causal_reads_ = false;
    std::mutex mu_;
    std::condition_variable cv_;
    struct IdleSession {
        std::unique_ptr<soci::session> session;
        std::shared_ptr<const SessionSetting> setting;  // in force on it; nullptr: the defaults
    };
    std::vector<IdleSession> idle_;
    int open_ = 0;                                // sessions connected and not discarded (idle + lent out)
    std::shared_ptr<impl::SqliteFileGate> gate_;  // SQLite: shared by the process's pools on the file
};

// ---- template implementations ----

template <typename F>
auto Database::Run(F&& fn) -> typename impl::RunResult<std::invoke_result_t<F, soci::session&>>::type {
    using R = std::invoke_result_t<F, soci::session&>;
    auto session = Acquire();
    if (!session.ok()) return session.status();
    try {
        if constexpr (std::is_void_v<R>) {
            fn(**session);
            return Status::Ok();
        } else {
            return fn(**session);
        }
    } catch (const soci::soci_error& e) {
        bool lost = false;
        Status status = ClassifyError(e, &lost);
        if (lost) session->MarkBroken();
        return status;
    }
}

template <typename F>
auto Database::InTransaction(TxMode mode, F&& fn, const TxGuard& guard) ->
    typename impl::RunResult<std::invoke_result_t<F, soci::session&>>::type {
    using R = std::invoke_result_t<F, soci::session&>;
    // Names a starving (or hogging) writer of a SQLite file in the log: claims, heartbeats, the
    // purge and the alerts round were seen waiting out their busy timeout with nothing saying
    // who held the lock.
    struct WriteLockTiming {
        const Database& db;
        const TxMode mode;
        const std::chrono::steady_clock::time_point asked = std::chrono::steady_clock::now();
        std::chrono::steady_clock::time_point began{};
        ~WriteLockTiming() {
            if (mode == TxMode::kWrite) db.NoteWriteLock(typeid(F), asked, began);
        }
    } timing{*this, mode};
    auto session = Acquire(guard.setting.get());
    if (!session.ok()) return session.status();
    if (guard.setting) {
        Status applied = session->Apply(guard.setting);
        if (!applied.ok() && (session->broken() || !guard.setting_refused || !guard.setting_refused(applied))) {
            return applied;
        }
    }
    soci::session& s = **session;
    const auto rollback_quietly = [&] {
        try {
            Rollback(s);
        } catch (...) {
            // A session whose transaction state is unknown must never be lent out again.
            session->MarkBroken();
        }
    };
    const auto check = [&](bool final) {
        if (!guard.check) return Status::Ok();
        Status held = guard.check(s, final);
        if (!held.ok()) rollback_quietly();
        return held;
    };
    try {
        Begin(s, mode);
        timing.began = std::chrono::steady_clock::now();
        if (Status held = check(false); !held.ok()) return held;
        if constexpr (std::is_void_v<R>) {
            fn(s);
            if (Status held = check(true); !held.ok()) return held;
            Commit(s);
            return Status::Ok();
        } else {
            R result = fn(s);
            if (!impl::IsOk(result)) {
                rollback_quietly();
                return result;
            }
            if (Status held = check(true); !held.ok()) return held;
            Commit(s);
            return result;
        }
    } catch (const soci::soci_error& e) {
        bool lost = false;
        Status status = ClassifyError(e, &lost);
        if (lost) {
            session->MarkBroken();
        } else {
            rollback_quietly();
        }
        return status;
    } catch (...) {
        rollback_quietly();
        throw;
    }
}

/// A database that may not be open yet: nullptr until it is (the apps add their routes before
/// TriggerNode::Start opens it). Shared by the web module and the dispatch library.
using DatabaseProvider = std::function<std::shared_ptr<Database>()>;

}  // namespace sched::db
