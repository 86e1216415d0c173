#include "sched/trigger/node.hpp"

#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "sched/common/node_id.hpp"
#include "sched/db/migrator.hpp"
#include "sched/http/client.hpp"
#include "sched/http/router.hpp"
#include "sched/http/server.hpp"
#include "sched/http/url.hpp"
#include "sched/lock/fenced.hpp"
#include "sched/lock/sql_lock_store.hpp"
#include "sched/store/fire_metrics.hpp"
#include "sched/store/registry.hpp"

namespace sched::trigger {

using namespace std::chrono_literals;

namespace {

http::Response BadField(const std::string& field, std::string message) {
    return http::Response::Error(http::ApiError{Code::kInvalidArgument, std::move(message), field});
}

// A field name from the request, as an error names it: bounded, so a hostile key cannot make
// the answer (or a log line) as large as the body.
std::string ShownField(const std::string& key) {
    constexpr std::size_t kMax = 64;
    return key.size() <= kMax ? key : key.substr(0, kMax) + "...";
}

struct FireNotification {
    std::int64_t epoch = 0;
    std::vector<std::int64_t> fire_ids;
};

// The master's POST /internal/v1/fires {epoch, fire_ids}: exactly these fields, bounded. The
// ids come from one scan (its batch), so a few thousand is already generous.
constexpr std::size_t kMaxNotifiedFires = 10000;

Result<FireNotification> ParseFireNotification(const http::Request& req, std::string& field) {
    field = "body";
    auto body = req.Json();
    if (!body.ok()) return InvalidArgument("body: " + body.status().message());
    if (!body->is_object()) return InvalidArgument("body: expected a JSON object {epoch, fire_ids}");
    FireNotification n;
    for (const auto& [key, value] : body->items()) {
        field = ShownField(key);
        if (key == "epoch") {
            if (!value.is_number_integer() || value.get<std::int64_t>() < 1) {
                return InvalidArgument("epoch: expected an integer >= 1");
            }
            n.epoch = value.get<std::int64_t>();
        } else if (key == "fire_ids") {
            if (!value.is_array()) return InvalidArgument("fire_ids: expected an array of integers");
            if (value.size() > kMaxNotifiedFires) {
                return InvalidArgument("fire_ids: at most " + std::to_string(kMaxNotifiedFires) + " ids");
            }
            for (const auto& id : value) {
                if (!id.is_number_integer() || id.get<std::int64_t>() < 1) {
                    return InvalidArgument("fire_ids: expected an array of integers >= 1");
                }
                n.fire_ids.push_back(id.get<std::int64_t>());
            }
        } else {
            return InvalidArgument(field + ": unknown field");
        }
    }
    for (const char* required : {"epoch", "fire_ids"}) {
        field = required;
        if (!body->contains(required)) return InvalidArgument(field + ": required");
    }
    return n;
}

}  // namespace

NodeConfig NodeConfig::FromYaml(const ConfigNode& root, const Defaults& defaults, bool reject_unknown) {
    NodeConfig c;
    c.node_id = root.String("node-id", "");
    c.advertised_address = root.String("advertised-address", "");
    // Where the address is known only when the process starts (a Kubernetes pod's IP, given
    // through the downward API), the environment sets it.
    if (auto env = EnvOverride("SCHED_ADVERTISED_ADDRESS")) c.advertised_address = *env;
    if (!c.advertised_address.empty()) {
        // Other nodes dial it: a typo here only shows up later as notifications that never
        // arrive, so it is refused at start-up.
        auto parsed = http::HostPort::Parse(c.advertised_address);
        if (!parsed.ok()) throw ConfigError("advertised-address", parsed.status().message());
        if (parsed->port == 0) throw ConfigError("advertised-address", "needs a port other than 0");
    }
    c.token = root.String("token", "");
    if (auto env = EnvOverride("SCHED_TOKEN")) c.token = *env;
    c.heartbeat_interval = root.Duration("heartbeat-interval", c.heartbeat_interval, 10ms, std::chrono::minutes(1));
    c.clock_refresh = root.Duration("clock-refresh", c.clock_refresh, 100ms, std::chrono::hours(1));
    c.io_threads = static_cast<int>(root.Int("io-threads", c.io_threads, 1, 64));
    c.db_threads = static_cast<int>(root.Int("db-threads", c.db_threads, 1, 256));
    c.executor_api = root.Bool("executor-api", c.executor_api);
    http::ServerOptions http_defaults;
    http_defaults.listen = defaults.listen;
    c.http = http::ServerOptions::FromYaml(root.Child("http"), http_defaults);
    c.database = db::DatabaseConfig::FromYaml(root.Child("database"), defaults.db_url);
    c.election = lock::ElectionConfig::FromYaml(root.Child("election"));
    c.scheduler = MasterConfig::FromYaml(root.Child("scheduler"));
    c.slave = SlaveConfig::FromYaml(root.Child("slave"));
    c.slave.misfire_threshold = c.scheduler.misfire_threshold;  // one threshold for planned and sent fires
    c.log = LogConfig::FromYaml(root.Child("log"));
    if (c.token.empty() && defaults.require_token) {
        throw ConfigError("token", "required: a cluster without a token refuses to start (set it or SCHED_TOKEN)");
    }
    // A slave is considered dead after node-ttl: its heartbeats must come several times per ttl.
    if (c.heartbeat_interval * 2 >= c.scheduler.node_ttl) {
        throw ConfigError("heartbeat-interval",
                          "must be less than scheduler.node-ttl / 2 (" + FormatDuration(c.scheduler.node_ttl) + ")");
    }
    c.election.Validate();
    if (reject_unknown) root.RejectUnknownKeys();
    return c;
}

namespace {

// Webhooks through the node's I/O threads, each call bounded by alert-timeout; the answer's body
// is read up to 64 KiB (a larger one fails the attempt) and discarded.
class HttpWebhookSender final : public WebhookSender {
  public:
    HttpWebhookSender(net::io_context& io, Micros timeout) : io_(io), client_(io.get_executor(), Options(timeout)) {
        call_.timeout = timeout;
    }
    Result<int> Post(const std::string& url, const Headers& headers, const std::string& body) override {
        http::ClientRequest request;
        request.method = http::Method::kPost;
        request.url = url;
        for (const auto& [name, value] : headers) request.headers.Add(name, value);
        request.body = body;
        std::optional<Result<int>> outcome;
        // Blocks this (alert) thread only; `request` and `outcome` outlive the call because
        // get() waits for it.
        auto done = net::co_spawn(
            io_,
            [&]() -> net::awaitable<void> {
                const http::CallOptions call = call_;
                auto response = co_await client_.Send(std::move(request), call);
                if (response.ok()) {
                    outcome.emplace(response->status);
                } else {
                    outcome.emplace(response.status());
                }
            },
            net::use_future);
        done.get();
        return outcome.value_or(Result<int>(Internal("webhook call ended without an outcome")));
    }
    void CloseIdle() { client_.CloseIdle(); }

