#pragma once

/// The `database` section of every app's YAML:
///
///   database:
///     url: "sqlite://data/scheduler.db"   # or mysql://user@host:3306/db?pool=8 (see db_url.hpp)
///     connect-retry-for: "30s"            # keep retrying an unreachable database this long at start-up
///     topology: single                    # or galera: a MariaDB Galera cluster (see topology.hpp)
///
/// SCHED_DB_PASSWORD, when set, overrides the URL's password.

#include "sched/common/config.hpp"
#include "sched/db/db_url.hpp"
#include "sched/db/topology.hpp"

namespace sched::db {

struct DatabaseConfig {
    DbUrl url;
    Micros connect_retry_for = std::chrono::seconds(30);
    Topology topology = Topology::kSingle;

    /// Throws ConfigError naming `database.url` (with the parser's reason) or the other key;
    /// `topology: galera` with a SQLite URL is refused.
    static DatabaseConfig FromYaml(const ConfigNode& node, const std::string& default_url);
};

}  // namespace sched::db
