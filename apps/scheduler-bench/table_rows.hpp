#pragma once

/// The rows each table of the cluster's database changed during a window, from MariaDB's
/// per-table statistics (information_schema.TABLE_STATISTICS, kept while the server's
/// `userstat` is on). Per fire, they say what a fire costs the database in rows, whatever number
/// of statements carried them: job_fire's rows per fire (its insert, claim and end), which the
/// server-wide Handler_* counters cannot split from the job's advance and the seats.

#include <cstddef>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "sched/db/database.hpp"

namespace sched::bench {

/// One table's counter: rows inserted, updated or deleted. (The statistics' ROWS_CHANGED_X_INDEXES
/// is those rows times the table's number of indexes, not the index entries a change wrote, so it
/// says nothing a row count does not.)
struct TableRows {
    double changed = 0;
};

/// The tables of the connection's database that the server has statistics for, by name (a table
/// is listed once it was read or changed since the statistics were turned on).
using TableRowSample = std::map<std::string, TableRows>;

/// The server's per-table statistics for the life of this object: turned on (SET GLOBAL userstat
/// = 1; the bench connects as the server's administrator) when asked and the server keeps them,
/// and set back to what they were at the end, so that a --db-url server is left as it was.
/// They cost MariaDB a few counters per statement (4 % of its CPU per fire at 3,000 fires/s, none
/// measurable at 6,000; docs/benchmarks.md): `--no-table-stats` measures without them.
class TableStatistics {
  public:
    TableStatistics(db::Database& db, bool on);
    ~TableStatistics();
    TableStatistics(const TableStatistics&) = delete;
    TableStatistics& operator=(const TableStatistics&) = delete;

    /// The tables' counters now; nullopt when they are off, on SQLite and where the server has
    /// none (MySQL). Taken before and after a window.
    std::optional<TableRowSample> Sample();

  private:
    db::Database& db_;
    bool on_ = false;
    bool restore_off_ = false;  // they were off before
};

/// The delta per fire: {"job_fire": r, "job": r, ..., "all": r}, every table that changed a row
/// in the window; null without both samples or without fires.
nlohmann::json TableRowsPerFire(const std::optional<TableRowSample>& before, const std::optional<TableRowSample>& after,
                                std::size_t fires);

/// `per_fire`'s job_fire rows (null when not measured): the figure the ladder prints.
nlohmann::json FireRowsPerFire(const nlohmann::json& per_fire);

}  // namespace sched::bench