  private:
    static http::ClientOptions Options(Micros timeout) {
        http::ClientOptions o;
        o.connect_timeout = std::min<Micros>(timeout, std::chrono::seconds(2));
        o.request_timeout = timeout;
        o.body_limit = std::size_t{64} * 1024;
        o.max_idle_per_host = 2;
        o.user_agent = "sched-alerts";
        return o;
    }
    net::io_context& io_;
    http::HttpClient client_;
    http::CallOptions call_;
};

}  // namespace

struct TriggerNode::Impl {
    http::Router router;
    std::unique_ptr<http::Server> server;
    std::unique_ptr<http::HttpClient> http;
    std::shared_ptr<db::Database> election_db;
    std::unique_ptr<lock::SqlLockStore> lock_store;
    std::unique_ptr<lock::LeaseElector> elector;
    std::unique_ptr<lock::Fence> fence;
    std::unique_ptr<Master> master;
    std::unique_ptr<HistoryPurger> purger;
    std::unique_ptr<HttpWebhookSender> webhooks;
    std::unique_ptr<Alerter> alerter;
    std::unique_ptr<Slave> slave;
    std::vector<std::thread> io_threads;
    std::jthread elector_thread;
    std::thread master_thread;
    std::thread purge_thread;
    std::thread alert_thread;
    std::thread gauges_thread;
    std::mutex gauges_mu;
    std::optional<store::ClusterGauges> gauges;  // the last read while leading; reset on losing the lease
    std::thread heartbeat_thread;
    std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
    std::mutex leader_mu;
    std::optional<std::pair<std::string, std::int64_t>> leader;
};

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
    auto db = db::Database::OpenWithRetry(config_.database.url, config_.database.connect_retry_for, should_stop);
    if (!db.ok()) return db.status();
    db_ = *db;
    auto migrated = db::Migrator(*db_).Migrate();
    if (!migrated.ok()) return Status(migrated.status().code(), "migrate: " + migrated.status().message());
    db_ok_ = true;

