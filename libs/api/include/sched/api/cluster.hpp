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

    static constexpr auto Fields() {
        return std::tuple{Field("app", &ExecutorView::app),
                          Field("address", &ExecutorView::address),
                          Field("handlers", &ExecutorView::handlers),
                          Field("capacity", &ExecutorView::capacity),
                          Field("running", &ExecutorView::running),
                          Field("last_heartbeat_ms", &ExecutorView::last_heartbeat_ms),
                          Field("heartbeat_age_ms", &ExecutorView::heartbeat_age_ms),
                          Field("registered_at_ms", &ExecutorView::registered_at_ms),
                          Field("alive", &ExecutorView::alive)};
    }
};

/// Schema ExecutorApp: an app's instances, and the handlers its live ones serve.
struct ExecutorAppView {
    std::string app;
    std::int64_t instances = 0;
    std::int64_t alive_instances = 0;
    std::vector<std::string> handlers;

    static constexpr auto Fields() {
        return std::tuple{Field("app", &ExecutorAppView::app), Field("instances", &ExecutorAppView::instances),
                          Field("alive_instances", &ExecutorAppView::alive_instances),
                          Field("handlers", &ExecutorAppView::handlers)};
    }
};

/// Schema ExecutorList: GET /api/v1/executors.
struct ExecutorListView {
    std::vector<ExecutorAppView> apps;
    std::vector<ExecutorView> items;
    std::int64_t executor_ttl_ms = 0;
    std::int64_t now = 0;

    static constexpr auto Fields() {
        return std::tuple{Field("apps", &ExecutorListView::apps), Field("items", &ExecutorListView::items),
                          Field("executor_ttl_ms", &ExecutorListView::executor_ttl_ms),
                          Field("now", &ExecutorListView::now)};
    }
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

    static constexpr auto Fields() {
        return std::tuple{Field("node_id", &ClusterNodeView::node_id),
                          Field("address", &ClusterNodeView::address),
                          Field("state", &ClusterNodeView::state),
                          Field("capacity", &ClusterNodeView::capacity),
                          Field("started_at_ms", &ClusterNodeView::started_at_ms),
                          Field("last_heartbeat_ms", &ClusterNodeView::last_heartbeat_ms),
                          Field("heartbeat_age_ms", &ClusterNodeView::heartbeat_age_ms),
                          Field("alive", &ClusterNodeView::alive),
                          Field("leader", &ClusterNodeView::leader),
                          Field("shards_led", &ClusterNodeView::shards_led)};
    }
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

    static constexpr auto Fields() {
        return std::tuple{Field("shard", &ClusterShardView::shard),
                          Field("lease", &ClusterShardView::lease),
                          Field("leader", &ClusterShardView::leader),
                          Field("epoch", &ClusterShardView::epoch),
                          Field("held_since", &ClusterShardView::held_since),
                          Field("lease_remaining_ms", &ClusterShardView::lease_remaining_ms)};
    }
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

    static constexpr auto Fields() {
        return std::tuple{Field("leader", &ClusterView::leader),
                          Field("epoch", &ClusterView::epoch),
                          Field("lease_age_ms", &ClusterView::lease_age_ms),
                          Field("lease_remaining_ms", &ClusterView::lease_remaining_ms),
                          Field("node_ttl_ms", &ClusterView::node_ttl_ms),
                          Field("now", &ClusterView::now),
                          Field("nodes", &ClusterView::nodes),
                          Field("shard_count", &ClusterView::shard_count),
                          Field("shards", &ClusterView::shards)};
    }
};

}  // namespace sched::api
