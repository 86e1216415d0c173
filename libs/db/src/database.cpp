#include "sched/db/database.hpp"

#include "sched/common/backoff.hpp"
#include "sched/db/aborted_transactions.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include <map>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cxxabi.h>

#include <soci/mysql/soci-mysql.h>
#include <soci/sqlite3/soci-sqlite3.h>
#include <spdlog/spdlog.h>

namespace sched::db {

namespace impl {

// One per SQLite file and process: counts the priority pools' calls in progress, and holds the
// other pools' new calls until there are none. It cannot stop a writer already in its
// transaction (that is the point: those drain) nor another process (a standalone owns its file).
class SqliteFileGate {
  public:
    static std::shared_ptr<SqliteFileGate> For(const std::string& path) {
        std::error_code ec;
        std::string key = std::filesystem::weakly_canonical(path, ec).string();
        if (ec || key.empty()) key = path;
        static std::mutex registry_mu;
        static std::map<std::string, std::weak_ptr<SqliteFileGate>> registry;
        std::lock_guard lock(registry_mu);
        std::erase_if(registry, [](const auto& entry) { return entry.second.expired(); });
        auto& slot = registry[key];
        auto gate = slot.lock();
        if (!gate) {
            gate = std::make_shared<SqliteFileGate>();
            slot = gate;
        }
        return gate;
    }

    void EnterPriority() { Move(priority_calls_, 1); }
    void LeavePriority() { Move(priority_calls_, -1); }
    /// False when a priority call was still running at `deadline`.
    bool WaitForPriorityCalls(std::chrono::steady_clock::time_point deadline) {
        return WaitForNone(priority_calls_, deadline);
    }

    /// A write transaction of this process is waiting in BEGIN IMMEDIATE (SQLite's busy handler).
    void StartWaitingForLock() { Move(lock_waiters_, 1); }
    void StopWaitingForLock() { Move(lock_waiters_, -1); }
    /// Until no write transaction of the process waits for the lock, or `deadline`.
    void GiveWayToWaiters(std::chrono::steady_clock::time_point deadline) { WaitForNone(lock_waiters_, deadline); }

  private:
    // Both counts change and are waited for under mu_; a count back at zero wakes its waiters.
    void Move(int& count, int by) {
        std::lock_guard lock(mu_);
        count += by;
        if (count == 0) cv_.notify_all();
    }
    bool WaitForNone(const int& count, std::chrono::steady_clock::time_point deadline) {
        std::unique_lock lock(mu_);
        return cv_.wait_until(lock, deadline, [&] { return count == 0; });
    }