    // The election runs on its own small pool whose timeouts stay below the margin.
    auto election_db = db::Database::Open(lock::ElectionDbUrl(config_.database.url, config_.election));
    if (!election_db.ok()) return election_db.status();
    impl_->election_db = *election_db;
    impl_->lock_store = std::make_unique<lock::SqlLockStore>(impl_->election_db);
    impl_->elector = std::make_unique<lock::LeaseElector>(*impl_->lock_store, node_id_, config_.election);
    impl_->elector->AddObserver(*this);
    impl_->fence = std::make_unique<lock::Fence>(db_, config_.election.name, node_id_);

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
    impl_->webhooks = std::make_unique<HttpWebhookSender>(io_, config_.scheduler.alert_timeout);
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

void TriggerNode::OnStartedLeading(std::int64_t epoch) {
    spdlog::info("node {} is master at epoch {}", node_id_, epoch);
    std::lock_guard lock(mu_);
    leading_epoch_ = epoch;
    cv_.notify_all();
}

void TriggerNode::OnStoppedLeading(const lock::LeadershipEnd& end) {
    spdlog::warn("node {} stopped leading epoch {}: {} {}", node_id_, end.epoch, lock::StopReasonName(end.reason),
                 end.detail);
    // The master loop re-checks IsLeading(epoch) before every scan and every scan is fenced,
    // so clearing the epoch here is enough to stop master work.
    std::lock_guard lock(mu_);
    leading_epoch_.reset();
}

void TriggerNode::OnNewLeader(const std::string& node, std::int64_t epoch) {
    std::lock_guard lock(impl_->leader_mu);
    impl_->leader = std::make_pair(node, epoch);
}

void TriggerNode::MasterLoop() {
    while (!stopping_) {
        std::optional<std::int64_t> epoch;
        {
            std::unique_lock lock(mu_);
            cv_.wait_for(lock, 200ms, [this] { return stopping_ || leading_epoch_.has_value(); });
            epoch = leading_epoch_;
        }
        if (stopping_) break;
        if (!epoch || !impl_->elector->IsLeading(*epoch)) continue;
        auto report = impl_->master->Scan(*epoch);
        Micros sleep = config_.scheduler.scan_interval;
        if (report.ok()) {
            Notify(*report, *epoch);
            sleep = impl_->master->SleepAfter(*report);
        } else if (lock::IsLeaseLost(report.status())) {
            spdlog::warn("master scan refused: {}", report.status().ToString());
            std::lock_guard lock(mu_);
            if (leading_epoch_ == epoch) leading_epoch_.reset();
            continue;
        } else {
            spdlog::warn("master scan failed: {}", report.status().ToString());
        }
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, sleep, [this] { return stopping_.load(); });
    }
}

void TriggerNode::ClusterGaugesLoop() {
    // Every few seconds is enough for dashboards and alerts; the queries are aggregates over
    // indexes (pending/running/overdue, live executors) and the retained succeeded fires.
    constexpr auto kInterval = std::chrono::seconds(5);
    const auto ms = [](Micros d) {
        return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
    };
    while (!stopping_) {
        std::optional<std::int64_t> epoch;
        {
            std::unique_lock lock(mu_);
            cv_.wait_for(lock, kInterval, [this] { return stopping_.load(); });
            epoch = leading_epoch_;
        }
        if (stopping_) break;
        if (!epoch || !impl_->elector->IsLeading(*epoch)) {
            std::lock_guard lock(impl_->gauges_mu);
            impl_->gauges.reset();
            continue;
        }
        auto read =
            store::ReadClusterGauges(*db_, ms(config_.scheduler.misfire_threshold), ms(config_.scheduler.executor_ttl));
        if (!read.ok()) {
            spdlog::warn("master cluster gauges: {}", read.status().ToString());
            continue;
        }
        std::lock_guard lock(impl_->gauges_mu);
        impl_->gauges = std::move(*read);
    }
}

