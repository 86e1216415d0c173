#pragma once

#include <string_view>
#include <vector>

namespace sched::db::impl {

struct MigrationSource {
    std::string_view file;  // "001_init.sql"
    std::string_view sql;
};

/// The migration files of each dialect, sorted by name (generated from sql/).
const std::vector<MigrationSource>& mysql_migrations();
const std::vector<MigrationSource>& sqlite_migrations();

}  // namespace sched::db::impl