    std::mutex mu_;
    std::condition_variable cv_;
    int priority_calls_ = 0;
    int lock_waiters_ = 0;
};

namespace {

// When this thread last ended a SQLite write transaction (its COMMIT or ROLLBACK), and whether
// one is open: a thread that starts its next one at once is writing back to back.
// A thread that starts a write transaction within kBackToBack of its last one gives way for
// at most kGiveWayAtMost (SQLite's longest sleep between two polls of a busy lock).
constexpr std::chrono::milliseconds kBackToBack{5};
constexpr std::chrono::milliseconds kGiveWayAtMost{100};

thread_local bool t_in_sqlite_write = false;
thread_local std::chrono::steady_clock::time_point t_last_sqlite_write_end{};

void EndSqliteWrite() {
    if (t_in_sqlite_write) {
        t_in_sqlite_write = false;
        t_last_sqlite_write_end = std::chrono::steady_clock::now();
    }
}

}  // namespace

}  // namespace impl

namespace {

// Values in soci's connect strings are quoted so that passwords and paths with spaces survive;
// soci's MySQL backend understands single quotes, its SQLite backend double quotes.
std::string Quoted(const std::string& v, char quote = '\'') {
    std::string out(1, quote);
    for (char c : v) {
        if (c == quote || c == '\\') out += '\\';
        out += c;
    }
    return out + quote;
}

// The priority pool's busy handler (`arg`: its busy timeout). SQLite's own sleeps 1, 2, 5 ...
// up to 100 ms between tries, so a renew waiting for the writes in flight to drain would keep
// every other pool (held back meanwhile, see SqliteFileGate) waiting up to 100 ms longer than
// needed, once a second; polling every 200 us takes the lock as soon as it is free.
int PollingBusyHandler(void* arg, int tries) {
    thread_local std::chrono::steady_clock::time_point waiting_since;
    const auto now = std::chrono::steady_clock::now();
    if (tries == 0) waiting_since = now;
    if (now - waiting_since >= *static_cast<const Micros*>(arg)) return 0;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    return 1;
}

long long Seconds(Micros d, long long min) {
    return std::max<long long>(
        min, std::chrono::duration_cast<std::chrono::seconds>(d + std::chrono::microseconds(999999)).count());
}

bool IsConnectionLossErrno(unsigned int err) {
    switch (err) {
        case 2002:  // CR_CONNECTION_ERROR
        case 2003:  // CR_CONN_HOST_ERROR
        case 2005:  // CR_UNKNOWN_HOST
        case 2006:  // CR_SERVER_GONE_ERROR
        case 2013:  // CR_SERVER_LOST
        case 2026:  // CR_SSL_CONNECTION_ERROR
        case 2055:  // CR_SERVER_LOST_EXTENDED
        case 1053:  // ER_SERVER_SHUTDOWN
        case 1927:  // ER_CONNECTION_KILLED
        case 4031:  // ER_CLIENT_INTERACTION_TIMEOUT
            return true;
        default:
            return false;
    }
}

// MariaDB reports some write failures only as an errno inside the message.
bool MentionsEnospc(const std::string& what) {
    for (const char* sign :
         {"No space left", "errno: 28 ", "Errcode: 28 ", "error 28 ", "errno: 28)", "Errcode: 28)"}) {
        if (what.find(sign) != std::string::npos) return true;
    }
    return false;
}

// Creates the directories (0700) and the file (0600) the SQLite database lives in, when they do
// not exist yet. SQLite would create the file with 0644 less the umask; its -wal and -shm files
// copy the database file's mode, so creating it 0600 here keeps all three private. Existing
// directories and files keep their modes (an operator may have chosen them); a database
// readable by others only gets a warning.
void PrepareSqliteFile(const std::string& file) {
    if (file.empty() || file == ":memory:" || file.starts_with("file:")) return;
    const std::filesystem::path path(file);
    if (path.has_parent_path()) {
        std::vector<std::filesystem::path> missing;
        for (auto p = path.parent_path(); !p.empty() && !std::filesystem::exists(p); p = p.parent_path()) {
            missing.push_back(p);
            if (p == p.parent_path()) break;
        }
        std::reverse(missing.begin(), missing.end());  // outermost first
        for (const auto& dir : missing) {
            // mkdir, not create_directories: the mode applies at creation (less the umask, which
            // can only narrow it), so the directory is never open to others, not even briefly.
            if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) break;  // SQLite's open reports it
        }
    }
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
        ::close(fd);
        return;
    }
    struct stat st {};
    if (errno == EEXIST && ::stat(path.c_str(), &st) == 0 && (st.st_mode & 0077) != 0) {
        static std::atomic<bool> warned{false};
        if (!warned.exchange(true)) {
            spdlog::warn("database file {} has mode {:o}: other users may read it (chmod 600)", file,
                         st.st_mode & 0777);
        }
    }
}

// soci appends to the server's message the statement and every bound value (" while executing
// \"INSERT ...\" with :params=..."): a job's params, a token's hash. None of that may reach an
// API answer, and every error answer starts from a Status made here, so the Status keeps only
// the server's own sentence (cut there, and bounded); the whole text is logged instead.
constexpr std::size_t kMaxServerMessage = 200;

std::string ServerMessage(std::string_view what) {
    for (const std::string_view marker : {std::string_view(" while "), std::string_view(" with :")}) {
        if (const auto at = what.find(marker); at != std::string_view::npos) what = what.substr(0, at);
    }
    // The SQLite backend leads with its own function name ("sqlite3_statement_backend::loadOne: ").
    if (const auto at = what.find(": ");
        at != std::string_view::npos && what.substr(0, at).find("::") != std::string_view::npos) {
        what = what.substr(at + 2);
    }
    std::string out(what.substr(0, kMaxServerMessage));
    if (what.size() > kMaxServerMessage) out += "...";
    return out;
}

