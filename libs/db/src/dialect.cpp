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
    // such a no-op as 1 affected row, indistinguishable from a real insert.
    if (backend_ == Backend::kMySql) return "INSERT IGNORE INTO " + std::string(rest);
    return "INSERT INTO " + std::string(rest) + " ON CONFLICT DO NOTHING";
}

std::string_view Dialect::ShareLock() const {
    return backend_ == Backend::kMySql ? " LOCK IN SHARE MODE" : "";
}

std::string_view Dialect::ForUpdate() const {
    return backend_ == Backend::kMySql ? " FOR UPDATE" : "";
}

}  // namespace sched::db
