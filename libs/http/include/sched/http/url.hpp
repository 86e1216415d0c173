#pragma once

/// Addresses as configured by operators: "host:port" for listening and "http://host:port/path"
/// for peers. Parsing is strict and reports what was expected; no Asio types here so that option
/// structs can use these without pulling in Beast.

#include <cstdint>
#include <string>
#include <string_view>

#include "sched/common/status.hpp"

namespace sched::http {

/// A host and a port. The host is a name, an IPv4 address or an IPv6 address (written in
/// brackets in text: "[::1]:8080").
struct HostPort {
    std::string host;
    std::uint16_t port = 0;

    /// Parses "host:port" (port 0..65535, required). kInvalidArgument says what was expected.
    static Result<HostPort> Parse(std::string_view text);
    /// "host:port", with brackets around an IPv6 host.
    std::string ToString() const;
    /// This address as a peer can call it: a wildcard host ("0.0.0.0", "::", "") names every
    /// interface, which no peer can dial, so it becomes `hostname`; any other host is kept.
    HostPort Reachable(std::string_view hostname) const;
};

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
