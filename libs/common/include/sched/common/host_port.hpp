#pragma once

/// Network addresses as operators write them: "host:port", the host a name, an IPv4 address or an
/// IPv6 address in brackets ("[::1]:8080"). One grammar for every address the project reads
/// (listen addresses, peers, the authority of a URL, Redis servers), so the same text is accepted
/// or refused the same way everywhere. No Asio types: option structs use these.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sched/common/status.hpp"

namespace sched {

/// "host" or "host:port", split and checked: the host a name or an IPv4 address (letters,
/// digits, '.', '-', '_', at most 253 characters), or an IPv6 address in brackets (with an
/// optional "%zone"); the port, when written, 0..65535.
struct Authority {
    std::string host;                   ///< without brackets
    std::optional<std::uint16_t> port;  ///< none written
    /// kInvalidArgument saying what is wrong (the host, the brackets, the port) when `text` is not
    /// an authority.
    static Result<Authority> Parse(std::string_view text);
};

/// A host and a port.
struct HostPort {
    std::string host;  ///< without brackets
    std::uint16_t port = 0;

    /// Parses "host:port" (an Authority with its port required). kInvalidArgument says what was
    /// expected and what is wrong.
    static Result<HostPort> Parse(std::string_view text);
    /// "host:port", with brackets around an IPv6 host.
    std::string ToString() const;
    /// This address as a peer can call it: a wildcard host ("0.0.0.0", "::", "") names every
    /// interface, which no peer can dial, so it becomes `hostname`; any other host is kept.
    HostPort Reachable(std::string_view hostname) const;

    friend bool operator==(const HostPort&, const HostPort&) = default;
};

}  // namespace sched
