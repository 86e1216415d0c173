#pragma once

/// Addresses as configured by operators: "host:port" for listening (HostPort, the project's one
/// address grammar in sched/common/host_port.hpp) and "http://host:port/path" for peers. Parsing
/// is strict and reports what was expected; no Asio types here so that option structs can use
/// these without pulling in Beast.

#include <cstdint>
#include <string>
#include <string_view>

#include "sched/common/host_port.hpp"
#include "sched/common/status.hpp"

namespace sched::http {

using sched::HostPort;

/// This machine's host name (gethostname); "localhost" when it has none. In a container: the
/// container's name, which its network resolves (compose service, Kubernetes pod).
std::string LocalHostname();

/// An http:// or https:// URL.
struct Url {
    std::string host;
    std::uint16_t port = 80;
    std::string target = "/";  ///< path and query, always starting with '/'
    bool https = false;        ///< TLS (HttpClient verifies the peer against ClientTlsOptions)

    /// Parses "http[s]://host[:port][/path[?query]]"; the scheme may be omitted
    /// ("host:port/path": http). The default port is 80 for http, 443 for https.
    static Result<Url> Parse(std::string_view text);
    /// "host:port": the Host header.
    std::string Authority() const;
    /// "http://host:port" or "https://host:port": the key of the client's connection pool.
    std::string Origin() const;
    /// "http[s]://host:port/target"
    std::string ToString() const;
    /// This URL with `path` appended to its target ("http://h:1/base" + "/v1/x" -> "http://h:1/base/v1/x").
    Url WithPath(std::string_view path) const;
};

}  // namespace sched::http
