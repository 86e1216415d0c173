#include "sched/trigger/node.hpp"

#include <chrono>

namespace sched::trigger {

using namespace std::chrono_literals;

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
    c.http_client_tls = http::ClientTlsOptions::FromConfig(root);
    c.database = db::DatabaseConfig::FromYaml(root.Child("database"), defaults.db_url);
    c.election = lock::ElectionConfig::FromYaml(root.Child("election"));
    c.scheduler = MasterConfig::FromYaml(root.Child("scheduler"));
    c.slave = SlaveConfig::FromYaml(root.Child("slave"));
    c.slave.misfire_threshold = c.scheduler.misfire_threshold;  // one threshold for planned and sent fires
    c.log = LogConfig::FromYaml(root.Child("log"));
    c.telemetry = protocol::SpanExporterOptions::FromYaml(root.Child("telemetry"), defaults.service_name);
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

}  // namespace sched::trigger
