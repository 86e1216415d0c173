#pragma once

/// The W3C Trace Context (https://www.w3.org/TR/trace-context/) of a fire: every run a node
/// sends carries a `traceparent`, so a handler's work (its log lines, its own spans and the calls
/// it makes) can be tied to the fire that caused it.
///
///     traceparent: 00-<trace id: 32 hex>-<parent span id: 16 hex>-01
///
/// The ids are derived from the fire, not stored: every node computes the same trace id for a
/// fire (whichever sends it, before or after a failover) and a run's span id from its attempt, so
/// retries of one fire are siblings in one trace. The trace id is the first 16 bytes of
/// SHA-256("sched-fire/<fire id>/<job id>/<scheduled ms>"), the span id the first 8 bytes of
/// SHA-256("sched-run/<trace id>/<attempt>"): random-looking, as the recommendation asks, and
/// never all zeros (an all-zero id is invalid; one would be replaced by ...01).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sched::protocol {

/// The length of a version-00 traceparent.
inline constexpr std::size_t kTraceParentLength = 55;

struct TraceContext {
    std::string trace_id;  ///< 32 lower-case hex digits, not all zero
    std::string span_id;   ///< 16 lower-case hex digits, not all zero
    bool sampled = true;

    /// "00-<trace_id>-<span_id>-01" (or -00 when not sampled).
    std::string TraceParent() const;

    friend bool operator==(const TraceContext&, const TraceContext&) = default;
};

/// The trace of `fire_id` (of `job_id`, due at `scheduled_ms`), with the span of its `attempt`.
TraceContext FireTrace(std::int64_t fire_id, std::int64_t job_id, std::int64_t scheduled_ms, std::int64_t attempt);

/// Reads a traceparent header value. Version 00 must be exactly 55 characters; a later version
/// (not ff) may be longer, and its first 55 are read as version 00 (the specification's rule for
/// versions a reader does not know). nullopt for anything else: upper-case hex, all-zero ids,
/// a missing dash, a longer version-00 value.
std::optional<TraceContext> ParseTraceParent(std::string_view value);

/// The longest tracestate value kept (the specification's limit a vendor must propagate).
inline constexpr std::size_t kMaxTraceStateLength = 512;

/// Checks a tracestate header value: at most kMaxTraceStateLength characters and 32 list
/// members, each `key=value` (key: lower-case letters, digits, `_-*/` and at most one `@`,
/// starting with a letter or digit, up to 256; value: 1..256 printable ASCII characters other
/// than `,` and `=`, not ending in a space); empty members and spaces around members allowed.
/// nullopt when valid, else what is wrong.
std::optional<std::string> CheckTraceState(std::string_view value);

}  // namespace sched::protocol
