#pragma once

/// The SQL differences between MySQL/MariaDB and SQLite that matter to this project, in one place.
/// Everything else is written once, in the common subset, with bound parameters.

#include <string>
#include <string_view>
#include <vector>

#include "sched/db/db_url.hpp"

namespace sched::db {

class Dialect {
  public:
    explicit Dialect(Backend backend) : backend_(backend) {}
    Backend backend() const { return backend_; }

    /// An SQL expression for the database clock in epoch microseconds (BIGINT), evaluated by the
    /// server inside the statement that uses it. MySQL: NOW(6) at microsecond precision (sessions
    /// run with time_zone '+00:00'); SQLite: julianday('now'), millisecond precision, times 1000.
    std::string_view NowUs() const;
    /// The same clock in epoch milliseconds.
    std::string_view NowMs() const;

    /// An insert that inserts nothing when a unique key already exists. Execute it with
    /// db::ExecuteInsertIfAbsent (database.hpp), which returns 1 or 0:
    /// InsertIfAbsent("t (k, v) VALUES (:k, :v)") -> MySQL `INSERT INTO t ...` (a duplicate-key
    /// error is then caught and counted as 0), SQLite `INSERT INTO t ... ON CONFLICT DO NOTHING`.
    /// Not MySQL's INSERT IGNORE: that also turns NOT NULL and truncation errors into warnings
    /// and writes defaults instead.
    ///
    /// Affected-row counts of UPDATEs count rows *matched* on both backends: soci connects to
    /// MySQL with CLIENT_FOUND_ROWS, and SQLite counts matched rows. A CAS update therefore
    /// reports 1 even when it writes the values a row already had.
    std::string InsertIfAbsent(std::string_view rest) const;

    /// A multi-row insert that skips the rows whose unique key exists and inserts the others:
    /// InsertRowsIfAbsent("t (k, v) VALUES (:k0, :v0), (:k1, :v1)", "k") ->
    /// MySQL `INSERT INTO t ... ON DUPLICATE KEY UPDATE k = k`, SQLite `... ON CONFLICT DO NOTHING`.
    /// Not InsertIfAbsent's plain INSERT on MySQL: a multi-row INSERT stops at its first
    /// duplicate, losing the rows after it. Not INSERT IGNORE, for the reason given above. The
    /// price: its affected-row count does not tell inserted rows from existing ones on MySQL
    /// (CLIENT_FOUND_ROWS counts a no-op update as 1), so callers read the rows back by key.
    /// `key_column` is any column of the table (it is assigned itself on a duplicate).
    std::string InsertRowsIfAbsent(std::string_view rest, std::string_view key_column) const;
    /// Whether InsertRowsIfAbsent may end with `RETURNING columns` and then answers every row it
    /// names, inserted or existing, as the table holds it after the statement: MariaDB 10.5 and
    /// later (the `ON DUPLICATE KEY UPDATE k = k` makes an existing row one the statement
    /// touched). Not MySQL (no RETURNING) nor SQLite (its `ON CONFLICT DO NOTHING` returns only
    /// the inserted rows). Known once a Database has connected (Database::Open).
    bool rows_returned() const { return rows_returned_; }
    void set_rows_returned(bool on) { rows_returned_ = on; }

    /// A column and the SQL expression inserted into it (":name" for a bound value, or e.g. NowMs()).
    struct ColumnValue {
        std::string column;
        std::string value;
    };
    /// An insert that, when `key_columns` already exist, updates `update_columns` to the values
    /// the insert would have written:
    /// Upsert("t", {{"k", ":k"}, {"v", ":v"}, {"w", ":w"}}, {"k"}, {"v"}) ->
    ///   MySQL  INSERT INTO t (k, v, w) VALUES (:k, :v, :w) ON DUPLICATE KEY UPDATE v = VALUES(v)
    ///   SQLite INSERT INTO t (k, v, w) VALUES (:k, :v, :w) ON CONFLICT (k) DO UPDATE SET v = excluded.v
    std::string Upsert(std::string_view table, const std::vector<ColumnValue>& values,
                       const std::vector<std::string>& key_columns,
                       const std::vector<std::string>& update_columns) const;

    /// Appended to a SELECT to take a shared row lock until commit (MySQL `LOCK IN SHARE MODE`,
    /// accepted by MySQL 8 and MariaDB alike). SQLite: empty; its write transactions are
    /// exclusive from BEGIN IMMEDIATE on.
    std::string_view ShareLock() const;
    /// Appended to a SELECT to take an exclusive row lock until commit. SQLite: empty.
    std::string_view ForUpdate() const;
    /// Written after a table's name in a SELECT: the table is read by its primary key whatever
    /// the optimizer's statistics say (MySQL `FORCE INDEX (PRIMARY)`). For a locking read by a
    /// long IN list on the key's first column: past `eq_range_index_dive_limit` values MariaDB
    /// may estimate from stale statistics and scan the whole table, and a full scan FOR UPDATE
    /// locks every row it reads. SQLite: empty.
    std::string_view ByPrimaryKey() const;

  private:
    Backend backend_;
    bool rows_returned_ = false;
};

}  // namespace sched::db
