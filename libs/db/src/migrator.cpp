#include "sched/db/migrator.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "sched/db/impl/migrations_data.hpp"

namespace sched::db {

namespace {

constexpr const char* kCreateSchemaVersion =
    "CREATE TABLE IF NOT EXISTS schema_version ("
    " version INT NOT NULL PRIMARY KEY,"
    " name VARCHAR(255) NOT NULL,"
    " applied_at_ms BIGINT NOT NULL)";

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

Migrator::Migrator(Database& db, std::vector<Migration> migrations) : db_(db), migrations_(std::move(migrations)) {}

Result<int> Migrator::CurrentVersion() {
    return db_.Run([](soci::session& s) {
        s << kCreateSchemaVersion;
        int version = 0;
        s << "SELECT COALESCE(MAX(version), 0) FROM schema_version", soci::into(version);
        return version;
    });
}

Result<MigrationReport> Migrator::MigrateLocked(soci::session& s) {
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
        spdlog::info("applying migration {}", m.name);
        for (const auto& statement : SplitStatements(m.sql)) s << statement;
        s << "INSERT INTO schema_version (version, name, applied_at_ms) VALUES (:v, :n, " +
                 std::string(db_.dialect().NowMs()) + ")",
            soci::use(m.version), soci::use(m.name);
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

}  // namespace sched::db