// "for key 'uk_workflow_step_job'" of MySQL's "Duplicate entry '<value>' for key '...'": the key
// is the answer's useful part, the value is the caller's input (or someone else's).
std::string DuplicateKeyOf(std::string_view server_message) {
    const auto at = server_message.rfind(" for key ");
    return at == std::string_view::npos ? std::string() : std::string(server_message.substr(at + 1));
}

}  // namespace

namespace impl {
namespace {
std::atomic<std::uint64_t> aborted_transactions{0};
}  // namespace
void CountAbortedTransaction() {
    aborted_transactions.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace impl

std::uint64_t AbortedTransactions() {
    return impl::aborted_transactions.load(std::memory_order_relaxed);
}

Status ClassifyError(const std::exception& e, bool* connection_lost) {
    if (connection_lost != nullptr) *connection_lost = false;
    // The full text for the log only, bounded so a large bound value is not written whole.
    constexpr std::size_t kMaxWhat = 1024;
    std::string what = e.what();
    if (what.size() > kMaxWhat) {
        what = what.substr(0, kMaxWhat) + "... (" + std::to_string(what.size() - kMaxWhat) + " more bytes)";
    }
    const std::string server = ServerMessage(e.what());
    const auto logged = [&](Status s) {
        // Expected outcomes (a taken name, a busy file, a lost CAS) are a caller's business; the
        // rest are worth the statement in the log, since the Status no longer carries it.
        if (s.code() == Code::kInternal || s.code() == Code::kPermissionDenied ||
            s.code() == Code::kFailedPrecondition) {
            spdlog::warn("database error ({}): {}", s.message(), what);
        } else {
            spdlog::debug("database error ({}): {}", s.message(), what);
        }
        return s;
    };
    if (const auto* my = dynamic_cast<const soci::mysql_soci_error*>(&e)) {
        const unsigned int err = my->err_num_;
        if (IsConnectionLossErrno(err)) {
            if (connection_lost != nullptr) *connection_lost = true;
            return logged(Unavailable("database connection lost: " + server));
        }
        switch (err) {
            case 1205:
                return logged(DeadlineExceeded("lock wait timeout: " + server));
            case 1969:  // ER_STATEMENT_TIMEOUT (MariaDB max_statement_time)
            case 3024:  // ER_QUERY_TIMEOUT (MySQL max_execution_time)
                return logged(DeadlineExceeded("statement timeout: " + server));
            case 1213:
                // On Galera also a certification failure at COMMIT (a conflicting write set of
                // another node was ordered first) and a brute-force abort by a replicated write.
                impl::CountAbortedTransaction();
                return logged(Aborted("deadlock: " + server));
            case 1047:  // ER_UNKNOWN_COM_ERROR: a Galera node outside the primary component
                return logged(Unavailable("database node not ready (not in the primary component): " + server));
            case 1062: {
                const std::string key = DuplicateKeyOf(server);
                return logged(AlreadyExists(key.empty() ? "duplicate key" : "duplicate key: " + key));
            }
            // The server cannot write: retry later, after an operator frees space. kUnavailable
            // (503), not kResourceExhausted (429): the caller did nothing that waiting fixes.
            case 1021:  // ER_DISK_FULL
            case 1114:  // ER_RECORD_FILE_FULL ("The table is full")
            case 3:     // EE_WRITE ("Error writing file ... (Errcode: 28 ...)")
                return logged(
                    Unavailable("database server disk is full (or a table reached its size limit): " + server));
            case 1030:  // ER_GET_ERRNO: "Got error N from storage engine"
            case 1034:  // ER_NOT_KEYFILE
                if (MentionsEnospc(what)) {
                    return logged(Unavailable("database server disk is full: " + server));
                }
                return logged(Internal("database error " + std::to_string(err)));
            case 1044:
            case 1045:
                return logged({Code::kPermissionDenied, "database access denied: " + server});
            case 1049:
                return logged(FailedPrecondition("unknown database: " + server));
            case 1146:
                return logged(FailedPrecondition("missing table (schema not migrated?): " + server));
            default:
                // The server's sentence may quote a value ("Incorrect integer value: '...'").
                return logged(Internal("database error " + std::to_string(err)));
        }
    }
    if (const auto* lite = dynamic_cast<const soci::sqlite3_soci_error*>(&e)) {
        switch (lite->result() & 0xff) {
            case 5:  // SQLITE_BUSY
            case 6:  // SQLITE_LOCKED
                return logged(Unavailable("database busy: " + server));
            case 19:  // "UNIQUE constraint failed: workflow_step.job_id": names columns, no values
                return logged(AlreadyExists("constraint violation: " + server));
            case 13:  // SQLITE_FULL: the disk (or the file system's quota) is full
                return logged(
                    Unavailable("database disk is full: free space on the file system of the SQLite file: " + server));
            case 10:  // SQLITE_IOERR: a failed write on a full disk may also land here
                if (what.find("full") != std::string::npos || what.find("No space") != std::string::npos) {
                    return logged(Unavailable("database disk is full: " + server));
                }
                return logged(Unavailable("database I/O error: " + server));
            case 14:
                return logged(FailedPrecondition("cannot open database file: " + server));
            default:
                return logged(Internal("database error (SQLite " + std::to_string(lite->result()) + ")"));
        }
    }
    if (const auto* se = dynamic_cast<const soci::soci_error*>(&e)) {
        switch (se->get_error_category()) {
            case soci::soci_error::connection_error:
                if (connection_lost != nullptr) *connection_lost = true;
                return logged(Unavailable("database connection error: " + server));
            case soci::soci_error::constraint_violation:
                return logged(AlreadyExists("constraint violation: " + server));
            case soci::soci_error::no_privilege:
                return logged({Code::kPermissionDenied, server});
            default:
                break;
        }
    }
    return logged(Internal("database error"));
}

long long ExecuteInsertIfAbsent(soci::statement& st) {
    try {
        st.execute(true);
    } catch (const soci::mysql_soci_error& e) {
        if (e.err_num_ == 1062) return 0;  // ER_DUP_ENTRY: the key exists, which is the point
        throw;
    }
    return st.get_affected_rows();
}

PooledSession::PooledSession(PooledSession&& other) noexcept
    : owner_(other.owner_),
      session_(std::move(other.session_)),
      setting_(std::move(other.setting_)),
      broken_(other.broken_) {
    other.owner_ = nullptr;
}

PooledSession::~PooledSession() {
    if (owner_ != nullptr && session_) owner_->Return(std::move(session_), std::move(setting_), broken_);
}

Status PooledSession::Apply(std::shared_ptr<const SessionSetting> setting) {
    const auto same = [](const SessionSetting* a, const SessionSetting* b) {
        return a == b || (a != nullptr && b != nullptr && a->apply == b->apply);
    };
    if (same(setting_.get(), setting.get())) return Status::Ok();
    try {
        if (setting_) *session_ << setting_->restore;
        // Unknown until the next statement lands: an error below leaves neither in force.
        setting_.reset();
        if (setting) *session_ << setting->apply;
        setting_ = std::move(setting);
        return Status::Ok();
    } catch (const soci::soci_error& e) {
        bool lost = false;
        Status status = ClassifyError(e, &lost);
        if (lost) MarkBroken();
        return status;
    }
}

Database::Database(DbUrl url) : url_(std::move(url)), dialect_(url_.backend) {
    if (url_.backend == Backend::kSqlite) gate_ = impl::SqliteFileGate::For(url_.path);
}

Database::~Database() = default;

TxGuard Database::CausalReads() const {
    if (!causal_reads_ || backend() != Backend::kMySql) return {};
    // Kept on the session for the next causal transaction; restored before any other use of it
    // (SessionSetting), since other reads need not wait.
    static const auto kSyncWait = std::make_shared<const SessionSetting>(
        SessionSetting{.apply = "SET SESSION wsrep_sync_wait = 1", .restore = "SET SESSION wsrep_sync_wait = 0"});
    return {.setting = kSyncWait};
}

Result<std::shared_ptr<Database>> Database::Open(const DbUrl& url) {
    std::shared_ptr<Database> db(new Database(url));
    auto first = db->Connect();
    if (!first.ok()) return first.status();
    if (url.backend == Backend::kMySql) {
        // "10.11.19-MariaDB-0+deb12u1"; MySQL's has no "MariaDB".
        try {
            std::string version;
            **first << "SELECT VERSION()", soci::into(version);
            int major = 0;
            int minor = 0;
            const bool mariadb = version.find("MariaDB") != std::string::npos &&
                                 std::sscanf(version.c_str(), "%d.%d", &major, &minor) == 2;
            db->dialect_.set_rows_returned(mariadb && std::pair(major, minor) >= std::pair(10, 5));
        } catch (const soci::soci_error& e) {
            return ClassifyError(e);
        }
    }
    {
        std::lock_guard lock(db->mu_);
        db->idle_.push_back({.session = std::move(*first), .setting = nullptr});
        db->open_ = 1;
    }
    return db;
}

Result<std::shared_ptr<Database>> Database::OpenWithRetry(const DbUrl& url, Micros retry_for,
                                                          const std::function<bool()>& should_stop) {
    const auto deadline = std::chrono::steady_clock::now() + retry_for;
    // Jitter spreads out a cluster's reconnects after a database restart.
    Backoff backoff(std::chrono::milliseconds(200), std::chrono::milliseconds(5000), BackoffJitter::kQuarterMore);
    for (int attempt = 1;; ++attempt) {
        auto db = Open(url);
        if (db.ok()) {
            if (attempt > 1) spdlog::info("database {} reachable after {} attempts", url.Redacted(), attempt);
            return db;
        }
        if (db.status().code() != Code::kUnavailable) return db.status();
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline) {
            return Unavailable("database " + url.Redacted() + " unreachable after " + std::to_string(attempt) +
                               " attempts over " + FormatDuration(retry_for) + ": " + db.status().message());
        }
        auto wait = std::min<std::chrono::steady_clock::duration>(backoff.Next(), deadline - now);
        spdlog::warn("database {} unreachable (attempt {}): {}; retrying in {} ms", url.Redacted(), attempt,
                     db.status().message(), std::chrono::duration_cast<std::chrono::milliseconds>(wait).count());
        const auto wake = std::chrono::steady_clock::now() + wait;
        while (std::chrono::steady_clock::now() < wake) {
            if (should_stop && should_stop()) return Cancelled("stopped while waiting for the database");
            std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
                std::chrono::milliseconds(50), wake - std::chrono::steady_clock::now()));
        }
    }
}

