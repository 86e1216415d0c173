#include "sched/web/web_service.hpp"

#include <future>

#include <spdlog/spdlog.h>

#include "sched/common/on_pool.hpp"
#include "sched/db/open_database.hpp"
#include "sched/http/client.hpp"
#include "sched/http/server.hpp"
#include "sched/protocol/fire_spans.hpp"
#include "sched/protocol/span_exporter.hpp"

namespace sched::web {

WebServiceConfig WebServiceConfig::FromYaml(const ConfigNode& root) {
    WebServiceConfig c;
    c.api = WebOptions::FromYaml(root);
    c.api.http_client_tls = http::ClientTlsOptions::FromConfig(root);
    c.io_threads = static_cast<int>(root.Int("io-threads", c.io_threads, 1, 64));
    c.db_threads = static_cast<int>(root.Int("db-threads", c.db_threads, 1, 256));
    http::ServerOptions http_defaults;
    http_defaults.name = "web";
    http_defaults.access_log = http::AccessLog::kErrors;
    c.http = http::ServerOptions::FromYaml(root.Child("http"), http_defaults);
    c.database = db::DatabaseConfig::FromYaml(root.Child("database"), "sqlite://data/scheduler.db");
    c.log = LogConfig::FromYaml(root.Child("log"));
    c.telemetry = protocol::SpanExporterOptions::FromYaml(root.Child("telemetry"), "scheduler-web");
    root.RejectUnknownKeys();
    return c;
}

WebService::WebService(WebServiceConfig config)
    : config_(std::move(config)), db_pool_(static_cast<std::size_t>(config_.db_threads)) {
    metrics_.AddProcessMetrics();
}

WebService::~WebService() {
    Stop();
    db_pool_.join();
}

std::uint16_t WebService::port() const {
    return server_ ? server_->port() : 0;
}

Status WebService::Start(const std::function<bool()>& should_stop) {
    // The port first (below), then the migrations: a busy port fails with nothing done. The
    // routes read db_ when a request arrives, and none is accepted before server_->Start().
    http::Router router;
    // A web server is no trigger node: every leader is woken over HTTP.
    wake_http_ =
        std::make_unique<http::HttpClient>(io_.get_executor(), http::ClientOptions{.tls = config_.api.http_client_tls});
    waker_ = std::make_unique<dispatch::MasterWaker>(
        io_.get_executor(), *wake_http_, [this] { return db_; }, db_pool_,
        dispatch::MasterWakerOptions{.token = config_.api.token, .lease_name = config_.api.lease_name});
    config_.api.wake_masters = [waker = waker_.get()] {
        waker->Wake();
    };
    routes_ = AddWebRoutes(
        router, config_.api, [this] { return db_; }, db_pool_, &metrics_);
    router.Add(
        http::Method::kGet, "/healthz", [](http::Request&) { return http::Response::Text("ok\n"); },
        http::Access::kPublic);
    router.Add(
        http::Method::kGet, "/readyz",
        [this](http::Request&) -> net::awaitable<http::Response> {
            auto ping = [this] {
                return db_->NowUs();
            };
            auto now = co_await OnPool(db_pool_, ping);
            if (!now.ok()) co_return http::Response::Text("database: " + now.status().ToString() + "\n", 503);
            co_return http::Response::Text("ready\n");
        },
        http::Access::kPublic);
    router.Add(
        http::Method::kGet, "/metrics",
        [this](http::Request&) {
            return http::Response::Text(metrics_.Render(), 200, "text/plain; version=0.0.4; charset=utf-8");
        },
        http::Access::kPublic);
    for (const char* path : {"/healthz", "/readyz", "/metrics"}) {
        routes_.push_back({http::Method::kGet, path, Permission::kPublic});
    }
    // Every route authenticates inside its handler (auth.hpp). A route that ever bypassed that
    // would meet this hook, which lets nothing through: closed by default, never open.
    http::AuthHook refuse = [](const http::Request&) {
        return Status(Code::kUnauthenticated, "this route is not served by the web module's auth");
    };
    server_ = std::make_unique<http::Server>(io_.get_executor(), config_.http, std::move(router), std::move(refuse));
    try {
        server_->Listen();
    } catch (const std::exception& e) {
        return Unavailable(e.what());
    }
    if (Status tls = http::CheckClientTls(config_.api.http_client_tls); !tls.ok()) return tls;
    auto db = db::OpenMigrated(config_.database, should_stop);
    if (!db.ok()) return db.status();
    db_ = *db;
    http::ExportServerStats(metrics_, "sched_http", [server = server_.get()] { return server->Stats(); });
    server_->TimeRoutes(metrics_, "sched_http");
    if (config_.telemetry.enabled()) {
        spans_ = std::make_shared<protocol::SpanExporter>(io_.get_executor(), config_.telemetry,
                                                          config_.api.http_client_tls);
        ExportSpanMetrics();
        spans_->Start();
        // Process-wide like the log: a web process is one node of the cluster's traces.
        protocol::FireTracer::Install(
            spans_, "web@" + server_->local_endpoint().address().to_string() + ":" + std::to_string(server_->port()));
    }
    server_->Start();
    work_.emplace(io_.get_executor());
    for (int i = 0; i < config_.io_threads; ++i) io_threads_.emplace_back([this] { io_.run(); });
    started_ = true;
    spdlog::info("web: serving the API and UI on {}:{} ({} routes)", server_->local_endpoint().address().to_string(),
                 server_->port(), routes_.size());
    return Status::Ok();
}

void WebService::ExportSpanMetrics() {
    using Kind = MetricsRegistry::Kind;
    const protocol::SpanExporter* spans = spans_.get();
    metrics_.Observed("sched_trace_spans_dropped_total",
                      "Spans not exported: queue_full (pushed while the queue was full), export_failed (a batch "
                      "dropped after its last retry).",
                      Kind::kCounter, {"reason"}, [spans] {
                          const auto s = spans->Stats();
                          return std::vector<ObservedSample>{
                              {{"queue_full"}, static_cast<double>(s.dropped_queue_full)},
                              {{"export_failed"}, static_cast<double>(s.dropped_export_failed)}};
                      });
    metrics_.Observed("sched_trace_spans_exported_total", "Spans an OTLP collector accepted.", Kind::kCounter, {},
                      [spans] {
                          return std::vector<ObservedSample>{{{}, static_cast<double>(spans->Stats().exported)}};
                      });
}

void WebService::Stop() {
    if (stopped_) return;
    stopped_ = true;
    if (!started_) return;
    auto done = net::co_spawn(io_, server_->Shutdown(), net::use_future);
    // shutdown-grace bounds the server's own wait; this only guards against a stuck executor.
    done.wait_for(config_.http.shutdown_grace + std::chrono::seconds(5));
    // The requests are done: their last spans leave while the I/O threads still run.
    if (spans_) {
        protocol::FireTracer::Uninstall();
        spans_->Stop();
    }
    work_.reset();
    io_.stop();
    for (auto& t : io_threads_) t.join();
    spdlog::info("web: stopped");
}

}  // namespace sched::web
