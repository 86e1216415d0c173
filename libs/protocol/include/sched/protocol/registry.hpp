#pragma once

/// The registry calls an executor instance makes on the cluster (docs/protocol.md "Routes"),
/// written by the client SDK, read by the web module, strict about unknown fields:
///
///     POST /api/v1/registry/heartbeat  {"app": "billing", "address": "10.0.0.9:9100",
///                                       "handlers": ["report"], "capacity": 16, "running": 2}
///     POST /api/v1/registry/deregister {"app": "billing", "address": "10.0.0.9:9100"}
///
/// The same body, plus the instance's highest epoch seen, answers `GET /v1/beat` (BeatAnswer):
///
///     GET /v1/beat -> 200 {"app": "billing", "address": "10.0.0.9:9100", "handlers": ["report"],
///                          "capacity": 16, "running": 2, "epoch": 12}

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sched/protocol/parsed.hpp"

namespace sched::protocol {

/// The routes on the cluster (web or trigger nodes) these bodies are posted to.
inline constexpr std::string_view kHeartbeatPath = "/api/v1/registry/heartbeat";
inline constexpr std::string_view kDeregisterPath = "/api/v1/registry/deregister";

inline constexpr std::size_t kMaxAddressChars = 255;
inline constexpr std::size_t kMaxHandlers = 1000;
inline constexpr std::size_t kMaxHandlerNameBytes = 128;
inline constexpr std::int64_t kMaxCapacity = 1'000'000;

struct Heartbeat {
    std::string app;
    std::string address;  ///< "host:port" the nodes dial
    std::vector<std::string> handlers;
    std::int64_t capacity = 0;  ///< runs at once (0 = unbounded)
    std::int64_t running = 0;

    friend bool operator==(const Heartbeat&, const Heartbeat&) = default;
};

nlohmann::json ToJson(const Heartbeat& beat);
Parsed<Heartbeat> ParseHeartbeat(const nlohmann::json& body);

/// GET /v1/beat's answer: the instance's heartbeat and the highest run epoch it has seen (0
/// before any run).
struct BeatAnswer {
    Heartbeat heartbeat;
    std::int64_t epoch = 0;

    friend bool operator==(const BeatAnswer&, const BeatAnswer&) = default;
};

nlohmann::json ToJson(const BeatAnswer& beat);
/// As strict as ParseHeartbeat, with `epoch` (>= 0, default 0) the one field more.
Parsed<BeatAnswer> ReadBeatAnswer(const nlohmann::json& body);

struct Deregister {
    std::string app;
    std::string address;

    friend bool operator==(const Deregister&, const Deregister&) = default;
};

nlohmann::json ToJson(const Deregister& d);
Parsed<Deregister> ParseDeregister(const nlohmann::json& body);

/// Why `address` is not an executor address ("host:port", port 1..65535, at most
/// kMaxAddressChars of [A-Za-z0-9.-_:[]]), or nullopt.
std::optional<std::string> AddressProblem(const std::string& address);

}  // namespace sched::protocol
