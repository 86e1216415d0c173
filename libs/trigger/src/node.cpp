#include "sched/trigger/node.hpp"

#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "impl/node_impl.hpp"
#include "sched/common/node_id.hpp"
#include "sched/db/open_database.hpp"
#include "sched/protocol/fire_spans.hpp"
#include "sched/store/shard.hpp"

namespace sched::trigger {

using namespace std::chrono_literals;

TriggerNode::TriggerNode(NodeConfig config)
    : config_(std::move(config)),
      node_id_(config_.node_id.empty() ? MakeNodeId() : config_.node_id),
      db_pool_(static_cast<std::size_t>(config_.db_threads)),
      impl_(std::make_unique<Impl>()) {
    metrics_.AddProcessMetrics();
    impl_->master_wakes = &metrics_
                               .Counter("sched_master_wakes_total",
                                        "Wakes of this node's masters: a write elsewhere left them work "
                                        "(POST /internal/v1/master/wake, or a write in this process).")
                               .Labels({});
}

TriggerNode::~TriggerNode() {
    Stop();
    db_pool_.join();
}

http::Router& TriggerNode::router() {
    return impl_->router;
}

std::uint16_t TriggerNode::port() const {
    return impl_->server ? impl_->server->port() : 0;
}

bool TriggerNode::IsLeading() const {
    return impl_->leases && impl_->leases->elector(0).IsLeading();
}

int TriggerNode::ShardsLed() const {
    return impl_->leases ? impl_->leases->Led() : 0;
}

Status TriggerNode::CheckShardCount() {
    const int shards = config_.scheduler.shards;
    const std::int64_t ttl_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(config_.scheduler.node_ttl).count();
    // One transaction: two nodes starting together with different counts cannot both record theirs.
    return db_->InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Status {
        const auto recorded = store::ReadShardCount(s);
        if (recorded == shards) return Status::Ok();
        const std::int64_t now_ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
                .count();
        if (recorded) {
            std::vector<std::string> others;
            for (const auto& n : store::TriggerNodeRepository::ListCompeting(s, ttl_ms)) {
                if (n.node_id != node_id_) others.push_back(n.node_id);
            }
            if (!others.empty()) {
                return FailedPrecondition(
                    "scheduler.shards: " + std::to_string(shards) + ", but the cluster plans in " +
                    std::to_string(*recorded) + " shards and " + std::to_string(others.size()) +
                    " other node(s) are live (" + others.front() + (others.size() > 1 ? ", ..." : "") +
                    "); every node of a cluster uses the same count: set scheduler.shards: " +
                    std::to_string(*recorded) + ", or stop every trigger node and start them all with " +
                    std::to_string(shards));
            }
            spdlog::warn("the cluster's shard count changes from {} to {}: no other trigger node is live", *recorded,
                         shards);
        }
        store::WriteShardCount(s, shards, now_ms);
        return Status::Ok();
    });
}

