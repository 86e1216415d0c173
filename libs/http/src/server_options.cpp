#include "sched/http/server_options.hpp"

#include "sched/http/url.hpp"

namespace sched::http {

ServerOptions ServerOptions::FromYaml(const ConfigNode& node, const ServerOptions& defaults) {
    using std::chrono::milliseconds;
    ServerOptions o = defaults;
    o.listen = node.String("listen", o.listen);
    if (auto hp = HostPort::Parse(o.listen); !hp.ok()) {
        throw ConfigError(node.path().empty() ? "listen" : node.path() + ".listen", hp.status().message());
    }
    o.body_limit = static_cast<std::size_t>(
        node.Int("body-limit", static_cast<std::int64_t>(o.body_limit), 1, std::int64_t{1} << 30));
    o.header_limit = static_cast<std::size_t>(
        node.Int("header-limit", static_cast<std::int64_t>(o.header_limit), 1024, std::int64_t{1024} * 1024));
    o.header_timeout = node.Duration("header-timeout", o.header_timeout, milliseconds(1));
    o.first_byte_timeout = node.Duration("first-byte-timeout", o.first_byte_timeout, milliseconds(1));
    o.body_timeout = node.Duration("body-timeout", o.body_timeout, milliseconds(1));
    o.idle_timeout = node.Duration("idle-timeout", o.idle_timeout, milliseconds(1));
    o.write_timeout = node.Duration("write-timeout", o.write_timeout, milliseconds(1));
    o.max_connections = static_cast<std::size_t>(
        node.Int("max-connections", static_cast<std::int64_t>(o.max_connections), 1, 1'000'000));
    o.max_connections_per_peer = static_cast<std::size_t>(
        node.Int("max-connections-per-peer", static_cast<std::int64_t>(o.max_connections_per_peer), 1, 1'000'000));
    o.json_max_depth =
        static_cast<std::size_t>(node.Int("json-max-depth", static_cast<std::int64_t>(o.json_max_depth), 1, 1000));
    o.shutdown_grace = node.Duration("shutdown-grace", o.shutdown_grace);
    const std::string current = o.access_log == AccessLog::kAll      ? "all"
                                : o.access_log == AccessLog::kErrors ? "errors"
                                                                     : "off";
    const std::string log = node.Enum("access-log", current, {"all", "errors", "off"});
    o.access_log = log == "all" ? AccessLog::kAll : log == "errors" ? AccessLog::kErrors : AccessLog::kOff;
    o.tls = ServerTlsOptions::FromYaml(node.Child("tls"), o.tls);
    return o;
}

}  // namespace sched::http
