#pragma once

/// The distributed-lock API (docs/protocol.md "Locks"), between the client SDK's lock client
/// (which writes the requests and reads the holding) and the web module's lock routes (which read
/// the requests and write the holding). `app` names the app's lock namespace; absent or null is
/// the global one (cluster tokens only).
///
///     POST /api/v1/locks/{key}/acquire {"app": "billing", "lease_ms": 30000, "wait_ms": 5000}
///       -> 200 {"key": "k", "app": "billing", "owner": "3f2a...", "epoch": 7, "lease_ms": 30000,
///               "waited_ms": 12, "lease_until_ms": 1764000030012}      (lease_until_ms may be null)
///     POST /api/v1/locks/{key}/extend  {"app": "billing", "owner": "3f2a...", "epoch": 7, "lease_ms": 30000}
///       -> 200 {"key": "k", "app": "billing", "owner": "3f2a...", "epoch": 7, "lease_ms": 30000,
///               "lease_until_ms": 1764000045000}
///     POST /api/v1/locks/{key}/release {"app": "billing", "owner": "3f2a...", "epoch": 7}
///       -> 200 {"key": "k", "app": "billing", "released": true, "epoch": 8}  (epoch may be null)
///     GET  /api/v1/locks/{key}?app=billing
///       -> 200 {"key": "k", "app": "billing", "held": true, "owner": "3f2a...", "epoch": 7,
///               "lease_until_ms": 1764000030012, "remaining_ms": 29000, "now_ms": 1764000001012}
///     (a 409 carries the same state under "lock", beside the uniform error body)
///
/// Requests are read strictly (an unknown field is a 400 naming it; a lock request from a newer
/// SDK must not be half understood); answers leniently (a newer server may say more).

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "sched/protocol/parsed.hpp"

namespace sched::protocol {

/// The server's bounds on a request (its max-lease and max-wait); the defaults bound nothing.
struct LockLimits {
    std::int64_t max_lease_ms = std::numeric_limits<std::int64_t>::max();
    std::int64_t max_wait_ms = std::numeric_limits<std::int64_t>::max();
};

struct LockAcquireRequest {
    std::optional<std::string> app;  ///< nullopt: the global namespace (written as no field)
    std::int64_t lease_ms = 0;       ///< 1..max_lease_ms
    std::int64_t wait_ms = 0;        ///< 0..max_wait_ms: how long to wait for a holder to let go

    friend bool operator==(const LockAcquireRequest&, const LockAcquireRequest&) = default;
};

nlohmann::json ToJson(const LockAcquireRequest& request);
Parsed<LockAcquireRequest> ParseLockAcquireRequest(const nlohmann::json& body, const LockLimits& limits = {});

struct LockExtendRequest {
    std::optional<std::string> app;
    std::string owner;       ///< the holding's owner, as acquire answered it
    std::int64_t epoch = 0;  ///< the holding's epoch (>= 1)
    std::int64_t lease_ms = 0;

    friend bool operator==(const LockExtendRequest&, const LockExtendRequest&) = default;
};

nlohmann::json ToJson(const LockExtendRequest& request);
Parsed<LockExtendRequest> ParseLockExtendRequest(const nlohmann::json& body, const LockLimits& limits = {});

struct LockReleaseRequest {
    std::optional<std::string> app;
    std::string owner;
    std::int64_t epoch = 0;

    friend bool operator==(const LockReleaseRequest&, const LockReleaseRequest&) = default;
};

nlohmann::json ToJson(const LockReleaseRequest& request);
Parsed<LockReleaseRequest> ParseLockReleaseRequest(const nlohmann::json& body);

/// The 200 answer to acquire and extend: the lock is the caller's.
struct LockHolding {
    std::string key;
    std::optional<std::string> app;  ///< written as null for the global namespace
    std::string owner;
    std::int64_t epoch = 0;
    std::int64_t lease_ms = 0;
    /// The acquire's wait until the attempt that took the lock (acquire only; not written when
    /// nullopt).
    std::optional<std::int64_t> waited_ms;
    /// The lease's end on the database clock, epoch ms (null when unknown).
    std::optional<std::int64_t> lease_until_ms;

    friend bool operator==(const LockHolding&, const LockHolding&) = default;
};

nlohmann::json ToJson(const LockHolding& holding);
/// Requires owner (non-empty) and epoch (>= 1); the rest is read when present and well formed.
Parsed<LockHolding> ReadLockHolding(const nlohmann::json& body);

/// The 200 answer to release.
struct LockReleased {
    std::string key;
    std::optional<std::string> app;
    std::optional<std::int64_t> epoch;  ///< the lock's epoch now (null when unknown)

    friend bool operator==(const LockReleased&, const LockReleased&) = default;
};

nlohmann::json ToJson(const LockReleased& released);

/// A lock's state on the database clock (inspect, and the "lock" of a 409).
struct LockState {
    std::string key;
    std::optional<std::string> app;
    bool held = false;                 ///< an owner whose lease has not ended
    std::optional<std::string> owner;  ///< the last holder (null: never held, or released)
    std::int64_t epoch = 0;
    std::int64_t lease_until_ms = 0;
    std::int64_t remaining_ms = 0;  ///< 0 unless held
    std::int64_t now_ms = 0;

    friend bool operator==(const LockState&, const LockState&) = default;
};

nlohmann::json ToJson(const LockState& state);

}  // namespace sched::protocol