Status TriggerNode::Start(const std::function<bool()>& should_stop) {
    // The port first: a busy one fails before the migrations touch the database. The routes
    // reach the node's parts lazily, and nothing is accepted before server->Start() below.
    AddRoutes();
    impl_->server = std::make_unique<http::Server>(io_.get_executor(), config_.http, std::move(impl_->router),
                                                   http::BearerTokenAuth(config_.token));
    impl_->server->TimeRoutes(metrics_, "sched_http");
    try {
        impl_->server->Listen();
    } catch (const std::exception& e) {
        return Unavailable(e.what());
    }
    if (Status tls = http::CheckClientTls(config_.http_client_tls); !tls.ok()) return tls;
    auto db = db::OpenMigrated(config_.database, should_stop);
    if (!db.ok()) return db.status();
    db_ = *db;
    db_ok_ = true;
    if (Status s = CheckShardCount(); !s.ok()) return s;

    // The election runs on its own small pool whose timeouts stay below the margin.
    db::DbUrl election_url = lock::ElectionDbUrl(config_.database.url, config_.election);
    // A session per shard's elector (up to 16): electors started together tick together, and a
    // round that waits for a session spends its margin.
    election_url.pool = std::max(election_url.pool, std::min(config_.scheduler.shards + 1, 16));
    auto election_db = db::Database::Open(election_url);
    if (!election_db.ok()) return election_db.status();
    impl_->election_db = *election_db;
    impl_->lock_store = std::make_unique<lock::SqlLockStore>(impl_->election_db);
    const int shards = config_.scheduler.shards;
    ShardObserver& observer = *this;
    impl_->leases = std::make_unique<ShardLeases>(*impl_->lock_store, node_id_, config_.election, shards, observer);
    shard_epochs_.assign(static_cast<std::size_t>(shards), std::nullopt);
    master_wakes_.assign(static_cast<std::size_t>(shards), 0);
    impl_->leaders.assign(static_cast<std::size_t>(shards), std::nullopt);
    for (int i = 0; i < shards; ++i) {
        impl_->fences.push_back(std::make_unique<lock::Fence>(
            db_, impl_->leases->lease_name(i), node_id_,
            lock::FenceOptions{.certify_by_write = config_.database.topology == db::Topology::kGalera}));
    }

    time_ = std::make_unique<DbTime>(SystemClock::Instance(), [this] { return db_->NowUs(); });
    if (Status s = time_->Refresh(); !s.ok()) spdlog::warn("first DB clock sample failed: {}", s.ToString());

    // Keep as many idle connections per executor as the slave may have calls open to it, so a
    // burst reuses them instead of connecting and closing (measured: most of the slave's CPU
    // per fire at 1,000 fires/s with the default 16).
    http::ClientOptions http_options;
    http_options.tls = config_.http_client_tls;
    http_options.max_idle_per_host = std::max<std::size_t>(
        http_options.max_idle_per_host, static_cast<std::size_t>(config_.slave.max_calls_per_executor));
    impl_->http = std::make_unique<http::HttpClient>(io_.get_executor(), http_options);
    impl_->waker = std::make_unique<dispatch::MasterWaker>(
        io_.get_executor(), *impl_->http, [this] { return db_; }, db_pool_,
        dispatch::MasterWakerOptions{.token = config_.token,
                                     .self_node_id = node_id_,
                                     .wake_self = [this] { return WakeLocalMasters(); },
                                     .lease_name = config_.election.name});
    impl_->run_ends = std::make_unique<dispatch::RunEndsForwarder>(
        io_.get_executor(), *impl_->http,
        [this]() -> Result<std::vector<dispatch::Peer>> {
            auto live = store::TriggerNodeRepository(*db_).ListLive(
                std::chrono::duration_cast<std::chrono::milliseconds>(config_.scheduler.node_ttl).count());
            if (!live.ok()) return live.status();
            std::vector<dispatch::Peer> peers;
            for (auto& n : *live) peers.push_back({.node_id = std::move(n.node_id), .address = std::move(n.address)});
            return peers;
        },
        db_pool_, dispatch::RunEndsForwarderOptions{.token = config_.token, .self_node_id = node_id_});
    if (config_.telemetry.enabled()) {
        impl_->spans =
            std::make_shared<protocol::SpanExporter>(io_.get_executor(), config_.telemetry, config_.http_client_tls);
        impl_->spans->Start();
        protocol::FireTracer::Install(impl_->spans, node_id_);
    }
    try {
        impl_->server->Start();
    } catch (const std::exception& e) {
        return Unavailable(e.what());
    }
    ExportNodeMetrics();
    const auto bound = impl_->server->local_endpoint();
    // Bound to a wildcard address, a node is reached at its host name (a container's name).
    advertised_ =
        config_.advertised_address.empty()
            ? http::HostPort{bound.address().to_string(), bound.port()}.Reachable(http::LocalHostname()).ToString()
            : config_.advertised_address;

    for (int i = 0; i < shards; ++i) {
        impl_->masters.push_back(std::make_unique<Master>(db_, *impl_->fences[static_cast<std::size_t>(i)], *time_,
                                                          config_.scheduler, metrics_,
                                                          store::JobShard{.index = i, .total = shards}));
    }
    impl_->purger = std::make_unique<HistoryPurger>(db_, *impl_->fences[0], *time_, config_.scheduler, metrics_);
    impl_->webhooks = std::make_unique<HttpWebhookSender>(
        io_.get_executor(), WebhookLimits{.timeout = config_.scheduler.alert_timeout,
                                          .connect_timeout = config_.scheduler.alert_connect_timeout,
                                          .first_byte_timeout = config_.scheduler.alert_first_byte_timeout,
                                          .body_limit = config_.scheduler.alert_body_limit,
                                          .addresses = config_.scheduler.alert_addresses,
                                          .tls = config_.http_client_tls});
    impl_->alerter =
        std::make_unique<Alerter>(db_, *impl_->fences[0], *time_, config_.scheduler, metrics_, *impl_->webhooks);
    if (config_.slave.enabled) {
        impl_->slave = std::make_unique<Slave>(io_.get_executor(), db_pool_, db_, *time_, *impl_->http, node_id_,
                                               config_.election.name, config_.slave, metrics_);
        impl_->slave->SetWakeMasters([this] { WakeMasters(); });
    }
    impl_->work.emplace(io_.get_executor());
    for (int i = 0; i < config_.io_threads; ++i) impl_->io_threads.emplace_back([this] { io_.run(); });

    // Register before competing: a leader must find at least itself among the live slaves.
    store::TriggerNodeRepository nodes(*db_);
    (void)nodes.Heartbeat({.node_id = node_id_,
                           .address = advertised_,
                           .capacity = config_.slave.enabled ? config_.slave.capacity : 0,
                           .state = config_.slave.enabled ? "active" : "standby"});
    if (impl_->slave) impl_->slave->Start();
    // The balancer knows the other nodes before its first round; the count was checked above.
    WatchShards(/*read_count=*/false);
    impl_->heartbeat_thread = std::thread([this] { HeartbeatLoop(); });
    for (int i = 0; i < shards; ++i) impl_->master_threads.emplace_back([this, i] { MasterLoop(i); });
    impl_->purge_thread = std::thread([this] { PurgeLoop(); });
    impl_->alert_thread = std::thread([this] { AlertLoop(); });
    impl_->gauges_thread = std::thread([this] { ClusterGaugesLoop(); });
    impl_->leases->Start();
    started_at_ = std::chrono::steady_clock::now();
    started_ = true;
    spdlog::info("trigger node {} serving on {} (slave {})", node_id_, advertised_,
                 config_.slave.enabled ? "enabled" : "disabled");
    return Status::Ok();
}

