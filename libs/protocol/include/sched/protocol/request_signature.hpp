#pragma once

/// Request signatures, version 1: how a trigger or web node proves to an executor (a service
/// embedding the client SDK, or one written in any language) that a call to its `/v1/*` API
/// comes from the cluster. Nodes never send an executor a bearer token; they sign every call
/// with the app's signing secret (HMAC-SHA256), and the executor checks the signature, the key
/// id and the time before it does anything else. docs/protocol.md ("Security") is the
/// specification for other languages; this header is its one implementation here, used by the
/// nodes (signing) and by the SDK (verifying).
///
/// Canonical string (UTF-8 bytes, fields joined by one "\n", no trailing newline):
///
///     v1
///     <METHOD>                  upper case, "POST"
///     <target>                  path and query exactly as sent: "/v1/log?fire_id=3&from_line=0"
///     <timestamp>               epoch milliseconds of the cluster (database) clock, decimal
///     <key id>                  as in X-Sched-Key-Id
///     <body hash>               SHA-256 of the body bytes, 64 lower-case hex ("e3b0..." for none)
///
/// Headers: `X-Sched-Key-Id: <key id>`, `X-Sched-Timestamp: <timestamp>`,
/// `X-Sched-Signature: v1=<64 lower-case hex of HMAC-SHA256(secret, canonical string)>`; the
/// secret's bytes are the HMAC key as given (the 64 hex characters themselves, not decoded).
///
/// Thread-safe (pure functions).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sched/common/duration.hpp"
#include "sched/common/status.hpp"
#include "sched/http/message.hpp"

namespace sched::protocol {

inline constexpr std::string_view kKeyIdHeader = "X-Sched-Key-Id";
inline constexpr std::string_view kTimestampHeader = "X-Sched-Timestamp";
inline constexpr std::string_view kSignatureHeader = "X-Sched-Signature";
/// The scheme version, the canonical string's first line and the signature's prefix ("v1=").
inline constexpr std::string_view kSignatureVersion = "v1";

/// One signing secret of an app. `id` is public (sent with every call), `secret` never leaves
/// the cluster except in the app's heartbeat answers.
struct SigningKey {
    std::string id;
    std::string secret;
};

/// The canonical string above. `method` is upper-cased here; `target` is used as given.
std::string CanonicalString(std::string_view method, std::string_view target, std::int64_t timestamp_ms,
                            std::string_view key_id, std::string_view body);

/// "v1=" + hex HMAC-SHA256(key.secret, CanonicalString(...)).
std::string Signature(const SigningKey& key, std::string_view method, std::string_view target,
                      std::int64_t timestamp_ms, std::string_view body);

/// The three headers to add to a call, in the order above.
std::vector<std::pair<std::string, std::string>> SignatureHeaders(const SigningKey& key, std::string_view method,
                                                                  std::string_view target, std::int64_t timestamp_ms,
                                                                  std::string_view body);

/// What the verifier reads from a request.
struct SignedRequest {
    std::string_view method;
    std::string_view target;
    std::string_view body;
    std::optional<std::string_view> key_id;     ///< X-Sched-Key-Id
    std::optional<std::string_view> timestamp;  ///< X-Sched-Timestamp
    std::optional<std::string_view> signature;  ///< X-Sched-Signature
};

/// What `req` carries for the verifier: its method as received, target, body and the three
/// headers. The views point into `req`, which must outlive the result.
SignedRequest SignedRequestOf(const http::Request& req);

/// Checks a request, in this order (each failure is kUnauthenticated with a message naming
/// the header and why, and never the expected signature):
///  1. the three headers are present, the signature starts with "v1=" and the timestamp is a
///     decimal integer;
///  2. |timestamp - now_ms| <= window, where `now_ms` is the verifier's estimate of the cluster
///     clock (its own clock plus the offset it learnt from heartbeats);
///  3. the key id is one of `keys` (an app holds at most a few: the current one and the next or
///     previous one during a rotation);
///  4. the signature equals the expected one (constant-time comparison).
/// A request inside the window may be replayed verbatim to the instance it was sent to; what
/// makes that harmless is the executor's idempotency (a run is keyed by (fire_id, attempt),
/// docs/protocol.md), and VerifyAddressee keeps it from every other instance of the app.
Status VerifySignature(const SignedRequest& request, const std::vector<SigningKey>& keys, std::int64_t now_ms,
                       Micros window);

/// The query parameter that addresses a call to one instance. Nodes append
/// `instance=<host:port>` - the address the instance registered, which is where the call goes -
/// to every call's target. The signature covers the target, so the call is bound to that
/// instance without a new signature version: an executor that does not know the parameter
/// ignores it (and stays open to replays across its app's instances, as before it), one that
/// does refuses a call addressed to another instance (VerifyAddressee).
inline constexpr std::string_view kInstanceParam = "instance";
/// The longest instance address a target may name (a registered address is host:port, at most
/// 255 characters of host).
inline constexpr std::size_t kMaxInstanceLength = 300;

/// `target` ("/v1/run", "/v1/log?fire_id=3") with `instance=<instance>` appended as its last
/// query parameter; every byte of `instance` but letters, digits, "-._~" and ':' is
/// percent-encoded ("10.0.0.7:9999" stays as it is, "[::1]:9999" becomes "%5B::1%5D:9999").
std::string AddressedTarget(std::string_view target, std::string_view instance);

/// Checks, after VerifySignature, that a call's `target` is addressed to this instance, which
/// registered `instance`. OK when the target names exactly `instance` (percent-decoded, compared
/// byte for byte), and when it names no instance at all (a node older than the parameter: its
/// calls still verify). kUnauthenticated, with a message naming the parameter, when it names
/// another instance (a call captured on its way to another instance of the app and replayed
/// here), names one more than once, or is not percent-encoded properly.
Status VerifyAddressee(std::string_view target, std::string_view instance);

}  // namespace sched::protocol
