#pragma once

/// Database URLs as operators write them in config:
///
///   mysql://user[:password]@host[:port]/database[?option=value&...]
///   sqlite:///absolute/path/scheduler.db   sqlite://relative/path.db   [?option=value&...]
///
/// Options (kebab-case, durations as strings):
///   pool=8                  sessions in the pool (1..256)
///   acquire-timeout=5s      how long a caller waits for a free session
///   connect-timeout=3s      MySQL: TCP connect + handshake
///   read-timeout=5s         MySQL: per network read (the client library tries up to 3 times)
///   write-timeout=5s        MySQL: per network write
///   lock-wait-timeout=5s    MySQL: innodb_lock_wait_timeout of each session (whole seconds)
///   statement-timeout=0     MariaDB: max_statement_time of each session (0 = none)
///   busy-timeout=5s         SQLite: how long a writer waits for another writer
///
/// The password may also come from SCHED_DB_PASSWORD (see ApplyPasswordFromEnv); it never
/// appears in logs: use Redacted() for display.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "sched/common/duration.hpp"
#include "sched/common/status.hpp"

namespace sched::db {

enum class Backend { kMySql, kSqlite };

/// "mysql" or "sqlite".
std::string_view BackendName(Backend b);

struct DbUrl {
    Backend backend = Backend::kSqlite;
    // MySQL
    std::string user;
    std::string password;
    std::string host;
    int port = 3306;
    std::string database;
    // SQLite
    std::string path;
    // Options
    int pool = 8;
    Micros acquire_timeout = std::chrono::seconds(5);
    Micros connect_timeout = std::chrono::seconds(3);
    Micros read_timeout = std::chrono::seconds(5);
    Micros write_timeout = std::chrono::seconds(5);
    Micros lock_wait_timeout = std::chrono::seconds(5);
    Micros statement_timeout{0};
    Micros busy_timeout = std::chrono::seconds(5);
    /// Not a URL key (ElectionDbUrl sets it). SQLite has one write lock per file, taken by
    /// whichever waiting connection polls first: under a steady stream of writes a waiter can
    /// miss it for its whole busy timeout. While a call of a `priority` pool is running, calls
    /// of the process's other pools on the same file wait to start, so the writes in flight
    /// drain and the priority call gets the lock within their length. No effect on MySQL.
    bool priority = false;

    /// The URL with the password replaced by "***" (safe to log).
    std::string Redacted() const;
    /// The full URL, password and non-default options included, such that ParseDbUrl(ToString())
    /// gives back this DbUrl. Holds the secret: for handing to child processes, never for logs.
    std::string ToString() const;
};

/// Parses a URL; kInvalidArgument names the part that is wrong.
Result<DbUrl> ParseDbUrl(std::string_view url);

/// Sets url.password from SCHED_DB_PASSWORD when that is set (secrets stay out of config files).
void ApplyPasswordFromEnv(DbUrl& url);

}  // namespace sched::db