void TriggerNode::PurgeLoop() {
    while (!stopping_) {
        std::optional<std::int64_t> epoch;
        {
            std::unique_lock lock(mu_);
            cv_.wait_for(lock, config_.scheduler.purge_interval, [this] { return stopping_.load(); });
            epoch = leading_epoch_;
        }
        if (stopping_) break;
        if (!epoch || !impl_->elector->IsLeading(*epoch)) continue;
        const auto started = std::chrono::steady_clock::now();
        auto round = impl_->purger->PurgeRound(*epoch, [this] { return stopping_.load(); });
        const auto elapsed_ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
        if (!round.ok()) {
            // Batches committed before the error stay deleted; the rest is retried next interval.
            spdlog::warn("master history purge failed after {} ms: {}", elapsed_ms, round.status().ToString());
        } else if (round->by_age + round->by_cap > 0) {
            spdlog::info(
                "master history purge: {} fires deleted ({} by age, {} beyond the per-job cap) in {} batches, "
                "{} ms",
                round->by_age + round->by_cap, round->by_age, round->by_cap, round->batches, elapsed_ms);
        }
    }
}

void TriggerNode::AlertLoop() {
    while (!stopping_) {
        std::optional<std::int64_t> epoch;
        {
            std::unique_lock lock(mu_);
            cv_.wait_for(lock, config_.scheduler.alert_interval, [this] { return stopping_.load(); });
            epoch = leading_epoch_;
        }
        if (stopping_) break;
        if (!epoch || !impl_->elector->IsLeading(*epoch)) continue;
        auto round = impl_->alerter->Round(*epoch, [this] { return stopping_.load(); });
        if (!round.ok()) {
            // What committed stays; the cursor and the pending deliveries are retried next round.
            spdlog::warn("master alerts round failed: {}", round.status().ToString());
        } else if (round->deliveries_created + round->delivered + round->retried + round->failed > 0) {
            spdlog::info("master alerts: {} deliveries created, {} delivered, {} to retry, {} failed",
                         round->deliveries_created, round->delivered, round->retried, round->failed);
        }
    }
}

void TriggerNode::Notify(const ScanReport& report, std::int64_t epoch) {
    for (const auto& [node, ids] : report.assigned) {
        if (node == node_id_) {
            if (impl_->slave) impl_->slave->Notify(ids);
            continue;
        }
        auto it = report.node_addresses.find(node);
        if (it == report.node_addresses.end()) continue;
        nlohmann::json body = {{"epoch", epoch}, {"fire_ids", ids}};
        const std::string url = "http://" + it->second + "/internal/v1/fires";
        net::co_spawn(
            io_,
            [this, url, body = std::move(body)]() -> net::awaitable<void> {
                http::CallOptions call{.timeout = std::chrono::seconds(1), .bearer_token = config_.token};
                auto r = co_await impl_->http->PostJson(url, body, call);
                // Best effort: the slave's poll finds the fires anyway.
                if (!r.ok() || !r->ok()) spdlog::debug("notify {} failed", url);
            },
            net::detached);
    }
}

void TriggerNode::HeartbeatLoop() {
    store::TriggerNodeRepository nodes(*db_);
    auto next_clock = std::chrono::steady_clock::now();
    while (!stopping_) {
        Status s = nodes.Heartbeat({.node_id = node_id_,
                                    .address = advertised_,
                                    .capacity = config_.slave.enabled ? config_.slave.capacity : 0,
                                    .state = config_.slave.enabled ? "active" : "standby"});
        if (s.ok() != db_ok_.load()) {
            if (s.ok()) {
                spdlog::info("node {}: database reachable again", node_id_);
            } else {
                spdlog::warn("node {}: heartbeat failed: {}", node_id_, s.ToString());
            }
        }
        db_ok_ = s.ok();
        if (std::chrono::steady_clock::now() >= next_clock) {
            if (Status c = time_->Refresh(); !c.ok()) spdlog::debug("DB clock refresh failed: {}", c.ToString());
            next_clock = std::chrono::steady_clock::now() + config_.clock_refresh;
        }
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, config_.heartbeat_interval, [this] { return stopping_.load(); });
    }
}

