#include "sched/db/topology.hpp"

#include <algorithm>
#include <cctype>
#include <map>

#include "sched/db/database.hpp"

namespace sched::db {

namespace {

std::string Upper(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return s;
}

bool On(const std::string& value) {
    const std::string v = Upper(value);
    return v == "ON" || v == "1" || v == "YES";
}

// SHOW VARIABLES / SHOW STATUS need no privilege beyond a connection (SHOW SLAVE STATUS would
// need REPLICATION CLIENT): a replica is recognised by its running replication thread.
std::map<std::string, std::string> Show(soci::session& s, const std::string& what) {
    std::map<std::string, std::string> out;
    std::string name;
    std::string value;
    soci::indicator value_ind = soci::i_null;
    soci::statement st = (s.prepare << what, soci::into(name), soci::into(value, value_ind));
    st.execute(false);
    while (st.fetch()) out[name] = value_ind == soci::i_ok ? value : std::string();
    return out;
}

std::string Get(const std::map<std::string, std::string>& m, const std::string& key) {
    const auto it = m.find(key);
    return it == m.end() ? std::string() : it->second;
}

}  // namespace

std::string_view TopologyName(Topology t) {
    return t == Topology::kGalera ? "galera" : "single";
}

Result<Topology> ParseTopology(std::string_view text) {
    if (text == "single") return Topology::kSingle;
    if (text == "galera") return Topology::kGalera;
    return InvalidArgument("must be single or galera, not '" + std::string(text.substr(0, 32)) + "'");
}

Result<ServerFacts> ReadServerFacts(Database& db) {
    return db.Run([](soci::session& s) {
        const auto vars = Show(s,
                               "SHOW GLOBAL VARIABLES WHERE Variable_name IN "
                               "('read_only', 'wsrep_on', 'binlog_format', 'log_bin')");
        const auto status = Show(s,
                                 "SHOW GLOBAL STATUS WHERE Variable_name IN "
                                 "('wsrep_cluster_status', 'wsrep_local_state_comment', 'Slave_running')");
        ServerFacts f;
        f.read_only = On(Get(vars, "read_only"));
        f.wsrep_on = On(Get(vars, "wsrep_on"));
        f.binlog_format = Upper(Get(vars, "binlog_format"));
        f.log_bin = On(Get(vars, "log_bin"));
        f.wsrep_cluster_status = Get(status, "wsrep_cluster_status");
        f.wsrep_local_state = Get(status, "wsrep_local_state_comment");
        f.replica = On(Get(status, "Slave_running"));
        return f;
    });
}

Status CheckTopology(const ServerFacts& f, Topology declared) {
    if (f.read_only) {
        return FailedPrecondition(
            "database is read-only (read_only = ON: a replica or a demoted primary); point database.url at the "
            "writable primary");
    }
    if (f.replica) {
        return FailedPrecondition(
            "database is a replica (its replication thread runs); point database.url at the primary, the "
            "scheduler's leases and claims need the one copy every node writes");
    }
    if (f.wsrep_on && declared != Topology::kGalera) {
        return FailedPrecondition(
            "database is a Galera node (wsrep_on = ON) but database.topology is single; declare "
            "database.topology: galera, so that fenced writes certify across Galera nodes");
    }
    if (!f.wsrep_on && declared == Topology::kGalera) {
        return FailedPrecondition(
            "database.topology is galera but the server is not a Galera node (wsrep_on = OFF); declare "
            "database.topology: single or point database.url at a Galera node");
    }
    if (f.wsrep_on && f.wsrep_cluster_status != "Primary") {
        return FailedPrecondition(
            "Galera node is not in the primary component (wsrep_cluster_status = " + f.wsrep_cluster_status +
            "); start the node once its cluster has a quorum, or point database.url at a "
            "node of the primary component");
    }
    if (f.wsrep_on && f.wsrep_local_state != "Synced") {
        return FailedPrecondition("Galera node is not Synced (wsrep_local_state_comment = " + f.wsrep_local_state +
                                  "); wait until it has caught up with the cluster");
    }
    // Under READ COMMITTED, InnoDB refuses writes that statement-based binary logging would
    // have to replay in a different order.
    if (f.log_bin && f.binlog_format == "STATEMENT") {
        return FailedPrecondition(
            "binlog_format is STATEMENT, which refuses the scheduler's READ COMMITTED writes; set "
            "binlog_format = ROW (or MIXED)");
    }
    return Status::Ok();
}

Status CheckServing(const ServerFacts& f, Topology declared) {
    if (f.read_only) return Unavailable("database is read-only");
    if (declared == Topology::kGalera || f.wsrep_on) {
        if (f.wsrep_cluster_status != "Primary") {
            return Unavailable(
                "Galera node left the primary component (wsrep_cluster_status = " + f.wsrep_cluster_status + ")");
        }
        if (f.wsrep_local_state != "Synced") {
            return Unavailable("Galera node is not Synced (" + f.wsrep_local_state + ")");
        }
    }
    return Status::Ok();
}

}  // namespace sched::db
