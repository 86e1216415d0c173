#pragma once

/// TriggerNode's parts, shared by the files it is split over: node.cpp (lifecycle),
/// node_config.cpp (YAML), node_loops.cpp (leader callbacks and the background loops),
/// node_admin.cpp (the status, readiness and metrics it serves; its routes are impl::NodeAdmin,
/// impl/node_admin.hpp). Internal.

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "impl/node_admin.hpp"
#include "sched/dispatch/master_waker.hpp"
#include "sched/dispatch/run_ends_forwarder.hpp"
#include "sched/http/client.hpp"
#include "sched/http/router.hpp"
#include "sched/http/server.hpp"
#include "sched/http/url.hpp"
#include "sched/lock/fenced.hpp"
#include "sched/lock/sql_lock_store.hpp"
#include "sched/protocol/span_exporter.hpp"
#include "sched/store/registry.hpp"
#include "sched/trigger/node.hpp"
#include "sched/trigger/webhook_sender.hpp"

namespace sched::trigger {

struct TriggerNode::Impl {
    std::unique_ptr<impl::NodeAdmin> admin;  // before router: the routes call into it
    http::Router router;
    std::unique_ptr<http::Server> server;
    std::unique_ptr<http::HttpClient> http;
    std::unique_ptr<dispatch::MasterWaker> waker;          // after http: its rounds use it
    std::unique_ptr<dispatch::RunEndsForwarder> run_ends;  // after http: its rounds use it
    std::shared_ptr<protocol::SpanExporter> spans;         // telemetry on; kept to the end for /metrics
    std::shared_ptr<db::Database> election_db;
    std::unique_ptr<lock::SqlLockStore> lock_store;
    std::unique_ptr<ShardLeases> leases;
    std::vector<std::unique_ptr<lock::Fence>> fences;  // per shard; [0] also fences purge and alerts
    std::vector<std::unique_ptr<Master>> masters;      // per shard
    std::unique_ptr<HistoryPurger> purger;
    std::unique_ptr<HttpWebhookSender> webhooks;
    std::unique_ptr<Alerter> alerter;
    std::unique_ptr<Slave> slave;
    std::vector<std::thread> io_threads;
    std::vector<std::thread> master_threads;  // per shard
    std::thread purge_thread;
    std::thread alert_thread;
    std::thread gauges_thread;
    std::mutex gauges_mu;
    std::optional<store::ClusterGauges> gauges;  // the last read while leading; reset on losing the lease
    std::thread heartbeat_thread;
    std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
    std::mutex leader_mu;
    std::vector<std::optional<std::pair<std::string, std::int64_t>>> leaders;  // per shard, seen holder
    CounterChild* master_wakes = nullptr;                                      // in TriggerNode::metrics_
};

}  // namespace sched::trigger
