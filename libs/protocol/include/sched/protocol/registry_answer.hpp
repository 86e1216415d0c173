#pragma once

/// The web module's answers to the registry calls (registry.hpp; docs/protocol.md "Key
/// delivery"), written by the web module, read by the client SDK:
///
///     POST /api/v1/registry/heartbeat  -> 200 {"registered": true,
///                                              "signing": {"keys": [{"id": "k1", "secret": "...",
///                                                                    "active_from_ms": 1764100000000}],
///                                                          "server_time_ms": 1764100000123},
///                                              "capabilities": ["result-traceparent"]}
///     POST /api/v1/registry/deregister -> 200 {"deregistered": true}
///
/// The reader is lenient where a server may be older or newer (no `signing` object, unknown
/// fields) and strict about the keys themselves: a malformed `signing` object is refused whole,
/// so that one bad answer never replaces keys that work.
///
/// `capabilities` names what the answering node's routes accept beyond what every node of the
/// protocol accepts: an SDK uses such a field only once every web endpoint it posts to named it,
/// so a new SDK keeps working against an old node (which names none) and an old SDK against a
/// new one (which needs none).

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sched/protocol/parsed.hpp"

namespace sched::protocol {

/// More keys than an app ever holds at once (the current one and those still in their grace).
inline constexpr std::size_t kMaxDeliveredKeys = 8;
/// Bytes of a key's id or secret.
inline constexpr std::size_t kMaxKeyFieldBytes = 256;

/// One key an app's instances must accept.
struct DeliveredKey {
    std::string id;
    std::string secret;
    std::int64_t active_from_ms = 0;  ///< when nodes start signing with it (database clock)

    friend bool operator==(const DeliveredKey&, const DeliveredKey&) = default;
};

/// Every key to accept, and the database clock when the answer was made (the instance keeps
/// its clock offset to it).
struct KeyDelivery {
    std::vector<DeliveredKey> keys;
    std::int64_t server_time_ms = 0;

    friend bool operator==(const KeyDelivery&, const KeyDelivery&) = default;
};

/// A result (run_result.hpp) may carry the `traceparent` its run ran under.
inline constexpr std::string_view kCapabilityResultTraceparent = "result-traceparent";
/// Every capability of this build's routes, as its web module advertises them.
inline constexpr std::array<std::string_view, 1> kCapabilities = {kCapabilityResultTraceparent};
/// The reader keeps at most this many names, each at most kMaxCapabilityChars (others are
/// skipped: a newer server's answer is never refused for them).
inline constexpr std::size_t kMaxCapabilities = 32;
inline constexpr std::size_t kMaxCapabilityChars = 64;

struct HeartbeatAnswer {
    std::optional<KeyDelivery> signing;     ///< absent from an older server: keep the held keys
    std::vector<std::string> capabilities;  ///< absent from an older server: none

    bool Has(std::string_view capability) const {
        return std::find(capabilities.begin(), capabilities.end(), capability) != capabilities.end();
    }

    friend bool operator==(const HeartbeatAnswer&, const HeartbeatAnswer&) = default;
};

/// The capabilities this build advertises (kCapabilities as strings).
std::vector<std::string> OwnCapabilities();

nlohmann::json ToJson(const HeartbeatAnswer& answer);
/// Errors name the field as `signing.keys[1].secret`.
Parsed<HeartbeatAnswer> ReadHeartbeatAnswer(const nlohmann::json& body);

struct DeregisterAnswer {};

nlohmann::json ToJson(const DeregisterAnswer& answer);

}  // namespace sched::protocol
