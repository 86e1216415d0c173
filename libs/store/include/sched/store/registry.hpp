#pragma once

/// Cluster membership: executor instances (business services registered through the client
/// SDK, table `executor_instance`) and trigger nodes (table `trigger_node`). Both are kept alive
/// by heartbeats stamped with the database clock, so liveness does not depend on any node's
/// own clock.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sched/common/status.hpp"
#include "sched/db/database.hpp"

namespace sched::store {

struct ExecutorInstance {
    std::string app;
    std::string address;  ///< where the SDK serves /v1/run, "host:port"
    std::vector<std::string> handlers;
    int capacity = 0;
    int running = 0;
    std::int64_t last_heartbeat_ms = 0;
    std::int64_t registered_at_ms = 0;
};

class ExecutorRepository {
  public:
    explicit ExecutorRepository(db::Database& db) : db_(db) {}

    /// Registers or refreshes an instance: handlers, capacity and running are replaced,
    /// last_heartbeat becomes the DB clock, registered_at is kept from the first heartbeat.
    Status Heartbeat(const ExecutorInstance& instance);
    /// kNotFound when the instance is not registered.
    Status Deregister(const std::string& app, const std::string& address);
    /// All instances (of one app when given), ordered by app and address.
    Result<std::vector<ExecutorInstance>> List(const std::optional<std::string>& app = std::nullopt);
    /// Instances whose last heartbeat is younger than `ttl_ms` by the DB clock.
    Result<std::vector<ExecutorInstance>> ListLive(const std::string& app, std::int64_t ttl_ms);
    /// Every app's live instances in one query (the slaves' registry cache), ordered by app and address.
    Result<std::vector<ExecutorInstance>> ListAllLive(std::int64_t ttl_ms);
    /// The same set counted, inside the caller's transaction.
    static int CountLive(soci::session& s, const db::Dialect& dialect, const std::string& app, std::int64_t ttl_ms);
    /// The addresses of every instance (any app) with a heartbeat within `ttl_ms` (database
    /// clock), inside the caller's transaction.
    static std::set<std::string> LiveAddresses(soci::session& s, const db::Dialect& dialect, std::int64_t ttl_ms);

  private:
    db::Database& db_;
};

struct TriggerNode {
    std::string node_id;
    std::string address;  ///< admin/internal HTTP address, "host:port"
    int capacity = 0;
    std::int64_t started_at_ms = 0;
    std::int64_t last_heartbeat_ms = 0;
    std::string state = "active";  ///< active | draining | stopped
    /// The due time up to which the node may have sent fires planned already claimed for it
    /// (store::FireClaims "Planned fires"); nullopt: a node that takes only `pending` fires.
    std::optional<std::int64_t> sent_through;
};

class TriggerNodeRepository {
  public:
    explicit TriggerNodeRepository(db::Database& db) : db_(db) {}

    /// Registers or refreshes a node (started_at kept from the first heartbeat).
    Status Heartbeat(const TriggerNode& node);
    Status SetState(const std::string& node_id, const std::string& state);
    Result<std::vector<TriggerNode>> List();
    /// Active nodes whose last heartbeat is younger than `ttl_ms` by the DB clock.
    Result<std::vector<TriggerNode>> ListLive(std::int64_t ttl_ms);
    /// Nodes that compete for the master's leases (state active or standby: not stopped or
    /// draining) whose last heartbeat is younger than `ttl_ms` by the DB clock.
    Result<std::vector<TriggerNode>> ListCompeting(std::int64_t ttl_ms);
    static std::vector<TriggerNode> ListCompeting(soci::session& s, std::int64_t ttl_ms);

  private:
    db::Database& db_;
};

}  // namespace sched::store
