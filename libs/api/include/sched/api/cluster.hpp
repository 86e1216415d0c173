#pragma once

/// The executors and the trigger cluster as the API answers them (schemas ExecutorList,
/// Executor, ExecutorApp and Cluster). Liveness is judged by the database clock (`now`).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sched/api/view.hpp"

namespace sched::api {

/// Schema Executor: one registered executor instance.
struct ExecutorView {
    std::string app;
    std::string address;
    std::vector<std::string> handlers;
    std::int64_t capacity = 0;
    std::int64_t running = 0;
    std::int64_t last_heartbeat_ms = 0;
    std::int64_t heartbeat_age_ms = 0;
    std::int64_t registered_at_ms = 0;
    bool alive = false;

    SCHED_API_FIELDS(ExecutorView, app, address, handlers, capacity, running, last_heartbeat_ms, heartbeat_age_ms,
                     registered_at_ms, alive)
};

/// Schema ExecutorApp: an app's instances, and the handlers its live ones serve.
struct ExecutorAppView {
    std::string app;
    std::int64_t instances = 0;
    std::int64_t alive_instances = 0;
    std::vector<std::string> handlers;

    SCHED_API_FIELDS(ExecutorAppView, app, instances, alive_instances, handlers)
};

/// Schema ExecutorList: GET /api/v1/executors.
struct ExecutorListView {
    std::vector<ExecutorAppView> apps;
    std::vector<ExecutorView> items;
    std::int64_t executor_ttl_ms = 0;
    std::int64_t now = 0;

    SCHED_API_FIELDS(ExecutorListView, apps, items, executor_ttl_ms, now)
};

/// One trigger node of the cluster.
struct ClusterNodeView {
    std::string node_id;
    std::string address;
    std::string state;
    std::int64_t capacity = 0;
    std::int64_t started_at_ms = 0;
    std::int64_t last_heartbeat_ms = 0;
    std::int64_t heartbeat_age_ms = 0;
    bool alive = false;
    bool leader = false;                   ///< leads shard 0 (the cluster-wide duties)
    std::vector<std::int64_t> shards_led;  ///< the shards whose unexpired lease it holds, ascending

    SCHED_API_FIELDS(ClusterNodeView, node_id, address, state, capacity, started_at_ms, last_heartbeat_ms,
                     heartbeat_age_ms, alive, leader, shards_led)
};

/// One shard of the job space (store/shard.hpp) and its lease row. Times are the database's.
struct ClusterShardView {
    std::int64_t shard = 0;
    std::string lease;                  ///< the lease row's name (`master`, `master/1`, ...)
    std::optional<std::string> leader;  ///< the holder of an unexpired lease; null when free
    std::int64_t epoch = 0;             ///< the shard's fencing epoch; 0 before its row exists
    /// Since when the leader holds the lease (epoch ms); null when free, or when the holding
    /// began before the lease row recorded it.
    std::optional<std::int64_t> held_since;
    std::optional<std::int64_t> lease_remaining_ms;  ///< null when free

    SCHED_API_FIELDS(ClusterShardView, shard, lease, leader, epoch, held_since, lease_remaining_ms)
};

/// Schema Cluster: GET /api/v1/cluster, the master lease and the trigger nodes. leader, epoch and
/// the lease times are shard 0's (the one lease of an unsharded cluster); `shards` has every
/// shard, 0 to shard_count - 1.
struct ClusterView {
    std::optional<std::string> leader;  ///< the holder of an unexpired lease
    std::int64_t epoch = 0;
    std::optional<std::int64_t> lease_age_ms;
    std::optional<std::int64_t> lease_remaining_ms;
    std::int64_t node_ttl_ms = 0;
    std::int64_t now = 0;
    std::vector<ClusterNodeView> nodes;
    /// The cluster's shard count (cluster_setting; 1 before any trigger node recorded one).
    std::int64_t shard_count = 1;
    std::vector<ClusterShardView> shards;

    SCHED_API_FIELDS(ClusterView, leader, epoch, lease_age_ms, lease_remaining_ms, node_ttl_ms, now, nodes, shard_count,
                     shards)
};

}  // namespace sched::api
