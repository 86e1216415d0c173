#include "sched/store/registry.hpp"

#include <nlohmann/json.hpp>

#include "impl/json_strings.hpp"
#include "impl/query.hpp"

namespace sched::store {

namespace {

std::string HandlersToJson(const std::vector<std::string>& handlers) {
    return nlohmann::json(handlers).dump();
}

std::vector<std::string> HandlersFromJson(const std::string& text) {
    // Written only by HandlersToJson; a malformed value reads as "no handlers" rather than
    // taking the whole registry listing down.
    return impl::JsonStrings(text);
}

struct ExecutorRow {
    ExecutorInstance e;
    std::string handlers;
    ExecutorInstance Finish() {
        ExecutorInstance out = e;
        out.handlers = HandlersFromJson(handlers);
        return out;
    }
    void BindInto(soci::statement& st) {
        impl::IntoColumns(st, e.app, e.address, handlers, e.capacity, e.running, e.last_heartbeat_ms,
                          e.registered_at_ms);
    }
};

constexpr const char* kExecutorColumns =
    "SELECT app, address, handlers, capacity, running, last_heartbeat_ms, registered_at_ms FROM executor_instance";

struct NodeRow {
    TriggerNode n;
    impl::NullableInt64 sent_through;
    TriggerNode Finish() {
        n.sent_through = sent_through.get();
        return n;
    }
    void BindInto(soci::statement& st) {
        impl::IntoColumns(st, n.node_id, n.address, n.capacity, n.started_at_ms, n.last_heartbeat_ms, n.state,
                          sent_through);
    }
};

constexpr const char* kNodeColumns =
    "SELECT node_id, address, capacity, started_at_ms, last_heartbeat_ms, state, sent_through FROM trigger_node";

}  // namespace

Status ExecutorRepository::Heartbeat(const ExecutorInstance& instance) {
    return db_.Run([&](soci::session& s) {
        const std::string handlers = HandlersToJson(instance.handlers);
        const std::string now(db_.dialect().NowMs());
        const std::string sql =
            db_.dialect().Upsert("executor_instance",
                                 {{"app", ":app"},
                                  {"address", ":address"},
                                  {"handlers", ":handlers"},
                                  {"capacity", ":capacity"},
                                  {"running", ":running"},
                                  {"last_heartbeat_ms", now},
                                  {"registered_at_ms", now}},
                                 {"app", "address"}, {"handlers", "capacity", "running", "last_heartbeat_ms"});
        s << sql, soci::use(instance.app, "app"), soci::use(instance.address, "address"),
            soci::use(handlers, "handlers"), soci::use(instance.capacity, "capacity"),
            soci::use(instance.running, "running");
    });
}

Status ExecutorRepository::Deregister(const std::string& app, const std::string& address) {
    return db_.Run([&](soci::session& s) -> Status {
        soci::statement st = (s.prepare << "DELETE FROM executor_instance WHERE app = :app AND address = :address",
                              soci::use(app, "app"), soci::use(address, "address"));
        if (impl::ExecuteAffected(st) == 0) return NotFound("executor " + app + "@" + address + " is not registered");
        return Status::Ok();
    });
}

Result<std::vector<ExecutorInstance>> ExecutorRepository::List(const std::optional<std::string>& app) {
    return db_.Run([&](soci::session& s) {
        const std::string a = app.value_or("");
        return impl::SelectRows<ExecutorRow>(
            s, std::string(kExecutorColumns) + (app ? " WHERE app = :app" : "") + " ORDER BY app, address",
            [&](soci::statement& st) {
                if (app) st.exchange(soci::use(a, "app"));
            });
    });
}

Result<std::vector<ExecutorInstance>> ExecutorRepository::ListLive(const std::string& app, std::int64_t ttl_ms) {
    return db_.Run([&](soci::session& s) {
        return impl::SelectRows<ExecutorRow>(s,
                                             std::string(kExecutorColumns) +
                                                 " WHERE app = :app AND last_heartbeat_ms > " +
                                                 std::string(db_.dialect().NowMs()) + " - :ttl ORDER BY address",
                                             [&](soci::statement& st) {
                                                 st.exchange(soci::use(app, "app"));
                                                 st.exchange(soci::use(ttl_ms, "ttl"));
                                             });
    });
}

Result<std::vector<ExecutorInstance>> ExecutorRepository::ListAllLive(std::int64_t ttl_ms) {
    return db_.Run([&](soci::session& s) {
        return impl::SelectRows<ExecutorRow>(s,
                                             std::string(kExecutorColumns) + " WHERE last_heartbeat_ms > " +
                                                 std::string(db_.dialect().NowMs()) + " - :ttl ORDER BY app, address",
                                             [&](soci::statement& st) { st.exchange(soci::use(ttl_ms, "ttl")); });
    });
}

int ExecutorRepository::CountLive(soci::session& s, const db::Dialect& dialect, const std::string& app,
                                  std::int64_t ttl_ms) {
    int n = 0;
    s << "SELECT COUNT(*) FROM executor_instance WHERE app = :app AND last_heartbeat_ms > " +
             std::string(dialect.NowMs()) + " - :ttl",
        soci::use(app, "app"), soci::use(ttl_ms, "ttl"), soci::into(n);
    return n;
}

std::set<std::string> ExecutorRepository::LiveAddresses(soci::session& s, const db::Dialect& dialect,
                                                        std::int64_t ttl_ms) {
    std::set<std::string> out;
    soci::rowset<std::string> rows = (s.prepare << "SELECT address FROM executor_instance WHERE last_heartbeat_ms > " +
                                                       std::string(dialect.NowMs()) + " - :ttl",
                                      soci::use(ttl_ms, "ttl"));
    for (const auto& address : rows) out.insert(address);
    return out;
}

Status TriggerNodeRepository::Heartbeat(const TriggerNode& node) {
    return db_.Run([&](soci::session& s) {
        const std::string now(db_.dialect().NowMs());
        const std::string sql =
            db_.dialect().Upsert("trigger_node",
                                 {{"node_id", ":node_id"},
                                  {"address", ":address"},
                                  {"capacity", ":capacity"},
                                  {"started_at_ms", now},
                                  {"last_heartbeat_ms", now},
                                  {"state", ":state"}},
                                 {"node_id"}, {"address", "capacity", "last_heartbeat_ms", "state"});
        s << sql, soci::use(node.node_id, "node_id"), soci::use(node.address, "address"),
            soci::use(node.capacity, "capacity"), soci::use(node.state, "state");
    });
}

Status TriggerNodeRepository::SetState(const std::string& node_id, const std::string& state) {
    return db_.Run([&](soci::session& s) -> Status {
        soci::statement st = (s.prepare << "UPDATE trigger_node SET state = :state WHERE node_id = :id",
                              soci::use(state, "state"), soci::use(node_id, "id"));
        if (impl::ExecuteAffected(st) == 0) return NotFound("trigger node " + node_id + " not found");
        return Status::Ok();
    });
}

Result<std::vector<TriggerNode>> TriggerNodeRepository::List() {
    return db_.Run([&](soci::session& s) {
        return impl::SelectRows<NodeRow>(s, std::string(kNodeColumns) + " ORDER BY node_id", [](soci::statement&) {});
    });
}

Result<std::vector<TriggerNode>> TriggerNodeRepository::ListCompeting(std::int64_t ttl_ms) {
    return db_.Run([&](soci::session& s) { return ListCompeting(s, ttl_ms); });
}

std::vector<TriggerNode> TriggerNodeRepository::ListCompeting(soci::session& s, std::int64_t ttl_ms) {
    return impl::SelectRows<NodeRow>(s,
                                     std::string(kNodeColumns) +
                                         " WHERE state IN ('active', 'standby') AND last_heartbeat_ms > " +
                                         std::string(impl::SessionDialect(s).NowMs()) + " - :ttl ORDER BY node_id",
                                     [&](soci::statement& st) { st.exchange(soci::use(ttl_ms, "ttl")); });
}

Result<std::vector<TriggerNode>> TriggerNodeRepository::ListLive(std::int64_t ttl_ms) {
    return db_.Run([&](soci::session& s) {
        return impl::SelectRows<NodeRow>(s,
                                         std::string(kNodeColumns) +
                                             " WHERE state = 'active' AND last_heartbeat_ms > " +
                                             std::string(db_.dialect().NowMs()) + " - :ttl ORDER BY node_id",
                                         [&](soci::statement& st) { st.exchange(soci::use(ttl_ms, "ttl")); });
    });
}

}  // namespace sched::store
