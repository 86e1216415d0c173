#include "sched/common/host_port.hpp"

#include <arpa/inet.h>

#include <charconv>

namespace sched {

namespace {

bool NameChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
           c == '_';
}

// A name or an IPv4 address. Anything else (a space, a '/', a ':' of a list written with the
// wrong separator such as "h:1;h:2") cannot be a host and would otherwise surface later as a
// confusing resolver error.
bool ValidName(std::string_view host) {
    if (host.empty() || host.size() > 253) return false;
    for (const char c : host) {
        if (!NameChar(c)) return false;
    }
    return true;
}

// What goes in brackets must be an IPv6 address ("[h]:1" is a typo, not a name); a link-local
// address may carry its interface ("fe80::1%eth0").
bool ValidIpv6(std::string_view host) {
    const auto zone = host.find('%');
    const std::string address(host.substr(0, zone));
    if (zone != std::string_view::npos) {
        const auto name = host.substr(zone + 1);
        if (name.empty() || name.size() > 64) return false;
        for (const char c : name) {
            if (!NameChar(c)) return false;
        }
    }
    in6_addr v6{};
    return inet_pton(AF_INET6, address.c_str(), &v6) == 1;
}

Result<std::uint16_t> ParsePort(std::string_view text) {
    unsigned value = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ptr != text.data() + text.size() ||
        (ec != std::errc() && ec != std::errc::result_out_of_range)) {
        return InvalidArgument("the port is not a number");
    }
    if (ec != std::errc() || value > 65535) return InvalidArgument("port out of range 0..65535");
    return static_cast<std::uint16_t>(value);
}

}  // namespace

Result<Authority> Authority::Parse(std::string_view text) {
    Authority out;
    std::string_view rest;
    if (!text.empty() && text.front() == '[') {
        const auto close = text.find(']');
        if (close == std::string_view::npos) return InvalidArgument("no ']' after the IPv6 address");
        const auto host = text.substr(1, close - 1);
        if (!ValidIpv6(host)) return InvalidArgument("\"[" + std::string(host) + "]\" is not an IPv6 address");
        out.host = std::string(host);
        rest = text.substr(close + 1);
        if (!rest.empty() && rest.front() != ':') return InvalidArgument("no ':' before the port");
    } else {
        // An unbracketed IPv6 address is ambiguous ("::1:80"): the name check refuses its colons.
        const auto colon = text.find(':');
        const auto host = text.substr(0, colon);
        if (host.empty()) return InvalidArgument("no host");
        if (!ValidName(host)) {
            return InvalidArgument("the host is not a name or an IPv4 address (an IPv6 address goes in brackets)");
        }
        out.host = std::string(host);
        if (colon != std::string_view::npos) rest = text.substr(colon);
    }
    if (rest.empty()) return out;
    auto port = ParsePort(rest.substr(1));
    if (!port.ok()) return port.status();
    out.port = *port;
    return out;
}

Result<HostPort> HostPort::Parse(std::string_view text) {
    auto authority = Authority::Parse(text);
    if (authority.ok() && !authority->port) authority = InvalidArgument("no port");
    if (!authority.ok()) {
        return InvalidArgument("expected host:port (e.g. \"0.0.0.0:9999\", \"[::1]:8080\"), got \"" +
                               std::string(text) + "\": " + std::string(authority.status().message()));
    }
    return HostPort{authority->host, *authority->port};
}

std::string HostPort::ToString() const {
    const bool v6 = host.find(':') != std::string::npos;
    return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

HostPort HostPort::Reachable(std::string_view hostname) const {
    if (host.empty() || host == "0.0.0.0" || host == "::") return HostPort{std::string(hostname), port};
    return *this;
}

}  // namespace sched
