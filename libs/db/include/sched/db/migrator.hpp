#pragma once

/// Schema migrations from sql/mysql/NNN_name.sql and sql/sqlite/NNN_name.sql (compiled into the
/// binary). Applied versions are recorded in `schema_version(version, name, applied_at_ms)`.
///
/// Safe to run from several processes at once: MySQL serialises migrators with the named lock
/// GET_LOCK('sched.migrate') (released by the server if the process dies). A Galera node
/// (wsrep_on) holds named locks for its own clients only, so there the lock is the row
/// `schema_migration_lock('migrate')`, taken by an insert that certification lets only one node
/// win, renewed before each migration and expiring 5 minutes after a migrator died; SQLite applies all
/// missing migrations inside one BEGIN IMMEDIATE transaction (its DDL is transactional).
/// MySQL DDL commits implicitly, so every MySQL migration is written to be re-runnable
/// (CREATE TABLE IF NOT EXISTS ...) in case a process dies half-way through one.

#include <functional>
#include <string>
#include <vector>

#include "sched/common/status.hpp"
#include "sched/db/database.hpp"

namespace sched::db {

struct Migration {
    int version = 0;  ///< the NNN prefix of the file name
    std::string name;
    std::string sql;
};

/// The migrations compiled in for `backend`, ordered by version. Throws std::logic_error if two
/// files share a version or a name does not start with digits (a build defect, not user input).
std::vector<Migration> BuiltinMigrations(Backend backend);

/// Splits a migration file into statements at semicolons that end a line; `--` comment lines
/// are dropped.
std::vector<std::string> SplitStatements(const std::string& sql);

struct MigrationReport {
    int from_version = 0;              ///< the schema version found
    int to_version = 0;                ///< the schema version now
    std::vector<std::string> applied;  ///< names of the migrations applied by this call
};

class Migrator {
  public:
    explicit Migrator(Database& db, std::vector<Migration> migrations);
    explicit Migrator(Database& db) : Migrator(db, BuiltinMigrations(db.backend())) {}

    /// Applies the missing migrations in order. Errors:
    ///  - kFailedPrecondition when the database holds a newer schema than this binary knows;
    ///  - kDeadlineExceeded when another migrator held the lock for longer than `lock_wait`;
    ///  - any database error as ClassifyError maps it.
    Result<MigrationReport> Migrate(Micros lock_wait = std::chrono::seconds(60));

    /// The highest applied version (0 for an empty database).
    Result<int> CurrentVersion();

  private:
    /// `before_each` runs before each migration applied (the Galera lock renews its lease).
    Result<MigrationReport> MigrateLocked(soci::session& s, const std::function<void()>& before_each = {});
    Result<MigrationReport> MigrateUnderRowLock(soci::session& s, Micros lock_wait);

    Database& db_;
    std::vector<Migration> migrations_;
};

}  // namespace sched::db