std::string TriggerNode::StatusJson() const {
    nlohmann::json j;
    j["node_id"] = node_id_;
    j["address"] = advertised_;
    const auto leadership = impl_->elector ? impl_->elector->CurrentLeadership() : std::nullopt;
    j["role"] = leadership ? "master" : "slave";
    j["epoch"] = leadership ? nlohmann::json(leadership->epoch) : nlohmann::json(nullptr);
    // The term ends at valid_until = (start of the last successful renew) + ttl - margin, so the
    // lease's age - time since that renew - follows from it without another clock read.
    if (leadership) {
        const auto& election = impl_->elector->config();
        const auto valid_for = std::chrono::duration_cast<std::chrono::milliseconds>(leadership->valid_until -
                                                                                     std::chrono::steady_clock::now());
        const auto term = std::chrono::duration_cast<std::chrono::milliseconds>(election.ttl - election.margin);
        j["lease_age_ms"] = std::max<std::int64_t>(0, (term - valid_for).count());
        j["lease_valid_for_ms"] = std::max<std::int64_t>(0, valid_for.count());
    } else {
        j["lease_age_ms"] = nullptr;
        j["lease_valid_for_ms"] = nullptr;
    }
    {
        std::lock_guard lock(impl_->leader_mu);
        j["leader"] = impl_->leader ? nlohmann::json(impl_->leader->first) : nlohmann::json(nullptr);
        j["leader_epoch"] = impl_->leader ? nlohmann::json(impl_->leader->second) : nlohmann::json(nullptr);
    }
    j["db_ok"] = db_ok_.load();
    j["db_clock_offset_ms"] = time_ ? time_->Offset().count() / 1000.0 : 0.0;
    j["db_round_trip_ms"] = time_ ? time_->RoundTrip().count() / 1000.0 : 0.0;
    j["scheduled_fires"] = impl_->slave ? impl_->slave->Scheduled() : 0;
    j["in_flight_fires"] = impl_->slave ? impl_->slave->InFlight() : 0;
    return j.dump();
}

std::string TriggerNode::NotReadyReason() const {
    if (stopping_) return "stopping";
    if (!started_) return "starting";
    if (!db_ok_) return "database unreachable (the last heartbeat failed)";
    // A cluster where nobody leads plans no fire, even though every node and the database are
    // up (a lease nobody can take, a database that refuses writes): ttl + tick is the longest a
    // healthy hand-over takes, so a longer gap is an outage the operator must see.
    const auto& election = config_.election;
    const auto now = std::chrono::steady_clock::now();
    const auto last = impl_->elector->LastLeaderActivity().value_or(started_at_);
    const auto gap = now - last;
    if (gap > election.ttl + election.tick) {
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(gap).count();
        return "no node has led the cluster for " + FormatDuration(std::chrono::milliseconds(ms)) +
               " (longer than election ttl + tick, " + FormatDuration(election.ttl + election.tick) + ")";
    }
    return "";
}

std::string TriggerNode::Metrics() const {
    return metrics_.Render();
}