Result<std::unique_ptr<soci::session>> Database::Connect() const {
    auto session = std::make_unique<soci::session>();
    try {
        if (url_.backend == Backend::kMySql) {
            std::string cs = "db=" + Quoted(url_.database) + " user=" + Quoted(url_.user) +
                             " host=" + Quoted(url_.host) + " port=" + std::to_string(url_.port) +
                             " connect_timeout=" + std::to_string(Seconds(url_.connect_timeout, 1)) +
                             " read_timeout=" + std::to_string(Seconds(url_.read_timeout, 1)) +
                             " write_timeout=" + std::to_string(Seconds(url_.write_timeout, 1)) + " charset=utf8mb4";
            if (!url_.password.empty()) cs += " password=" + Quoted(url_.password);
            session->open(soci::mysql, cs);
            // One clock for every session: NOW(6) and UNIX_TIMESTAMP() agree only in a fixed zone.
            *session << "SET time_zone = '+00:00'";
            // READ COMMITTED: locking reads see the latest commit and InnoDB takes no gap locks,
            // so the master's scans do not block the web module's inserts.
            *session << "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED";
            *session << "SET SESSION innodb_lock_wait_timeout = " + std::to_string(Seconds(url_.lock_wait_timeout, 1));
            if (url_.statement_timeout.count() > 0) {
                const double secs = static_cast<double>(url_.statement_timeout.count()) / 1e6;
                *session << "SET SESSION max_statement_time = " + std::to_string(secs);
            }
        } else {
            PrepareSqliteFile(url_.path);
            session->open(soci::sqlite3, "db=" + Quoted(url_.path, '"'));
            if (url_.priority) {
                auto* backend = static_cast<soci::sqlite3_session_backend*>(session->get_backend());
                sqlite_api::sqlite3_busy_handler(backend->conn_, &PollingBusyHandler,
                                                 const_cast<Micros*>(&url_.busy_timeout));
            } else {
                const auto busy_ms = std::chrono::duration_cast<std::chrono::milliseconds>(url_.busy_timeout).count();
                *session << "PRAGMA busy_timeout = " + std::to_string(busy_ms);
            }
            std::string mode;
            *session << "PRAGMA journal_mode = WAL", soci::into(mode);
            *session << "PRAGMA synchronous = NORMAL";
            *session << "PRAGMA foreign_keys = ON";
        }
    } catch (const soci::soci_error& e) {
        Status s = ClassifyError(e);
        if (s.code() == Code::kInternal && url_.backend == Backend::kMySql) {
            // Connect-time errors without a server errno are network failures.
            s = Unavailable(e.what());
        }
        return Status(s.code(), "connect to " + url_.Redacted() + ": " + s.message());
    }
    return session;
}

