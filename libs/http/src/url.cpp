#include "sched/http/url.hpp"

#include <unistd.h>

#include <array>
#include <charconv>

namespace sched::http {

namespace {

Status Bad(std::string_view text, std::string_view expected) {
    return InvalidArgument("expected " + std::string(expected) + ", got \"" + std::string(text) + "\"");
}

// Splits "host:port" or "[v6]:port"; `port` stays empty when there is no ':' part.
bool SplitAuthority(std::string_view text, std::string_view& host, std::string_view& port, bool& has_port) {
    has_port = false;
    if (!text.empty() && text.front() == '[') {
        const auto close = text.find(']');
        if (close == std::string_view::npos) return false;
        host = text.substr(1, close - 1);
        const auto rest = text.substr(close + 1);
        if (rest.empty()) return true;
        if (rest.front() != ':') return false;
        port = rest.substr(1);
        has_port = true;
        return true;
    }
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) {
        host = text;
        return true;
    }
    host = text.substr(0, colon);
    // An unbracketed IPv6 address is ambiguous ("::1:80"): require brackets.
    if (host.find(':') != std::string_view::npos) return false;
    port = text.substr(colon + 1);
    has_port = true;
    return true;
}

// Names, IPv4 and (unbracketed here) IPv6 addresses; anything else cannot be a host and would
// otherwise surface later as a confusing resolver error.
bool ValidHost(std::string_view host) {
    if (host.empty()) return false;
    for (const char c : host) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                        c == '-' || c == '_' || c == ':' || c == '%';
        if (!ok) return false;
    }
    return true;
}

bool ParsePort(std::string_view text, std::uint16_t& port) {
    if (text.empty() || text.size() > 5) return false;
    unsigned value = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size() || value > 65535) return false;
    port = static_cast<std::uint16_t>(value);
    return true;
}

std::string FormatAuthority(const std::string& host, std::uint16_t port) {
    const bool v6 = host.find(':') != std::string::npos;
    return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

}  // namespace

Result<HostPort> HostPort::Parse(std::string_view text) {
    constexpr std::string_view kExpected = "host:port (e.g. \"0.0.0.0:9999\", \"[::1]:8080\")";
    std::string_view host;
    std::string_view port;
    bool has_port = false;
    if (!SplitAuthority(text, host, port, has_port) || !ValidHost(host) || !has_port) return Bad(text, kExpected);
    HostPort out;
    out.host = std::string(host);
    if (!ParsePort(port, out.port)) return Bad(text, kExpected);
    return out;
}

std::string HostPort::ToString() const {
    return FormatAuthority(host, port);
}

HostPort HostPort::Reachable(std::string_view hostname) const {
    if (host.empty() || host == "0.0.0.0" || host == "::") return HostPort{std::string(hostname), port};
    return *this;
}

std::string LocalHostname() {
    std::array<char, 256> name{};
    if (gethostname(name.data(), name.size() - 1) != 0 || name[0] == '\0') return "localhost";
    return name.data();
}

Result<Url> Url::Parse(std::string_view text) {
    constexpr std::string_view kExpected = "an http or https URL like \"http://host:port/path\"";
    std::string_view rest = text;
    bool https = false;
    if (const auto scheme_end = rest.find("://"); scheme_end != std::string_view::npos) {
        const auto scheme = rest.substr(0, scheme_end);
        if (scheme != "http" && scheme != "https") return Bad(text, kExpected);
        https = scheme == "https";
        rest = rest.substr(scheme_end + 3);
    }
    const auto authority_end = rest.find_first_of("/?");
    const auto authority = rest.substr(0, authority_end);
    std::string_view host;
    std::string_view port;
    bool has_port = false;
    if (!SplitAuthority(authority, host, port, has_port) || !ValidHost(host)) return Bad(text, kExpected);
    Url url;
    url.host = std::string(host);
    url.https = https;
    url.port = https ? 443 : 80;
    if (has_port && !ParsePort(port, url.port)) return Bad(text, kExpected);
    if (authority_end != std::string_view::npos) {
        const auto target = rest.substr(authority_end);
        url.target = target.front() == '?' ? "/" + std::string(target) : std::string(target);
    }
    for (const char c : url.target) {
        // Characters that would break the request line or smuggle a header.
        if (c == ' ' || c == '\r' || c == '\n' || c == '\0') return Bad(text, kExpected);
    }
    return url;
}

std::string Url::Authority() const {
    return FormatAuthority(host, port);
}

std::string Url::Origin() const {
    return (https ? "https://" : "http://") + Authority();
}

std::string Url::ToString() const {
    return Origin() + target;
}

Url Url::WithPath(std::string_view path) const {
    Url out = *this;
    std::string base = target;
    if (const auto q = base.find('?'); q != std::string::npos) base.resize(q);
    while (!base.empty() && base.back() == '/') base.pop_back();
    out.target = base + (path.empty() || path.front() != '/' ? "/" : "") + std::string(path);
    return out;
}

}  // namespace sched::http
