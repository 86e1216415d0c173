#include "sched/http/url.hpp"

#include <unistd.h>

#include <array>
#include <charconv>
#include <string>

namespace sched::http {

namespace {

Status Bad(std::string_view text, std::string_view expected) {
    return InvalidArgument("expected " + std::string(expected) + ", got \"" + std::string(text) + "\"");
}

}  // namespace

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
    const auto parsed = sched::Authority::Parse(authority);
    if (!parsed.ok()) {
        // What is wrong with the host or port, not only what was expected.
        return InvalidArgument(Bad(text, kExpected).message() + ": " + std::string(parsed.status().message()));
    }
    Url url;
    url.host = parsed->host;
    url.https = https;
    url.port = parsed->port.value_or(https ? 443 : 80);
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
    return HostPort{host, port}.ToString();
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