Result<PooledSession> Database::Acquire(const SessionSetting* prefer) {
    const auto deadline = std::chrono::steady_clock::now() + url_.acquire_timeout;
    if (!gate_) return AcquireFromPool(deadline, prefer);
    if (!url_.priority) {
        // The wait is bounded by the priority call's own timeouts (the election's are margin / 2).
        if (!gate_->WaitForPriorityCalls(deadline)) {
            return Unavailable("database busy: a priority call (the lease renew) on " + url_.path + " ran for " +
                               FormatDuration(url_.acquire_timeout));
        }
        return AcquireFromPool(deadline, prefer);
    }
    // Announced before the wait for a session, so that no other pool starts a call meanwhile.
    gate_->EnterPriority();
    auto session = AcquireFromPool(deadline, prefer);
    if (!session.ok()) gate_->LeavePriority();
    return session;
}

Result<PooledSession> Database::AcquireFromPool(std::chrono::steady_clock::time_point deadline,
                                                const SessionSetting* prefer) {
    const auto carries = [prefer](const IdleSession& idle) {
        return prefer == nullptr ? idle.setting == nullptr
                                 : idle.setting != nullptr && idle.setting->apply == prefer->apply;
    };
    std::unique_lock lock(mu_);
    for (;;) {
        if (!idle_.empty()) {
            // The most recently returned session that carries `prefer`, else the most recent.
            auto pick = std::find_if(idle_.rbegin(), idle_.rend(), carries);
            if (pick == idle_.rend()) pick = idle_.rbegin();
            IdleSession idle = std::move(*pick);
            idle_.erase(std::next(pick).base());
            const bool restore = idle.setting != nullptr && !carries(idle);
            lock.unlock();
            {
                PooledSession session(this, std::move(idle.session), std::move(idle.setting));
                if (!restore) return session;
                Status restored = session.Apply(nullptr);
                if (restored.ok()) return session;
                // A session whose settings are unknown is not lent out: close it and take another.
                session.MarkBroken();
                spdlog::warn("database session dropped: restoring its settings failed: {}", restored.ToString());
            }  // its destructor hands the broken session back, which takes mu_: not while holding it
            lock.lock();
            continue;
        }
        if (open_ < url_.pool) {
            ++open_;  // reserve the slot before connecting outside the lock
            lock.unlock();
            auto s = Connect();
            if (!s.ok()) {
                lock.lock();
                --open_;
                cv_.notify_one();
                return s.status();
            }
            return PooledSession(this, std::move(*s), nullptr);
        }
        if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && idle_.empty() && open_ >= url_.pool) {
            return Unavailable("all " + std::to_string(url_.pool) + " database sessions busy for " +
                               FormatDuration(url_.acquire_timeout));
        }
    }
}

