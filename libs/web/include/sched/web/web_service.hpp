#pragma once

/// The scheduler-web process (apps/scheduler-web): the web module's routes on their own HTTP
/// server, over the cluster's database. Stateless: run as many as you like behind a balancer.
///
/// YAML (config/web.yaml documents every key; unknown keys are rejected):
///
///     token, executor-api, ui, executor-ttl, node-ttl, auth-cache,
///     executor-timeout      # WebOptions (web_api.hpp)
///     io-threads: 2         # HTTP server and client threads
///     db-threads: 4         # threads for database work off the I/O threads
///     http: {...}           # http::ServerOptions; listen defaults to 127.0.0.1:8080
///     database: {...}       # db::DatabaseConfig; url defaults to sqlite://data/scheduler.db
///     log: {...}            # LogConfig
///     telemetry: {...}      # protocol::SpanExporterOptions; service-name defaults to scheduler-web
///
/// With `telemetry.otlp-endpoint` set, the fires' ends this process applies (the SDK's result
/// callbacks) and its manual triggers export their spans (`ended` and the attempt's root,
/// `planned`) over OTLP (sched/protocol/fire_spans.hpp), with `sched.node` = "web@<listen
/// address>", and /metrics adds sched_trace_spans_exported_total and
/// sched_trace_spans_dropped_total{reason}.
///
/// Besides the web module's routes it serves GET /healthz (always 200 while running),
/// GET /readyz (200 when the database answers, else 503) and GET /metrics (Prometheus text of
/// the process's registry: HTTP server counters, fire outcomes counted from callbacks, build
/// info and process series), all public.
///
/// Start() opens the database (retrying for database.connect-retry-for), applies migrations
/// (safe while trigger nodes do the same), binds and serves. Stop() finishes requests in flight
/// (http.shutdown-grace) and closes.

#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "sched/common/config.hpp"
#include "sched/common/logging.hpp"
#include "sched/common/metrics.hpp"
#include "sched/common/net.hpp"
#include "sched/common/status.hpp"
#include "sched/db/database_config.hpp"
#include "sched/dispatch/master_waker.hpp"
#include "sched/http/client.hpp"
#include "sched/http/server_options.hpp"
#include "sched/protocol/span_exporter_options.hpp"
#include "sched/web/web_api.hpp"

namespace sched::http {
class Server;
}  // namespace sched::http

namespace sched::protocol {
class SpanExporter;
}  // namespace sched::protocol

namespace sched::web {

struct WebServiceConfig {
    WebOptions api;
    int io_threads = 2;
    int db_threads = 4;
    http::ServerOptions http;
    db::DatabaseConfig database;
    LogConfig log;
    protocol::SpanExporterOptions telemetry;

    /// Reads the whole document (root level) and rejects unknown keys. Throws ConfigError naming
    /// the key.
    static WebServiceConfig FromYaml(const ConfigNode& root);
};

/// Start() and Stop() from one thread; port() and routes() from any after Start().
class WebService {
  public:
    explicit WebService(WebServiceConfig config);
    ~WebService();
    WebService(const WebService&) = delete;
    WebService& operator=(const WebService&) = delete;

    /// Errors are values: the database (kUnavailable after the retry window, kCancelled when
    /// `should_stop` said so), migrations, or the port (kUnavailable naming the address).
    Status Start(const std::function<bool()>& should_stop = {});
    /// Graceful stop. Idempotent; blocks until done.
    void Stop();

    std::uint16_t port() const;
    /// Every route the server serves (the web module's and the three above).
    const std::vector<RouteInfo>& routes() const { return routes_; }

  private:
    void ExportSpanMetrics();

    WebServiceConfig config_;
    MetricsRegistry metrics_;  // before server_: the server's counters are read while rendering
    net::io_context io_;
    net::thread_pool db_pool_;
    std::shared_ptr<db::Database> db_;
    // The masters' wakes after the API's writes (WebOptions::wake_masters); before server_, whose
    // routes call it.
    std::unique_ptr<http::HttpClient> wake_http_;
    std::unique_ptr<dispatch::MasterWaker> waker_;
    std::unique_ptr<http::Server> server_;
    std::shared_ptr<protocol::SpanExporter> spans_;  // telemetry on
    std::optional<net::executor_work_guard<net::io_context::executor_type>> work_;
    std::vector<std::thread> io_threads_;
    std::vector<RouteInfo> routes_;
    bool started_ = false;
    bool stopped_ = false;
};

}  // namespace sched::web
