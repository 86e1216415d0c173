#include "sched/trigger/node.hpp"

#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "impl/node_impl.hpp"
#include "sched/common/node_id.hpp"
#include "sched/db/open_database.hpp"

namespace sched::trigger {

using namespace std::chrono_literals;

TriggerNode::TriggerNode(NodeConfig config)
    : config_(std::move(config)),
      node_id_(config_.node_id.empty() ? MakeNodeId() : config_.node_id),
      db_pool_(static_cast<std::size_t>(config_.db_threads)),
      impl_(std::make_unique<Impl>()) {
    metrics_.AddProcessMetrics();
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
    return impl_->elector && impl_->elector->IsLeading();
}

Status TriggerNode::Start(const std::function<bool()>& should_stop) {
    auto db = db::OpenMigrated(config_.database, should_stop);
    if (!db.ok()) return db.status();
    db_ = *db;
    db_ok_ = true;

    // The election runs on its own small pool whose timeouts stay below the margin.
    auto election_db = db::Database::Open(lock::ElectionDbUrl(config_.database.url, config_.election));
    if (!election_db.ok()) return election_db.status();
    impl_->election_db = *election_db;
    impl_->lock_store = std::make_unique<lock::SqlLockStore>(impl_->election_db);
    impl_->elector = std::make_unique<lock::LeaseElector>(*impl_->lock_store, node_id_, config_.election);
    impl_->elector->AddObserver(*this);
    impl_->fence = std::make_unique<lock::Fence>(
        db_, config_.election.name, node_id_,
        lock::FenceOptions{.certify_by_write = config_.database.topology == db::Topology::kGalera});

    time_ = std::make_unique<DbTime>(SystemClock::Instance(), [this] { return db_->NowUs(); });
    if (Status s = time_->Refresh(); !s.ok()) spdlog::warn("first DB clock sample failed: {}", s.ToString());

    // Keep as many idle connections per executor as the slave may have calls open to it, so a
    // burst reuses them instead of connecting and closing (measured: most of the slave's CPU
    // per fire at 1,000 fires/s with the default 16).
    http::ClientOptions http_options;
    http_options.max_idle_per_host = std::max<std::size_t>(
        http_options.max_idle_per_host, static_cast<std::size_t>(config_.slave.max_calls_per_executor));
    impl_->http = std::make_unique<http::HttpClient>(io_.get_executor(), http_options);
    AddRoutes();
    impl_->server = std::make_unique<http::Server>(io_.get_executor(), config_.http, std::move(impl_->router),
                                                   http::BearerTokenAuth(config_.token));
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

    impl_->master = std::make_unique<Master>(db_, *impl_->fence, *time_, config_.scheduler, metrics_);
    impl_->purger = std::make_unique<HistoryPurger>(db_, *impl_->fence, *time_, config_.scheduler, metrics_);
    impl_->webhooks = std::make_unique<HttpWebhookSender>(
        io_.get_executor(), WebhookLimits{.timeout = config_.scheduler.alert_timeout,
                                          .connect_timeout = config_.scheduler.alert_connect_timeout,
                                          .first_byte_timeout = config_.scheduler.alert_first_byte_timeout,
                                          .body_limit = config_.scheduler.alert_body_limit,
                                          .addresses = config_.scheduler.alert_addresses});
    impl_->alerter =
        std::make_unique<Alerter>(db_, *impl_->fence, *time_, config_.scheduler, metrics_, *impl_->webhooks);
    if (config_.slave.enabled) {
        impl_->slave = std::make_unique<Slave>(io_.get_executor(), db_pool_, db_, *time_, *impl_->http, node_id_,
                                               config_.election.name, config_.slave, metrics_);
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
    impl_->heartbeat_thread = std::thread([this] { HeartbeatLoop(); });
    impl_->master_thread = std::thread([this] { MasterLoop(); });
    impl_->purge_thread = std::thread([this] { PurgeLoop(); });
    impl_->alert_thread = std::thread([this] { AlertLoop(); });
    impl_->gauges_thread = std::thread([this] { ClusterGaugesLoop(); });
    impl_->elector_thread = std::jthread([this](const std::stop_token& st) { impl_->elector->Run(st); });
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
    if (impl_->master_thread.joinable()) impl_->master_thread.join();
    if (impl_->purge_thread.joinable()) impl_->purge_thread.join();
    if (impl_->alert_thread.joinable()) impl_->alert_thread.join();
    if (impl_->gauges_thread.joinable()) impl_->gauges_thread.join();
    const bool was_leading = impl_->elector && impl_->elector->IsLeading();
    if (impl_->elector_thread.joinable()) {
        impl_->elector_thread.request_stop();
        impl_->elector_thread.join();  // Run() resigns: owner NULL, epoch + 1
    }
    if (was_leading) NudgePeers();
    if (impl_->heartbeat_thread.joinable()) impl_->heartbeat_thread.join();
    (void)store::TriggerNodeRepository(*db_).SetState(node_id_, "stopped");
    // 3. Finish in-flight HTTP requests, then close.
    auto shut = net::co_spawn(io_, impl_->server->Shutdown(), net::use_future);
    shut.wait_for(10s);
    impl_->http->CloseIdle();
    if (impl_->webhooks) impl_->webhooks->CloseIdle();
    impl_->work.reset();
    io_.stop();
    for (auto& t : impl_->io_threads) t.join();
    spdlog::info("trigger node {} stopped", node_id_);
}

void TriggerNode::NudgePeers() {
    // The lease is free now; the others would notice at their next tick (up to `tick` later).
    // Telling them makes a planned handover take one round trip instead (best effort: a peer
    // that misses it still ticks).
    auto live = store::TriggerNodeRepository(*db_).ListLive(
        std::chrono::duration_cast<std::chrono::milliseconds>(config_.scheduler.node_ttl).count());
    if (!live.ok()) return;
    std::vector<std::string> urls;
    for (const auto& n : *live) {
        if (n.node_id != node_id_) urls.push_back("http://" + n.address + "/internal/v1/election/nudge");
    }
    if (urls.empty()) return;
    auto sent = net::co_spawn(
        io_,
        [this, urls]() -> net::awaitable<void> {
            const nlohmann::json body = nlohmann::json::object();
            const http::CallOptions call{.timeout = std::chrono::milliseconds(500), .bearer_token = config_.token};
            for (const auto& url : urls) {
                auto r = co_await impl_->http->PostJson(url, body, call);
                if (!r.ok() || !r->ok()) spdlog::debug("election nudge to {} failed", url);
            }
        },
        net::use_future);
    sent.wait_for(2s);
    spdlog::info("node {} released the lease and told {} peers", node_id_, urls.size());
}

}  // namespace sched::trigger