void Database::Return(std::unique_ptr<soci::session> s, std::shared_ptr<const SessionSetting> setting, bool broken) {
    {
        std::lock_guard lock(mu_);
        if (broken) {
            --open_;
            s.reset();
        } else {
            idle_.push_back({.session = std::move(s), .setting = std::move(setting)});
        }
        cv_.notify_one();
    }
    if (gate_ && url_.priority) gate_->LeavePriority();
}

Result<std::int64_t> Database::NowUs() {
    return Run([this](soci::session& s) {
        std::int64_t now = 0;
        s << "SELECT " + std::string(dialect_.NowUs()), soci::into(now);
        return now;
    });
}

namespace {

// "sched::trigger::SqlFireClaimStore::Claim" for the type of a lambda written in that function
// (also through a template such as RunFenced<...Master::Scan(...)::{lambda}>).
std::string CallerName(const std::type_info& type) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> demangled(abi::__cxa_demangle(type.name(), nullptr, nullptr, &status),
                                                     std::free);
    std::string name = status == 0 && demangled ? demangled.get() : type.name();
    if (const auto paren = name.find('('); paren != std::string::npos) name.resize(paren);
    if (const auto angle = name.rfind('<'); angle != std::string::npos) name.erase(0, angle + 1);
    return name;
}

}  // namespace

