#include <cctype>

#include "sched/client/executor.hpp"
#include "sched/http/url.hpp"

namespace sched::client {

namespace {

bool ValidName(const std::string& name) {
    if (name.empty() || name.size() > 128) return false;
    for (const char c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
    }
    return true;
}

}  // namespace

http::ServerOptions ExecutorOptions::DefaultServerOptions() {
    http::ServerOptions o;
    o.listen = "0.0.0.0:9999";
    o.access_log = http::AccessLog::kErrors;
    o.name = "executor";
    return o;
}

ExecutorOptions ExecutorOptions::FromYaml(const ConfigNode& node) {
    using std::chrono::hours;
    using std::chrono::milliseconds;
    ExecutorOptions o;
    o.app = node.String("app", o.app);
    o.advertised_address = node.String("advertised-address", o.advertised_address);
    o.web_endpoints = node.StringList("web-endpoints", o.web_endpoints);
    o.token = node.String("token", o.token);
    if (auto env = EnvOverride("SCHED_TOKEN")) o.token = *env;
    o.heartbeat_interval = node.Duration("heartbeat-interval", o.heartbeat_interval, milliseconds(10), hours(1));
    o.worker_threads = static_cast<int>(node.Int("worker-threads", o.worker_threads, 1, 1024));
    o.io_threads = static_cast<int>(node.Int("io-threads", o.io_threads, 1, 64));
    o.capacity = static_cast<int>(node.Int("capacity", o.capacity, 1, 1'000'000));
    o.spool_dir = node.String("spool-dir", o.spool_dir.string());
    o.callback_batch_size = static_cast<int>(node.Int("callback-batch-size", o.callback_batch_size, 1, 10'000));
    o.callback_flush_interval =
        node.Duration("callback-flush-interval", o.callback_flush_interval, milliseconds(1), std::chrono::minutes(1));
    o.callback_max_backoff = node.Duration("callback-max-backoff", o.callback_max_backoff, milliseconds(1), hours(1));
    o.web_timeout = node.Duration("web-timeout", o.web_timeout, milliseconds(1), std::chrono::minutes(10));
    o.shutdown_grace = node.Duration("shutdown-grace", o.shutdown_grace, milliseconds(0), hours(1));
    o.log_retained_fires = static_cast<int>(node.Int("log-retained-fires", o.log_retained_fires, 1, 1'000'000));
    o.log_max_lines = static_cast<int>(node.Int("log-max-lines", o.log_max_lines, 1, 1'000'000));
    o.log_tail_bytes = static_cast<int>(node.Int("log-tail-bytes", o.log_tail_bytes, 0, kMaxLogTailBytes));
    o.dedupe_window = static_cast<int>(node.Int("dedupe-window", o.dedupe_window, 1, 100'000'000));
    o.signature_window =
        node.Duration("signature-window", o.signature_window, std::chrono::seconds(1), std::chrono::minutes(10));
    o.metrics = node.Bool("metrics", o.metrics);
    o.metrics_token = node.String("metrics-token", o.metrics_token);
    if (auto env = EnvOverride("SCHED_METRICS_TOKEN")) o.metrics_token = *env;
    o.http = http::ServerOptions::FromYaml(node.Child("http"), DefaultServerOptions());
    o.web_tls = http::ClientTlsOptions::FromConfig(node);
    // service-name defaults to the app (read above): the collector groups spans by service.
    o.telemetry =
        protocol::SpanExporterOptions::FromYaml(node.Child("telemetry"), o.app.empty() ? "sched-executor" : o.app);
    o.Validate(node.path());
    return o;
}

void ExecutorOptions::Validate(const std::string& section) const {
    const auto key = [&](const std::string& k) {
        return section.empty() ? k : section + "." + k;
    };
    if (app.empty()) throw ConfigError(key("app"), "required: the application name jobs are routed to");
    if (!ValidName(app))
        throw ConfigError(key("app"), "expected letters, digits, '.', '_' or '-', got \"" + app + "\"");
    if (web_endpoints.empty()) {
        throw ConfigError(key("web-endpoints"),
                          "required: at least one web module URL, e.g. \"http://127.0.0.1:8080\"");
    }
    for (std::size_t i = 0; i < web_endpoints.size(); ++i) {
        if (auto u = http::Url::Parse(web_endpoints[i]); !u.ok()) {
            throw ConfigError(key("web-endpoints") + "[" + std::to_string(i) + "]", u.status().message());
        }
    }
    if (token.empty()) {
        throw ConfigError(key("token"), "required: set it here or in the SCHED_TOKEN environment variable");
    }
    if (!advertised_address.empty()) {
        if (auto hp = http::HostPort::Parse(advertised_address); !hp.ok() || hp->port == 0) {
            throw ConfigError(key("advertised-address"), hp.ok() ? "the port must not be 0" : hp.status().message());
        }
    }
    if (auto hp = http::HostPort::Parse(http.listen); !hp.ok())
        throw ConfigError(key("http.listen"), hp.status().message());
    const auto positive = [&](int v, const char* k) {
        if (v < 1) throw ConfigError(key(k), "must be at least 1, got " + std::to_string(v));
    };
    positive(worker_threads, "worker-threads");
    positive(io_threads, "io-threads");
    positive(capacity, "capacity");
    positive(callback_batch_size, "callback-batch-size");
    positive(log_retained_fires, "log-retained-fires");
    positive(log_max_lines, "log-max-lines");
    positive(dedupe_window, "dedupe-window");
    if (log_tail_bytes < 0 || log_tail_bytes > kMaxLogTailBytes) {
        throw ConfigError(key("log-tail-bytes"), "expected 0.." + std::to_string(kMaxLogTailBytes) + ", got " +
                                                     std::to_string(log_tail_bytes));
    }
    if (heartbeat_interval.count() <= 0) throw ConfigError(key("heartbeat-interval"), "must be positive");
    if (callback_flush_interval.count() <= 0) throw ConfigError(key("callback-flush-interval"), "must be positive");
    if (callback_max_backoff.count() <= 0) throw ConfigError(key("callback-max-backoff"), "must be positive");
    if (web_timeout.count() <= 0) throw ConfigError(key("web-timeout"), "must be positive");
    if (signature_window < std::chrono::seconds(1)) throw ConfigError(key("signature-window"), "must be at least 1s");
    if (!metrics_token.empty() && metrics_token.size() < 16) {
        throw ConfigError(key("metrics-token"), "too short: at least 16 characters");
    }
    if (spool_dir.empty()) throw ConfigError(key("spool-dir"), "required: a directory for undelivered results");
}

}  // namespace sched::client
