#pragma once

/// A trigger node (apps/scheduler-trigger; also inside scheduler-standalone): joins the cluster
/// with heartbeats, competes for the master lease, runs the master's scans while it leads, runs
/// a slave, and serves its admin/internal HTTP port.
///
/// YAML (config/trigger.yaml documents every key):
///   node-id, advertised-address, token, heartbeat-interval, clock-refresh, io-threads,
///   db-threads, executor-api, http: {ServerOptions, tls: {...}}, http-client: {tls: {ClientTlsOptions}},
///   database: {DatabaseConfig},
///   election: {tick, ttl, margin}, scheduler: {MasterConfig}, slave: {SlaveConfig}, log: {...}
/// The environment overrides two keys: SCHED_TOKEN (token) and SCHED_ADVERTISED_ADDRESS
/// (advertised-address, validated the same way; e.g. a pod's IP and port in Kubernetes).
///
/// HTTP (port `http.listen`): GET /healthz, /readyz, /metrics, /status (public, no secrets);
/// POST /internal/v1/fires {epoch, fire_ids, due_at, shard} (a master's notification; bearer token),
/// POST /internal/v1/runs/ended {fire_ids} (another node applied their results; bearer token),
/// POST /internal/v1/master/wake and POST /internal/v1/election/nudge (empty body or `{}`);
/// plus whatever the app adds to
/// router() before Start (apps/scheduler-trigger: with executor-api, default true, the SDK's
/// registry, callback and lock routes, web::AddExecutorRoutes). Internal bodies are strict: unknown
/// fields and wrong types are 400 naming the field.
///
/// /readyz is 200 `ready` only while the node runs, its database answers (last heartbeat
/// succeeded), its shard count is the cluster's, and every shard has been led by some node
/// within the last election ttl + tick (this node's electors' view: its own term, or the lease
/// row's last write by the database clock; LeaseElector::LastLeaderActivity). Otherwise 503
/// `not ready: <why>`. A newly started node counts from its start.
///
/// Shards (scheduler.shards: K, ShardLeases): the node competes for K leases (`master`,
/// `master/1`, ...), spread over the live nodes by ShardBalancer, and runs one Master per shard
/// it leads; shard 0's leader also purges history, evaluates alerts and reads the cluster
/// gauges. At start-up the node records K in cluster_setting, or refuses a K that differs from
/// the recorded one while another node is live; a node whose K differs later (the cluster was
/// re-sharded while it was paused) gives up its shards and turns not ready.
///
/// Stop(): stops taking fires and hands unclaimed ones back, stops master work, releases the
/// lease (a planned restart fails over within one tick), marks the node stopped, then closes
/// the HTTP server gracefully.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "sched/common/config.hpp"
#include "sched/common/logging.hpp"
#include "sched/common/metrics.hpp"
#include "sched/common/net.hpp"
#include "sched/db/database_config.hpp"
#include "sched/http/router.hpp"
#include "sched/http/server_options.hpp"
#include "sched/http/tls_options.hpp"
#include "sched/lock/lease_elector.hpp"
#include "sched/protocol/span_exporter_options.hpp"
#include "sched/trigger/alerter.hpp"
#include "sched/trigger/history_purger.hpp"
#include "sched/trigger/master.hpp"
#include "sched/trigger/shard_leases.hpp"
#include "sched/trigger/slave.hpp"

namespace sched::trigger {

struct NodeConfig {
    std::string node_id;             ///< "" = host-pid-random
    std::string advertised_address;  ///< host:port other nodes use; "" = the bound listen address
                                     ///< (bound to 0.0.0.0 or ::, the host name with the port)
    std::string token;               ///< cluster token (SCHED_TOKEN overrides); required
    Micros heartbeat_interval = std::chrono::seconds(1);
    Micros clock_refresh = std::chrono::seconds(5);
    int io_threads = 2;
    int db_threads = 4;
    /// `executor-api`: whether the app serves the SDK's routes (registry, callback, locks) on
    /// this node's port. The node itself does not know them: the app adds them to router()
    /// (web::AddExecutorRoutes), so the trigger library does not depend on the web module.
    bool executor_api = true;
    http::ServerOptions http;
    /// `http-client.tls`: every call this node makes (executors, other nodes, alert webhooks).
    http::ClientTlsOptions http_client_tls;
    db::DatabaseConfig database;
    lock::ElectionConfig election;
    MasterConfig scheduler;
    SlaveConfig slave;
    LogConfig log;
    /// `telemetry`: the fires' spans over OTLP (sched/protocol/span_exporter.hpp); off unless
    /// `telemetry.otlp-endpoint` is set. service-name defaults to the app's name.
    protocol::SpanExporterOptions telemetry;

    /// Defaults that differ between the apps that embed a node.
    struct Defaults {
        std::string db_url = "sqlite://data/scheduler.db";
        std::string listen = "127.0.0.1:7070";
        bool require_token = true;  ///< false: an empty token is allowed (the caller generates one)
        std::string service_name = "scheduler-trigger";  ///< telemetry.service-name
    };
    /// Reads the node's keys. With `reject_unknown` (the default) the whole document is checked;
    /// an app that adds keys of its own reads them first, or passes false and checks itself.
    /// Throws ConfigError naming the key.
    static NodeConfig FromYaml(const ConfigNode& root, const Defaults& defaults, bool reject_unknown = true);
};

class TriggerNode final : private ShardObserver {
  public:
    explicit TriggerNode(NodeConfig config);
    ~TriggerNode() override;
    TriggerNode(const TriggerNode&) = delete;
    TriggerNode& operator=(const TriggerNode&) = delete;

