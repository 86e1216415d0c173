#include "sched/store/fire_claims.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "impl/query.hpp"

namespace sched::store {

namespace {

// The columns the slave needs to dispatch a fire.
constexpr const char* kClaimColumns =
    "id, job_id, scheduled_time, kind, attempt, shard_index, shard_total, epoch, assigned_node, status, due_at, "
    "dispatch_epoch, dispatched_at, created_at, workflow_run_id";

struct ClaimRow {
    Fire fire;
    std::string kind;
    std::string status;
    impl::NullableString assigned_node;
    impl::NullableInt64 dispatch_epoch;
    impl::NullableInt64 dispatched_at;
    impl::NullableInt64 workflow_run_id;  // a workflow step's run: its params may replace the job's

    void BindInto(soci::statement& st, impl::IntColumns& ints) {
        ints.Into(st, fire.id);
        ints.Into(st, fire.job_id);
        ints.Into(st, fire.scheduled_time);
        st.exchange(soci::into(kind));
        ints.Into(st, fire.attempt);
        ints.Into(st, fire.shard_index);
        ints.Into(st, fire.shard_total);
        ints.Into(st, fire.epoch);
        st.exchange(soci::into(assigned_node.value, assigned_node.ind));
        st.exchange(soci::into(status));
        ints.Into(st, fire.due_at);
        ints.Into(st, dispatch_epoch);
        ints.Into(st, dispatched_at);
        ints.Into(st, fire.created_at);
        ints.Into(st, workflow_run_id);
    }
    Fire Finish() {
        auto k = ParseFireKind(kind);
        auto st = ParseFireStatus(status);
        if (!k || !st) throw std::runtime_error("fire " + std::to_string(fire.id) + ": bad kind/status in database");
        fire.kind = *k;
        fire.status = *st;
        fire.assigned_node = assigned_node.get();
        fire.dispatch_epoch = dispatch_epoch.get();
        fire.dispatched_at = dispatched_at.get();
        fire.workflow_run_id = workflow_run_id.get();
        return fire;
    }
};

// Ids are integers formatted here, never text from outside, so they are inlined into the
// statement: one statement per group instead of one bound placeholder per fire. A group is
// bounded by the slave (max-group), so the list is too.
std::string IdList(const std::vector<std::int64_t>& ids) {
    std::string out;
    for (auto id : ids) out += (out.empty() ? "" : ", ") + std::to_string(id);
    return out;
}

// The table of an UPDATE that finds its rows by an `id IN (...)` list and then tests their
// status. SQLite has no statistics here and costs `status = 'pending'` on idx_fire_status as a
// handful of rows, so it walked EVERY pending fire (every dispatching one for MarkRunning)
// instead of the list's primary keys: under overload the backlog grows, each claim holds the
// file's single write lock longer, the backlog grows faster, and the node's other writers
// (heartbeat, renew, purge, alerts) wait out their busy timeout (at 3,000 fires/s nothing was
// delivered in 10 s). NOT INDEXED still looks rows up by rowid (id). MariaDB chooses
// by its statistics and finds them by primary key.
std::string ByIdTable(soci::session& s) {
    return s.get_backend_name() == "sqlite3" ? "job_fire NOT INDEXED" : "job_fire";
}

}  // namespace

std::vector<Fire> FireClaims::Claim(soci::session& s, const std::string& node, const std::vector<std::int64_t>& ids,
                                    std::int64_t token, std::int64_t epoch, std::int64_t now_ms) {
    if (ids.empty()) return {};
    const std::string list = IdList(ids);
    // The ids come from the master's notice, unread here (the slave queues them by the notice's
    // due times): the node test keeps a slave to its own fires whatever a notice names.
    soci::statement claim =
        (s.prepare << "UPDATE " + ByIdTable(s) +
                          " SET status = 'dispatching', claim_token = :token, dispatch_epoch = :epoch, "
                          "dispatched_at = :now_ms WHERE id IN (" +
                          list + ") AND status = 'pending' AND assigned_node = :node",
         soci::use(token, "token"), soci::use(epoch, "epoch"), soci::use(now_ms, "now_ms"), soci::use(node, "node"));
    impl::ExecuteAffected(claim);
    return impl::SelectRows<ClaimRow>(s,
                                      std::string("SELECT ") + kClaimColumns + " FROM job_fire WHERE id IN (" + list +
                                          ") AND claim_token = :token AND status = 'dispatching' ORDER BY due_at, id",
                                      [&](soci::statement& st) { st.exchange(soci::use(token, "token")); });
}

bool FireClaims::Restamp(soci::session& s, std::int64_t id, std::int64_t token, std::int64_t epoch) {
    soci::statement st = (s.prepare << "UPDATE job_fire SET dispatch_epoch = :epoch WHERE id = :id AND claim_token = "
                                       ":token AND status = 'dispatching'",
                          soci::use(epoch, "epoch"), soci::use(id, "id"), soci::use(token, "token"));
    return impl::ExecuteAffected(st) == 1;
}

int FireClaims::MarkRunning(soci::session& s, const std::vector<StartedFire>& fires, const std::string& address) {
    if (fires.empty()) return 0;
    // The fires of one window share a handful of start times (one per batch of runs): a CASE
    // over those, each with an IN list, not a WHEN per fire (CASE lists cost MariaDB a scan per
    // row, see FireResults).
    std::map<std::int64_t, std::vector<std::int64_t>> by_start;
    std::vector<std::int64_t> ids;
    ids.reserve(fires.size());
    for (const auto& f : fires) {
        by_start[f.started_at].push_back(f.id);
        ids.push_back(f.id);
    }
    std::string started;
    if (by_start.size() == 1) {
        started = std::to_string(by_start.begin()->first);
    } else {
        started = "CASE";
        for (const auto& [at, group] : by_start) {
            started += " WHEN id IN (" + IdList(group) + ") THEN " + std::to_string(at);
        }
        started += " ELSE started_at END";
    }
    soci::statement st = (s.prepare << "UPDATE " + ByIdTable(s) +
                                           " SET status = 'running', executor_address = :address, "
                                           "started_at = " +
                                           started + " WHERE id IN (" + IdList(ids) + ") AND status = 'dispatching'",
                          soci::use(address, "address"));
    return static_cast<int>(impl::ExecuteAffected(st));
}

std::vector<std::int64_t> FireClaims::ListPendingIds(soci::session& s, const std::string& node, int limit) {
    // Ids only, in the index's own order: idx_fire_node (assigned_node, status, scheduled_time)
    // holds the primary key, so the poll reads no row and sorts nothing. It read every pending
    // row of the node whole, sorted by due_at, once a second per node; at 5,000 fires/s on 3
    // nodes MariaDB ran that as a scan of the whole table (EXPLAIN: type ALL, filesort; 153 ms
    // for one poll of 2,400 rows), to learn that the slave already knew every one of
    // them from the master's notifications.
    return impl::SelectRows<impl::IdRow>(s,
                                         "SELECT id FROM job_fire WHERE assigned_node = :node AND status = 'pending' "
                                         "ORDER BY scheduled_time, id LIMIT " +
                                             std::to_string(std::max(1, limit)),
                                         [&](soci::statement& st) { st.exchange(soci::use(node, "node")); });
}

std::vector<Fire> FireClaims::FindPending(soci::session& s, const std::string& node,
                                          const std::vector<std::int64_t>& ids) {
    if (ids.empty()) return {};
    return impl::SelectRows<ClaimRow>(s,
                                      std::string("SELECT ") + kClaimColumns + " FROM job_fire WHERE id IN (" +
                                          IdList(ids) +
                                          ") AND status = 'pending' AND assigned_node = :node ORDER BY due_at, id",
                                      [&](soci::statement& st) { st.exchange(soci::use(node, "node")); });
}

}  // namespace sched::store
