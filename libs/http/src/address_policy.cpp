#include "sched/http/address_policy.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <stdexcept>

namespace sched::http {

namespace {

std::string Lower(std::string_view text) {
    std::string out(text);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c); });
    // "localhost." is the same name as "localhost" to the resolver.
    if (out.size() > 1 && out.back() == '.') out.pop_back();
    return out;
}

// An IPv6 address that carries an IPv4 one reaches (or may reach, through a translator) that
// IPv4 host, so it is judged (and matched) as that host: ::ffff:127.0.0.1 would otherwise be a
// way to loopback, 64:ff9b::a9fe:a9fe to a cloud metadata service. The forms: IPv4-mapped
// (::ffff:0:0/96), IPv4-translated (::ffff:0:0:0/96, SIIT), IPv4-compatible (::/96, deprecated;
// :: and ::1 are themselves), NAT64's well-known prefix (64:ff9b::/96), all with the IPv4
// address in the last 32 bits, and 6to4 (2002::/16, the IPv4 address in bits 16-47).
net::ip::address Unmapped(const net::ip::address& address) {
    if (!address.is_v6()) return address;
    const auto b = address.to_v6().to_bytes();
    const auto zero = [&](std::size_t from, std::size_t to) {
        return std::all_of(b.begin() + static_cast<std::ptrdiff_t>(from), b.begin() + static_cast<std::ptrdiff_t>(to),
                           [](unsigned char c) { return c == 0; });
    };
    const auto v4_at = [&](std::size_t i) {
        return net::ip::address(
            net::ip::address_v4(net::ip::address_v4::bytes_type{b[i], b[i + 1], b[i + 2], b[i + 3]}));
    };
    const bool mapped = zero(0, 10) && b[10] == 0xff && b[11] == 0xff;
    const bool translated = zero(0, 8) && b[8] == 0xff && b[9] == 0xff && b[10] == 0 && b[11] == 0;
    const bool compatible = zero(0, 12) && !zero(12, 15);  // not :: or ::1 (or ::0.0.0.x)
    const bool nat64 = b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && zero(4, 12);
    if (mapped || translated || compatible || nat64) return v4_at(12);
    if (b[0] == 0x20 && b[1] == 0x02) return v4_at(2);  // 6to4
    return address;
}

bool InV4(const net::ip::address_v4& a, const net::ip::network_v4& n) {
    return net::ip::network_v4(a, n.prefix_length()).network() == n.network();
}

bool InV6(net::ip::address_v6 a, const net::ip::network_v6& n) {
    a.scope_id(0);
    return net::ip::network_v6(a, n.prefix_length()).network() == n.network();
}

const net::ip::network_v4 kLinkLocalV4 = net::ip::make_network_v4("169.254.0.0/16");
const net::ip::network_v4 kThisNetworkV4 = net::ip::make_network_v4("0.0.0.0/8");

Status Refused(std::string message) {
    return {Code::kPermissionDenied, std::move(message)};
}

}  // namespace

std::optional<std::string_view> RestrictedAddressKind(const net::ip::address& address) {
    const auto a = Unmapped(address);
    if (a.is_v4()) {
        const auto v4 = a.to_v4();
        if (v4.is_loopback()) return "loopback";
        if (InV4(v4, kThisNetworkV4)) return "unspecified";
        if (InV4(v4, kLinkLocalV4)) return "link-local";
        if (v4.is_multicast()) return "multicast";
        return std::nullopt;
    }
    const auto v6 = a.to_v6();
    if (v6.is_loopback()) return "loopback";
    if (v6.is_unspecified()) return "unspecified";
    if (v6.is_link_local()) return "link-local";
    if (v6.is_multicast()) return "multicast";
    return std::nullopt;
}

std::optional<net::ip::address> NumericHost(std::string_view host) {
    boost::system::error_code ec;
    const std::string text(host);
    auto address = net::ip::make_address(text, ec);
    if (!ec) return address;
    // The resolver reads these forms as addresses (glibc's getaddrinfo goes through inet_aton),
    // so the check must read them the same way rather than take them for names.
    if (host.find(':') != std::string_view::npos) return std::nullopt;
    in_addr parsed{};
    if (::inet_aton(text.c_str(), &parsed) == 0) return std::nullopt;
    return net::ip::address_v4(ntohl(parsed.s_addr));
}

