#pragma once

/// Where outgoing calls to addresses given by users (alert webhooks) may go.
///
/// By default a host that is, or resolves to, a loopback (127.0.0.0/8, ::1), link-local
/// (169.254.0.0/16, fe80::/10: cloud metadata services), unspecified (0.0.0.0/8, ::) or multicast
/// (224.0.0.0/4, ff00::/8) address is refused, as is the name `localhost` (and `*.localhost`).
/// An IPv6 address that carries an IPv4 one is judged as that IPv4 address: IPv4-mapped
/// (::ffff:127.0.0.1), IPv4-translated (::ffff:0:7f00:1), IPv4-compatible (::127.0.0.1), NAT64
/// (64:ff9b::7f00:1) and 6to4 (2002:7f00:1::).
/// Numeric IPv4 forms the system resolver accepts (127.1, 2130706433, 0x7f.1, 0177.0.0.1) are
/// read as the address they name, so they cannot slip past the check.
///
/// Two configured lists adjust the default (YAML, each at most kMaxEntries entries):
///
///     allow: ["127.0.0.1/32", "hooks.internal"]  # CIDRs or addresses, or host names: permitted
///                                                #   even when the default refuses them
///     deny: ["10.0.0.0/8", "metadata.internal"]  # refused even when nothing else refuses them
///
/// A host name entry matches the URL's host exactly (case-insensitive); an address or CIDR entry
/// matches the address (a literal host, or each resolved address). Deny wins over allow.
///
/// Callers check twice: the URL's host when it is stored (CheckHost: literal addresses and
/// names; a name's addresses are not known yet), and every address a name resolves to right
/// before connecting (CheckAddress, through ClientOptions::address_check), so a name that
/// resolves differently later (DNS rebinding) is still refused.
///
/// Immutable after construction; thread-safe.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/ip/network_v4.hpp>
#include <boost/asio/ip/network_v6.hpp>

#include "sched/common/config.hpp"
#include "sched/common/net.hpp"
#include "sched/common/status.hpp"

namespace sched::http {

/// Why `address` is refused by default: "loopback", "link-local", "unspecified" or "multicast";
/// nullopt when it is not. An IPv6 address carrying an IPv4 one is classified as that address.
std::optional<std::string_view> RestrictedAddressKind(const net::ip::address& address);

/// The address a URL host names literally, or nullopt for a host name: dotted IPv4, the other
/// numeric IPv4 forms of inet_aton (127.1, 2130706433, 0x7f000001, 0177.0.0.1), or IPv6 (without
/// brackets; a zone such as %eth0 is allowed).
std::optional<net::ip::address> NumericHost(std::string_view host);

class AddressPolicy {
  public:
    static constexpr std::size_t kMaxEntries = 256;

    /// The default policy: nothing allowed or denied beyond the built-in classes.
    AddressPolicy() = default;
    /// Parses `allow` and `deny` entries (CIDR, address or host name). Throws
    /// std::invalid_argument naming the bad entry.
    AddressPolicy(const std::vector<std::string>& allow, const std::vector<std::string>& deny);

    /// Reads the keys `allow` and `deny` of `node`. Throws ConfigError naming the key.
    static AddressPolicy FromYaml(const ConfigNode& node);

    /// The URL host as stored: ok, or kPermissionDenied saying why ("127.0.0.1 is a loopback
    /// address"). A host name not refused by name passes (its addresses are checked at connect).
    Status CheckHost(std::string_view host) const;
    /// One address `host` resolved to (or `host` itself when literal), right before connecting.
    Status CheckAddress(std::string_view host, const net::ip::address& address) const;

  private:
    struct Entries {
        std::vector<net::ip::network_v4> v4;
        std::vector<net::ip::network_v6> v6;
        std::vector<std::string> names;  ///< lower case
    };
    static Entries Parse(const std::vector<std::string>& entries, std::string_view list);
    static bool Matches(const Entries& e, const net::ip::address& address);
    static bool MatchesName(const Entries& e, std::string_view host);

    Entries allow_;
    Entries deny_;
};

}  // namespace sched::http