void TriggerNode::Stop() {
    if (stopping_.exchange(true)) return;
    cv_.notify_all();
    if (!started_) {
        io_.stop();
        for (auto& t : impl_->io_threads) t.join();
        return;
    }
    spdlog::info("trigger node {} stopping", node_id_);
    // 1. Take no more fires; give the unclaimed ones back.
    if (impl_->slave) {
        auto done = net::co_spawn(io_, impl_->slave->Stop(), net::use_future);
        done.wait();
    }
    // 2. Master work ends before the lease is released, so no scan can straddle the handover.
    for (auto& t : impl_->master_threads) {
        if (t.joinable()) t.join();
    }
    if (impl_->purge_thread.joinable()) impl_->purge_thread.join();
    if (impl_->alert_thread.joinable()) impl_->alert_thread.join();
    if (impl_->gauges_thread.joinable()) impl_->gauges_thread.join();
    const bool was_leading = impl_->leases && impl_->leases->Led() > 0;
    if (impl_->leases) impl_->leases->Stop();  // each elector resigns: owner NULL, epoch + 1
    if (was_leading) NudgePeers();
    if (impl_->heartbeat_thread.joinable()) impl_->heartbeat_thread.join();
    (void)store::TriggerNodeRepository(*db_).SetState(node_id_, "stopped");
    // 3. The last spans leave while the I/O threads still run.
    if (impl_->spans) {
        protocol::FireTracer::Uninstall();
        impl_->spans->Stop();
    }
    // 4. Finish in-flight HTTP requests, then close.
    auto shut = net::co_spawn(io_, impl_->server->Shutdown(), net::use_future);
    shut.wait_for(10s);
    impl_->http->CloseIdle();
    if (impl_->webhooks) impl_->webhooks->CloseIdle();
    impl_->work.reset();
    io_.stop();
    for (auto& t : impl_->io_threads) t.join();
    spdlog::info("trigger node {} stopped", node_id_);
}

void TriggerNode::NudgePeers(bool wait) {
    // The lease is free now; the others would notice at their next tick (up to `tick` later).
    // Telling them makes a planned handover take one round trip instead (best effort: a peer
    // that misses it still ticks).
    auto live = store::TriggerNodeRepository(*db_).ListLive(
        std::chrono::duration_cast<std::chrono::milliseconds>(config_.scheduler.node_ttl).count());
    if (!live.ok()) return;
    std::vector<std::string> urls;
    for (const auto& n : *live) {
        if (n.node_id != node_id_) urls.push_back(impl_->http->PeerUrl(n.address, "/internal/v1/election/nudge"));
    }
    if (urls.empty()) return;
    auto send = [this, urls]() -> net::awaitable<void> {
        const nlohmann::json body = nlohmann::json::object();
        const http::CallOptions call{.timeout = std::chrono::milliseconds(500), .bearer_token = config_.token};
        for (const auto& url : urls) {
            auto r = co_await impl_->http->PostJson(url, body, call);
            if (!r.ok() || !r->ok()) spdlog::debug("election nudge to {} failed", url);
        }
    };
    if (!wait) {
        net::co_spawn(io_, send, net::detached);
        return;
    }
    auto sent = net::co_spawn(io_, send, net::use_future);
    sent.wait_for(2s);
    spdlog::info("node {} released the lease and told {} peers", node_id_, urls.size());
}

}  // namespace sched::trigger