    /// Opens the database (retrying for database.connect-retry-for), migrates, binds the HTTP
    /// port and starts every loop. `should_stop` aborts the database wait. Errors are values.
    Status Start(const std::function<bool()>& should_stop = {});
    /// Graceful stop (see above). Idempotent; blocks until done.
    void Stop();

    std::uint16_t port() const;
    const std::string& node_id() const { return node_id_; }
    /// Whether this node leads shard 0 (the `master` lease, which carries the cluster-wide duties).
    bool IsLeading() const;
    /// How many shards this node leads now.
    int ShardsLed() const;
    /// Tells the masters that work waits for them (a write of the web module in this process, a
    /// result applied here that leaves a follow-up): this node's own masters probe at once, and
    /// every other shard's leader is sent POST /internal/v1/master/wake. Returns at once; best
    /// effort (a lost wake waits for the master's probe-interval).
    void WakeMasters();
    /// Results for these fires were applied in this process (the executor API's callback): this
    /// node's slave writes no `running` record for them (Slave::ResultsApplied), and the other
    /// live nodes are told (POST /internal/v1/runs/ended, dispatch::RunEndsForwarder), so that
    /// the one that dispatched a fire does not either. Returns at once; best effort.
    void ResultsApplied(const std::vector<std::int64_t>& fire_ids);
    MetricsRegistry& metrics() { return metrics_; }
    /// Extra routes (e.g. the web module in the standalone app) must be added before Start().
    http::Router& router();
    std::shared_ptr<db::Database> database() const { return db_; }
    net::thread_pool& db_pool() { return db_pool_; }
    const DbTime* time() const { return time_.get(); }

  private:
    void OnShardLeading(int shard, std::int64_t epoch) override;
    void OnShardStopped(int shard, const lock::LeadershipEnd& end) override;
    void OnShardLeader(int shard, const std::string& node, std::int64_t epoch) override;

    /// Records the cluster's shard count, or refuses a count that differs from it while other
    /// nodes are live (the message says what to do).
    Status CheckShardCount();
    /// While this node leads `shard`: its master's scans.
    void MasterLoop(int shard);
    /// After `interval` (or once stopping): the epoch of shard 0 while this node leads it, else
    /// nullopt. The master's periodic rounds (purge, alerts, gauges) run in that epoch.
    std::optional<std::int64_t> LeadingEpochAfter(Micros interval);
    /// While this node leads: a HistoryPurger round every scheduler.purge-interval, on its own
    /// thread so a backlog's batches never delay a scan.
    void PurgeLoop();
    /// While this node leads: an Alerter round every scheduler.alert-interval, on its own thread
    /// (a slow webhook never delays a scan or a purge).
    void AlertLoop();
    /// While this node leads: reads the cluster gauges (store::ReadClusterGauges) every 5 s on
    /// its own thread, for /metrics; not leading, they are cleared.
    void ClusterGaugesLoop();
    void HeartbeatLoop();
    /// Each heartbeat: the balancer's participants, and with `read_count` (ShardCountWatch)
    /// whether this node's shard count is still the cluster's; false when that read failed.
    bool WatchShards(bool read_count);
    void Notify(const ScanReport& report, std::int64_t epoch, int shard);
    /// Ends the sleep of this node's masters (the shards it leads); returns how many.
    int WakeLocalMasters();
    /// After a planned release: tells the other live nodes to compete now (best effort); with
    /// `wait`, for at most 2 s (a stopping node), else in the background (a yielded shard).
    void NudgePeers(bool wait = true);
    std::string StatusJson() const;
    /// "" when ready; otherwise why not (the /readyz body).
    std::string NotReadyReason() const;
    std::string Metrics() const;
    /// Registers the lease, DB clock and HTTP server series (read at render time) in metrics_.
    void ExportNodeMetrics();
    void AddRoutes();

    struct Impl;
    NodeConfig config_;
    std::string node_id_;
    MetricsRegistry metrics_;
    net::io_context io_;
    net::thread_pool db_pool_;
    std::shared_ptr<db::Database> db_;
    std::unique_ptr<DbTime> time_;
    std::unique_ptr<Impl> impl_;

    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<std::optional<std::int64_t>> shard_epochs_;  // per shard, under mu_
    std::vector<char> master_wakes_;  // per shard, under mu_: a wake its MasterLoop has not seen yet
    // Why this node takes no shard now ("" while it competes): its shard count differs from the
    // cluster's (HeartbeatLoop).
    std::string shards_refused_;  // under serving_mu_
    std::atomic<bool> stopping_{false};
    std::atomic<bool> started_{false};
    std::atomic<bool> db_ok_{false};
    // Galera: why the node's database node cannot serve now ("" while it can); HeartbeatLoop.
    mutable std::mutex serving_mu_;
    std::string db_not_serving_;
    std::chrono::steady_clock::time_point started_at_{};  // written before started_ is set
    std::string advertised_;
};

}  // namespace sched::trigger
