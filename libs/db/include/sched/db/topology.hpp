#pragma once

/// What kind of MySQL deployment the scheduler runs on, declared in the `database` section
/// (`topology: single | galera`) and checked against the server at start-up.
///
/// The compare-and-set rules of the lease, the fence and the claims hold on one server (row
/// locks order every writer) and on a MariaDB Galera cluster used as declared (certification
/// orders writers at commit; lock::Fence then fences with a write, see fenced.hpp). They do not
/// hold on a read-only server or replica (writes fail or fork), on an undeclared Galera node (a
/// locking read fences nothing across nodes), on a Galera node outside the primary component,
/// or with statement-based binary logging under READ COMMITTED (the server refuses the writes).

#include <string>
#include <string_view>

#include "sched/common/status.hpp"

namespace sched::db {

class Database;

enum class Topology {
    kSingle,  ///< one server (or a failover pair with one writable primary)
    kGalera,  ///< a MariaDB Galera cluster; nodes may write through different Galera nodes
};

std::string_view TopologyName(Topology t);
/// "single" or "galera"; nullopt-like error as kInvalidArgument naming the accepted values.
Result<Topology> ParseTopology(std::string_view text);

/// The server variables and status the check reads (SHOW VARIABLES / SHOW STATUS; no
/// privilege beyond a connection is needed).
struct ServerFacts {
    bool read_only = false;
    bool wsrep_on = false;             ///< a Galera node (wsrep_on = ON)
    std::string wsrep_cluster_status;  ///< "Primary", "non-Primary", "Disconnected"; "" without wsrep
    std::string wsrep_local_state;     ///< "Synced", "Donor/Desynced", "Joining", ...; "" without wsrep
    std::string binlog_format;         ///< "ROW", "MIXED", "STATEMENT"
    bool log_bin = false;
    bool replica = false;  ///< the server replicates from a primary (a replica's SQL thread runs)
};

/// Reads the facts from a MySQL server. Errors as Database::Run gives them.
Result<ServerFacts> ReadServerFacts(Database& db);

/// OK when the server can carry the scheduler as `declared`; otherwise kFailedPrecondition with
/// one line saying what was found and what to do.
Status CheckTopology(const ServerFacts& facts, Topology declared);

/// Ready to serve: for kGalera, the node is in the primary component and Synced; for kSingle,
/// the server is writable. kUnavailable with the reason otherwise (what /readyz reports).
Status CheckServing(const ServerFacts& facts, Topology declared);

}  // namespace sched::db
