#pragma once

/// Options of sched::http::Server, kept apart from server.hpp so that option structs of other
/// components (the client SDK's ExecutorOptions) can hold them without including Asio or Beast.

#include <cstddef>
#include <string>

#include "sched/common/config.hpp"
#include "sched/common/duration.hpp"
#include "sched/http/tls_options.hpp"

namespace sched::http {

/// Which requests the server logs (one line each, with status, size and latency).
enum class AccessLog { kAll, kErrors, kOff };

/// YAML keys (a server section such as `http:`), each optional, with these defaults:
///
///     listen: "127.0.0.1:8080"  # host:port to bind; port 0 picks a free port
///     body-limit: 1048576       # bytes; a larger request body gets 413
///     header-limit: 16384       # bytes of request line and headers; more gets 431
///     header-timeout: 10s       # time to receive a request's line and headers once its first
///                               # byte arrived; slower senders are disconnected
///     first-byte-timeout: 5s    # a new connection must send its first byte within this
///     body-timeout: 30s         # time to receive a request body
///     idle-timeout: 60s         # a keep-alive connection idle this long between requests is closed
///     write-timeout: 30s        # time to send a response
///     max-connections: 1024     # open connections; at the limit a new connection sheds the one
///                               # waiting longest for a request header (idle keep-alive or slow
///                               # sender), or gets 503 when every connection is busy with a request
///     max-connections-per-peer: 256  # open connections from one IP address; more get 503
///     json-max-depth: 64        # nesting limit of JSON request bodies (Request::Json); deeper gets 400
///     shutdown-grace: 10s       # on stop, in-flight requests get this long before connections close
///     access-log: all           # all, errors (only 4xx/5xx) or off
///     tls:                      # HTTPS; absent or without cert-file: plain HTTP (ServerTlsOptions)
///       cert-file: ""
///       key-file: ""
///       client-ca-file: ""      # require client certificates signed by this CA
///       min-version: "1.2"
///       reload-check: 5s
struct ServerOptions {
    std::string listen = "127.0.0.1:8080";
    std::size_t body_limit = std::size_t{1024} * 1024;
    std::size_t header_limit = std::size_t{16} * 1024;
    Micros header_timeout = std::chrono::seconds(10);
    Micros first_byte_timeout = std::chrono::seconds(5);
    Micros body_timeout = std::chrono::seconds(30);
    Micros idle_timeout = std::chrono::seconds(60);
    Micros write_timeout = std::chrono::seconds(30);
    std::size_t max_connections = 1024;
    std::size_t max_connections_per_peer = 256;
    std::size_t json_max_depth = 64;
    Micros shutdown_grace = std::chrono::seconds(10);
    AccessLog access_log = AccessLog::kAll;
    ServerTlsOptions tls;
    /// Names this server in log lines ("http", "executor", "admin").
    std::string name = "http";

    /// Reads the keys above from `node`; absent keys keep the values in `defaults`. Throws
    /// ConfigError naming the key for a bad value (listen must parse as host:port).
    static ServerOptions FromYaml(const ConfigNode& node, const ServerOptions& defaults);
    static ServerOptions FromYaml(const ConfigNode& node) { return FromYaml(node, ServerOptions()); }
};

}  // namespace sched::http