AddressPolicy::AddressPolicy(const std::vector<std::string>& allow, const std::vector<std::string>& deny)
    : allow_(Parse(allow, "allow")), deny_(Parse(deny, "deny")) {}

AddressPolicy::Entries AddressPolicy::Parse(const std::vector<std::string>& entries, std::string_view list) {
    if (entries.size() > kMaxEntries) {
        throw std::invalid_argument(std::string(list) + ": at most " + std::to_string(kMaxEntries) + " entries");
    }
    Entries out;
    for (const auto& entry : entries) {
        const auto bad = [&](const std::string& why) {
            return std::invalid_argument(std::string(list) + ": \"" + entry + "\": " + why);
        };
        if (entry.empty() || entry.size() > 255) throw bad("expected a CIDR, an address or a host name");
        boost::system::error_code ec;
        if (entry.find('/') != std::string::npos) {
            if (entry.find(':') != std::string::npos) {
                out.v6.push_back(net::ip::make_network_v6(entry, ec));
            } else {
                out.v4.push_back(net::ip::make_network_v4(entry, ec));
            }
            if (ec) throw bad("not a CIDR (like 10.0.0.0/8 or fd00::/8)");
            continue;
        }
        if (auto address = net::ip::make_address(entry, ec); !ec) {
            address = Unmapped(address);
            if (address.is_v4()) {
                out.v4.emplace_back(address.to_v4(), 32);
            } else {
                out.v6.emplace_back(address.to_v6(), 128);
            }
            continue;
        }
        for (const char c : entry) {
            const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                            c == '-' || c == '_';
            if (!ok) throw bad("expected a CIDR, an address or a host name");
        }
        out.names.push_back(Lower(entry));
    }
    return out;
}

AddressPolicy AddressPolicy::FromYaml(const ConfigNode& node) {
    const auto allow = node.StringList("allow", {});
    const auto deny = node.StringList("deny", {});
    try {
        return {allow, deny};
    } catch (const std::invalid_argument& e) {
        const std::string what = e.what();
        const std::string key = what.starts_with("allow") ? "allow" : "deny";
        throw ConfigError(node.path().empty() ? key : node.path() + "." + key, what.substr(what.find(':') + 2));
    }
}

bool AddressPolicy::Matches(const Entries& e, const net::ip::address& address) {
    if (address.is_v4()) {
        return std::any_of(e.v4.begin(), e.v4.end(), [&](const auto& n) { return InV4(address.to_v4(), n); });
    }
    return std::any_of(e.v6.begin(), e.v6.end(), [&](const auto& n) { return InV6(address.to_v6(), n); });
}

bool AddressPolicy::MatchesName(const Entries& e, std::string_view host) {
    const std::string name = Lower(host);
    return std::find(e.names.begin(), e.names.end(), name) != e.names.end();
}

Status AddressPolicy::CheckHost(std::string_view host) const {
    if (MatchesName(deny_, host)) return Refused(std::string(host) + " is on the deny list");
    if (MatchesName(allow_, host)) return Status::Ok();
    if (auto address = NumericHost(host)) return CheckAddress(host, *address);
    const std::string name = Lower(host);
    if (name == "localhost" || name.ends_with(".localhost")) return Refused(name + " is a loopback name");
    return Status::Ok();
}

Status AddressPolicy::CheckAddress(std::string_view host, const net::ip::address& address) const {
    const auto a = Unmapped(address);
    if (MatchesName(deny_, host) || Matches(deny_, a)) {
        return Refused(a.to_string() + " (" + std::string(host) + ") is on the deny list");
    }
    if (MatchesName(allow_, host) || Matches(allow_, a)) return Status::Ok();
    if (const auto kind = RestrictedAddressKind(a)) {
        return Refused(a.to_string() + " (" + std::string(host) + ") is a " + std::string(*kind) +
                       " address (allow it with an allow-list entry)");
    }
    return Status::Ok();
}

}  // namespace sched::http