void Database::NoteWriteLock(const std::type_info& caller, std::chrono::steady_clock::time_point asked,
                             std::chrono::steady_clock::time_point began) const {
    if (url_.backend != Backend::kSqlite) return;
    using std::chrono::steady_clock;
    const auto now = steady_clock::now();
    const bool got = began != steady_clock::time_point{};
    const auto waited = (got ? began : now) - asked;
    const auto held = got ? now - began : steady_clock::duration::zero();
    const bool starved = waited >= kSlowWriteLock;
    const bool hogged = held >= kSlowWriteLock;
    if (!starved && !hogged) return;
    const std::string name = CallerName(caller);
    static std::mutex mu;
    static std::map<std::string, std::pair<steady_clock::time_point, int>> last;  // by caller + kind
    const auto ms = [](steady_clock::duration d) {
        return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
    };
    const std::string key = name + (starved ? "/wait" : "/hold");
    int suppressed = 0;
    {
        std::lock_guard lock(mu);
        auto& [at, count] = last[key];
        if (at != steady_clock::time_point{} && now - at < kSlowWriteLogEvery) {
            ++count;
            return;
        }
        suppressed = count;
        at = now;
        count = 0;
    }
    const std::string more = suppressed > 0 ? fmt::format(" ({} more since the last warning)", suppressed) : "";
    if (starved) {
        spdlog::warn("SQLite writer {} waited {} ms for the write lock of {}{}{}: the file's writers are saturated",
                     name, ms(waited), url_.path, got ? "" : " and did not get it", more);
    } else {
        spdlog::warn("SQLite writer {} held the write lock of {} for {} ms{}: every other writer waited", name,
                     url_.path, ms(held), more);
    }
}

void Database::Begin(soci::session& s, TxMode mode) const {
    if (url_.backend == Backend::kSqlite && mode == TxMode::kWrite && gate_) {
        // SQLite's busy handler lets a waiter sleep up to 100 ms between polls, so a thread
        // that writes back to back (the master rescanning at once while its batch is full, at
        // overload) takes the lock again microseconds after its commit, every time, and the
        // sleepers (claims, heartbeats, callbacks, the alerts round) wait out their busy
        // timeout (nothing was delivered in 10 s at 2,000-3,000 fires/s). Such a thread
        // first gives way to the process's waiting writers, for at most one of their sleeps.
        // The priority pool never gives way (the others wait for it).
        const auto now = std::chrono::steady_clock::now();
        if (!url_.priority && now - impl::t_last_sqlite_write_end < impl::kBackToBack) {
            gate_->GiveWayToWaiters(now + impl::kGiveWayAtMost);
        }
        gate_->StartWaitingForLock();
        try {
            s << "BEGIN IMMEDIATE";
        } catch (...) {
            gate_->StopWaitingForLock();
            throw;
        }
        gate_->StopWaitingForLock();
        impl::t_in_sqlite_write = true;
        return;
    }
    if (url_.backend == Backend::kSqlite) {
        s << (mode == TxMode::kWrite ? "BEGIN IMMEDIATE" : "BEGIN");
    } else {
        s << "START TRANSACTION";
    }
}

void Database::Commit(soci::session& s) {
    struct End {
        ~End() { impl::EndSqliteWrite(); }
    } end;
    s << "COMMIT";
}

void Database::Rollback(soci::session& s) {
    struct End {
        ~End() { impl::EndSqliteWrite(); }
    } end;
    s << "ROLLBACK";
}

}  // namespace sched::db
