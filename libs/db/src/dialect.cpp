#include "sched/db/dialect.hpp"

namespace sched::db {

std::string_view Dialect::NowUs() const {
    // UNIX_TIMESTAMP(NOW(6)) is exact only because every session sets time_zone '+00:00' (see
    // database.cpp): in a zone with DST, the repeated hour would map two instants to one.
    if (backend_ == Backend::kMySql) return "CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)";
    // julianday('now') is fixed for the duration of one sqlite3_step, like NOW() in MySQL.
    return "(CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000)";
}

std::string_view Dialect::NowMs() const {
    if (backend_ == Backend::kMySql) return "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)";
    return "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)";
}

std::string Dialect::InsertIfAbsent(std::string_view rest) const {
    // Not ON DUPLICATE KEY UPDATE k = k: with CLIENT_FOUND_ROWS (soci's default) MySQL reports
    // such a no-op as 1 affected row, indistinguishable from a real insert. Not INSERT IGNORE:
    // it would hide a missing NOT NULL value. A plain insert whose duplicate-key error
    // ExecuteInsertIfAbsent counts as 0 rows is exact.
    if (backend_ == Backend::kMySql) return "INSERT INTO " + std::string(rest);
    return "INSERT INTO " + std::string(rest) + " ON CONFLICT DO NOTHING";
}

std::string Dialect::InsertRowsIfAbsent(std::string_view rest, std::string_view key_column) const {
    if (backend_ == Backend::kMySql) {
        return "INSERT INTO " + std::string(rest) + " ON DUPLICATE KEY UPDATE " + std::string(key_column) + " = " +
               std::string(key_column);
    }
    return "INSERT INTO " + std::string(rest) + " ON CONFLICT DO NOTHING";
}

std::string Dialect::Upsert(std::string_view table, const std::vector<ColumnValue>& values,
                            const std::vector<std::string>& key_columns,
                            const std::vector<std::string>& update_columns) const {
    std::string columns;
    std::string exprs;
    for (const auto& v : values) {
        columns += (columns.empty() ? "" : ", ") + v.column;
        exprs += (exprs.empty() ? "" : ", ") + v.value;
    }
    std::string keys;
    for (const auto& k : key_columns) keys += (keys.empty() ? "" : ", ") + k;
    std::string sql = "INSERT INTO " + std::string(table) + " (" + columns + ") VALUES (" + exprs + ")";
    std::string sets;
    for (const auto& c : update_columns) {
        sets += (sets.empty() ? "" : ", ") + c +
                (backend_ == Backend::kMySql ? " = VALUES(" + c + ")" : " = excluded." + c);
    }
    if (backend_ == Backend::kMySql) return sql + " ON DUPLICATE KEY UPDATE " + sets;
    return sql + " ON CONFLICT (" + keys + ") DO UPDATE SET " + sets;
}

std::string_view Dialect::ShareLock() const {
    return backend_ == Backend::kMySql ? " LOCK IN SHARE MODE" : "";
}

std::string_view Dialect::ForUpdate() const {
    return backend_ == Backend::kMySql ? " FOR UPDATE" : "";
}

std::string_view Dialect::ByPrimaryKey() const {
    return backend_ == Backend::kMySql ? " FORCE INDEX (PRIMARY)" : "";
}

}  // namespace sched::db