void TriggerNode::ExportNodeMetrics() {
    using Kind = MetricsRegistry::Kind;
    using Samples = std::vector<ObservedSample>;
    const auto single = [](double v) {
        return Samples{{{}, v}};
    };
    auto* elector = impl_->elector.get();
    metrics_.Observed("sched_leader", "1 while this node is the master.", Kind::kGauge, {},
                      [elector, single] { return single(elector->IsLeading() ? 1 : 0); });
    metrics_.Observed("sched_epoch", "The lease epoch this node leads in (0 when not leading).", Kind::kGauge, {},
                      [elector, single] {
                          const auto leadership = elector->CurrentLeadership();
                          return single(leadership ? static_cast<double>(leadership->epoch) : 0);
                      });
    metrics_.Observed("sched_lease_transitions_total", "Leadership terms started and ended.", Kind::kCounter, {"kind"},
                      [elector] {
                          const auto c = elector->Counters();
                          return Samples{{{"started"}, static_cast<double>(c.started_leading)},
                                         {{"ended"}, static_cast<double>(c.stopped_leading)}};
                      });
    metrics_.Observed("sched_lease_renew_failures_total", "Renew rounds that failed.", Kind::kCounter, {},
                      [elector, single] { return single(static_cast<double>(elector->Counters().renew_failures)); });
    metrics_.Observed("sched_lease_self_demotions_total", "Terms ended by the local deadline.", Kind::kCounter, {},
                      [elector, single] { return single(static_cast<double>(elector->Counters().self_demotions)); });
    metrics_.Observed("sched_lease_clock_anomalies_total", "Leases taken over because the clock had moved back.",
                      Kind::kCounter, {},
                      [elector, single] { return single(static_cast<double>(elector->Counters().clock_anomalies)); });
    auto* time = time_.get();
    metrics_.Observed("sched_db_clock_offset_seconds", "Database clock minus local clock.", Kind::kGauge, {},
                      [time, single] { return single(static_cast<double>(time->Offset().count()) / 1e6); });
    // Cluster-wide gauges: exported by the leading master only (ClusterGaugesLoop), so a sum
    // or max over all nodes counts each fire once.
    auto* impl = impl_.get();
    const auto gauge = [this, impl](const char* name, const char* help, std::vector<std::string> labels,
                                    const std::function<Samples(const store::ClusterGauges&)>& pick) {
        metrics_.Observed(name, help, Kind::kGauge, std::move(labels), [impl, pick] {
            std::lock_guard lock(impl->gauges_mu);
            return impl->gauges ? pick(*impl->gauges) : Samples{};
        });
    };
    gauge("sched_fires_pending", "Fires waiting to be sent (pending or dispatching); leader only.", {},
          [](const store::ClusterGauges& g) {
              return Samples{{{}, static_cast<double>(g.pending)}};
          });
    gauge("sched_fires_running", "Fires an executor accepted and has not finished; leader only.", {},
          [](const store::ClusterGauges& g) {
              return Samples{{{}, static_cast<double>(g.running)}};
          });
    gauge("sched_fires_overdue", "Pending fires due longer ago than misfire-threshold; leader only.", {},
          [](const store::ClusterGauges& g) {
              return Samples{{{}, static_cast<double>(g.overdue)}};
          });
    gauge("sched_executors_live",
          "Executor instances with a heartbeat within executor-ttl, per app (apps with enabled jobs at 0); "
          "leader only.",
          {"app"}, [](const store::ClusterGauges& g) {
              Samples out;
              for (const auto& [app, n] : g.executors_live) out.push_back({{app}, static_cast<double>(n)});
              return out;
          });
    gauge("sched_job_last_success_timestamp_seconds",
          "Finish time of the job's latest succeeded fire still in the history; leader only.", {"app", "job", "name"},
          [](const store::ClusterGauges& g) {
              Samples out;
              for (const auto& j : g.last_success) {
                  out.push_back({{j.app, std::to_string(j.job_id), j.name}, static_cast<double>(j.finished_ms) / 1e3});
              }
              return out;
          });
    auto* server = impl_->server.get();
    http::ExportServerStats(metrics_, "sched_http", [server] { return server->Stats(); });
}

void TriggerNode::AddRoutes() {
    auto& r = impl_->router;
    r.Add(
        http::Method::kGet, "/healthz", [](http::Request&) { return http::Response::Text("ok\n"); },
        http::Access::kPublic);
    r.Add(
        http::Method::kGet, "/readyz",
        [this](http::Request&) {
            const std::string why = NotReadyReason();
            return why.empty() ? http::Response::Text("ready\n", 200)
                               : http::Response::Text("not ready: " + why + "\n", 503);
        },
        http::Access::kPublic);
    r.Add(
        http::Method::kGet, "/metrics",
        [this](http::Request&) {
            return http::Response::Text(Metrics(), 200, "text/plain; version=0.0.4; charset=utf-8");
        },
        http::Access::kPublic);
    r.Add(
        http::Method::kGet, "/status",
        [this](http::Request&) {
            http::Response res = http::Response::Text(StatusJson(), 200, "application/json");
            return res;
        },
        http::Access::kPublic);
    r.Add(http::Method::kPost, "/internal/v1/election/nudge", [this](http::Request& req) {
        // No body, or `{}` (what NudgePeers sends): anything else is a caller's bug worth a 400.
        if (!req.body.empty()) {
            auto body = req.Json();
            if (!body.ok()) return BadField("body", "body: expected no body or {}: " + body.status().message());
            if (!body->is_object()) return BadField("body", "body: expected no body or {}");
            if (!body->empty()) {
                const std::string field = ShownField(body->begin().key());
                return BadField(field, field + ": unknown field");
            }
        }
        if (impl_->elector) impl_->elector->Nudge();
        return http::Response::Json({{"nudged", true}});
    });
    r.Add(http::Method::kPost, "/internal/v1/fires", [this](http::Request& req) {
        std::string field;
        auto parsed = ParseFireNotification(req, field);
        if (!parsed.ok()) return http::Response::Error(parsed.status(), field);
        if (impl_->slave) impl_->slave->Notify(std::move(parsed->fire_ids));
        return http::Response::Json({{"accepted", true}}, 202);
    });
}

}  // namespace sched::trigger
