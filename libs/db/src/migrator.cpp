#include "sched/db/migrator.hpp"

#include <algorithm>
#include <cctype>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "sched/db/impl/migrations_data.hpp"

namespace sched::db {

namespace {

constexpr const char* kCreateSchemaVersion =
    "CREATE TABLE IF NOT EXISTS schema_version ("
    " version INT NOT NULL PRIMARY KEY,"
    " name VARCHAR(255) NOT NULL,"
    " applied_at_ms BIGINT NOT NULL)";

// The migration lock on a Galera cluster (see migrator.hpp). Its lease outlives a migrator
// that died holding it by this long; a live one renews it before each migration.
constexpr long long kGaleraLockLeaseMs = 300'000;

constexpr const char* kCreateMigrationLock =
    "CREATE TABLE IF NOT EXISTS schema_migration_lock ("
    " name VARCHAR(64) NOT NULL PRIMARY KEY,"
    " owner VARCHAR(191) NOT NULL,"
    " until_ms BIGINT NOT NULL)";

bool IsGaleraNode(soci::session& s) {
    std::string name;
    std::string value;
    soci::indicator ind = soci::i_null;
    s << "SHOW VARIABLES LIKE 'wsrep_on'", soci::into(name), soci::into(value, ind);
    return s.got_data() && ind == soci::i_ok && (value == "ON" || value == "1");
}

std::string LockOwner() {
    std::random_device rd;
    char host[64] = {};
    (void)::gethostname(host, sizeof(host) - 1);
    return std::string(host) + "/" + std::to_string(::getpid()) + "/" + std::to_string(rd());
}

}  // namespace

std::vector<Migration> BuiltinMigrations(Backend backend) {
    const auto& sources = backend == Backend::kMySql ? impl::mysql_migrations() : impl::sqlite_migrations();
    std::vector<Migration> out;
    std::set<int> seen;
    for (const auto& src : sources) {
        const std::string file(src.file);
        std::size_t digits = 0;
        while (digits < file.size() && std::isdigit(static_cast<unsigned char>(file[digits]))) ++digits;
        if (digits == 0) throw std::logic_error("migration file name must start with its version: " + file);
        Migration m;
        m.version = std::stoi(file.substr(0, digits));
        m.name = file;
        m.sql = std::string(src.sql);
        if (!seen.insert(m.version).second) throw std::logic_error("two migrations share version in " + file);
        out.push_back(std::move(m));
    }
    std::sort(out.begin(), out.end(), [](const Migration& a, const Migration& b) { return a.version < b.version; });
    return out;
}

std::vector<std::string> SplitStatements(const std::string& sql) {
    std::vector<std::string> out;
    std::istringstream in(sql);
    std::string line;
    std::string current;
    while (std::getline(in, line)) {
        const auto first = line.find_first_not_of(" \t\r");
        if (first == std::string::npos || line.compare(first, 2, "--") == 0) continue;
        const auto last = line.find_last_not_of(" \t\r");
        current += line.substr(0, last + 1);
        if (line[last] == ';') {
            current.pop_back();
            out.push_back(current);
            current.clear();
        } else {
            current += '\n';
        }
    }
    if (current.find_first_not_of(" \t\r\n") != std::string::npos) out.push_back(current);
    return out;
}

// On a Galera cluster an autocommit write can lose a certification conflict (deadlock error
// 1213): the migration holder's lease extension to a waiter's polling write on the lock row, its
// schema_version row to a DDL another node runs in total order. The statement either committed
// or did nothing, so it is run again.
namespace {
template <typename Fn>
void RetryCertificationConflicts(Fn&& statement) {
    for (int attempt = 1;; ++attempt) {
        try {
            statement();
            return;
        } catch (const soci::soci_error& e) {
            if (attempt >= 5 || ClassifyError(e).code() != Code::kAborted) throw;
            std::this_thread::sleep_for(std::chrono::milliseconds(20 * attempt));
        }
    }
}
}  // namespace

Migrator::Migrator(Database& db, std::vector<Migration> migrations) : db_(db), migrations_(std::move(migrations)) {}

Result<int> Migrator::CurrentVersion() {
    return db_.Run([](soci::session& s) {
        s << kCreateSchemaVersion;
        int version = 0;
        s << "SELECT COALESCE(MAX(version), 0) FROM schema_version", soci::into(version);
        return version;
    });
}

Result<MigrationReport> Migrator::MigrateLocked(soci::session& s, const std::function<void()>& before_each) {
    s << kCreateSchemaVersion;
    MigrationReport report;
    s << "SELECT COALESCE(MAX(version), 0) FROM schema_version", soci::into(report.from_version);
    report.to_version = report.from_version;
    const int known = migrations_.empty() ? 0 : migrations_.back().version;
    if (report.from_version > known) {
        return FailedPrecondition("database schema version " + std::to_string(report.from_version) +
                                  " is newer than this binary knows (" + std::to_string(known) +
                                  "); run a newer release of the scheduler");
    }
    for (const auto& m : migrations_) {
        if (m.version <= report.from_version) continue;
        if (before_each) before_each();
        spdlog::info("applying migration {}", m.name);
        for (const auto& statement : SplitStatements(m.sql)) s << statement;
        RetryCertificationConflicts([&] {
            s << "INSERT INTO schema_version (version, name, applied_at_ms) VALUES (:v, :n, " +
                     std::string(db_.dialect().NowMs()) + ")",
                soci::use(m.version), soci::use(m.name);
        });
        report.applied.push_back(m.name);
        report.to_version = m.version;
    }
    return report;
}

Result<MigrationReport> Migrator::Migrate(Micros lock_wait) {
    if (db_.backend() == Backend::kSqlite) {
        return db_.InTransaction(TxMode::kWrite, [this](soci::session& s) { return MigrateLocked(s); });
    }
    return db_.Run([&](soci::session& s) -> Result<MigrationReport> {
        if (IsGaleraNode(s)) return MigrateUnderRowLock(s, lock_wait);
        const long long wait_s =
            std::max<long long>(0, std::chrono::duration_cast<std::chrono::seconds>(lock_wait).count());
        int got = 0;
        soci::indicator ind = soci::i_ok;
        s << "SELECT GET_LOCK('sched.migrate', " + std::to_string(wait_s) + ")", soci::into(got, ind);
        if (ind != soci::i_ok || got != 1) {
            return DeadlineExceeded("another process held the migration lock for " + FormatDuration(lock_wait));
        }
        // Released explicitly on every path; the server also releases it if this connection dies.
        struct ReleaseLock {
            soci::session& s;
            ~ReleaseLock() {
                try {
                    s << "SELECT RELEASE_LOCK('sched.migrate')";
                } catch (const soci::soci_error& e) {
                    spdlog::warn("could not release the migration lock: {}", e.what());
                }
            }
        } release{s};
        return MigrateLocked(s);
    });
}

// GET_LOCK is local to one Galera node: two migrators connected to different nodes would both
// hold it. A row is not: two inserts of the same key on different nodes conflict at
// certification, and the later one fails (deadlock error 1213) and tries again. Each statement
// runs on its own (autocommit), so a certification failure never loses more than one attempt.
Result<MigrationReport> Migrator::MigrateUnderRowLock(soci::session& s, Micros lock_wait) {
    const std::string owner = LockOwner();
    const std::string now_ms(db_.dialect().NowMs());
    const std::string lease = std::to_string(kGaleraLockLeaseMs);
    const auto deadline = std::chrono::steady_clock::now() + lock_wait;
    auto pause = std::chrono::milliseconds(50);
    std::string holder;
    // Once, not at every poll: a DDL runs in total order on every node and can abort the
    // holder's writes there, even when the table exists.
    RetryCertificationConflicts([&] { s << kCreateMigrationLock; });
    while (true) {
        try {
            // Taken when absent or expired; the assignments read the old until_ms, left to right.
            s << "INSERT INTO schema_migration_lock (name, owner, until_ms) VALUES ('migrate', :owner, " + now_ms +
                     " + " + lease +
                     ") ON DUPLICATE KEY UPDATE"
                     " owner = IF(until_ms < " +
                     now_ms + ", VALUES(owner), owner), until_ms = IF(until_ms < " + now_ms +
                     ", VALUES(until_ms), until_ms)",
                soci::use(owner);
            s << "SELECT owner FROM schema_migration_lock WHERE name = 'migrate'", soci::into(holder);
            if (holder == owner) break;
        } catch (const soci::soci_error& e) {
            const Status status = ClassifyError(e);
            if (status.code() != Code::kAborted) throw;  // not a certification conflict
            spdlog::info("migration lock: {}; trying again", status.message());
        }
        if (std::chrono::steady_clock::now() + pause > deadline) {
            return DeadlineExceeded("another process (" + holder + ") held the migration lock for " +
                                    FormatDuration(lock_wait));
        }
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::milliseconds(1000));
    }
    struct ReleaseLock {
        soci::session& s;
        const std::string& owner;
        ~ReleaseLock() {
            try {
                s << "DELETE FROM schema_migration_lock WHERE name = 'migrate' AND owner = :owner", soci::use(owner);
            } catch (const soci::soci_error& e) {
                spdlog::warn("could not release the migration lock (it expires by itself): {}", e.what());
            }
        }
    } release{s, owner};
    return MigrateLocked(s, [&] {
        RetryCertificationConflicts([&] {
            s << "UPDATE schema_migration_lock SET until_ms = " + now_ms + " + " + lease +
                     " WHERE name = 'migrate' AND owner = :owner",
                soci::use(owner);
        });
    });
}

}  // namespace sched::db
