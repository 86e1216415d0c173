#pragma once

/// The run call a node makes on an executor instance (docs/protocol.md "Routes"), as one type
/// that both sides use: the trigger node's slave writes it with ToJson, the client SDK reads it
/// with ParseRunRequest.
///
///     POST /v1/run  {"fire_id": 7, "job_id": 3, "attempt": 0, "epoch": 12, "handler": "report",
///                    "params": {...}, "scheduled_ms": 1764000000000, "timeout_ms": 60000,
///                    "shard_index": 0, "shard_total": 1, "block_strategy": "serial",
///                    "callback_url": "http://10.0.0.5:7071", "start_in_ms": 140,
///                    "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
///                    "tracestate": "vendor=opaque"}
///     POST /v1/kill {"fire_id": 7}                      (a kill by request: the API, an operator)
///     POST /v1/kill {"fire_id": 7, "reason": "timeout"}   (the node's watch of the job timeout)
///
/// Reading is lenient about fields it does not know (a newer node may send more; an executor
/// must still run the fire) and strict about the ones it knows (type and range).

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "sched/common/job_vocabulary.hpp"
#include "sched/common/name_table.hpp"
#include "sched/protocol/parsed.hpp"

namespace sched::protocol {

/// The job's `block_strategy` and `overlap` travel as names from the job vocabulary's one table
/// (sched/common/job_vocabulary.hpp).
using sched::BlockStrategy;
using sched::BlockStrategyName;
using sched::kBlockStrategyNames;

/// The longest run timeout a run may carry (7 days).
inline constexpr std::int64_t kMaxTimeoutMs = 7LL * 24 * 3600 * 1000;
/// The longest a run may be held before it starts (`start_in_ms`; a node sends runs at most
/// twice its claim-ahead, at most 2 s, before they are due).
inline constexpr std::int64_t kMaxStartInMs = 10'000;

/// One run of one fire, as dispatched.
struct RunRequest {
    std::int64_t fire_id = 0;
    std::int64_t job_id = 0;
    std::int64_t attempt = 0;
    std::int64_t epoch = 0;  ///< the lease epoch the fire was claimed under (fencing)
    std::string handler;
    nlohmann::json params = nlohmann::json::object();
    std::int64_t scheduled_ms = 0;  ///< the fire's scheduled time, epoch milliseconds
    std::int64_t timeout_ms = 0;    ///< 0 = no timeout
    std::int64_t shard_index = 0;   ///< < shard_total
    std::int64_t shard_total = 1;
    /// One of serial, discard-later, cover-early (ExecutorStrategy): what an executor that does
    /// not read `overlap` does with a second run of the job it already runs.
    BlockStrategy block_strategy = BlockStrategy::kSerial;
    /// The job's overlap policy, sent by nodes that enforce it cluster-wide where fires are
    /// claimed: the run is within the job's limit, so the executor runs it on arrival, without
    /// judging `block_strategy` (absent: judge it, as before such nodes).
    std::optional<BlockStrategy> overlap;
    std::string callback_url;  ///< where the result goes first ("" = the web endpoints; not sent)
    /// Start the run this long after the request arrived (0 = at once; not sent). Nodes send it
    /// only on POST /v1/runs-ahead (sched/protocol/run_batch.hpp): an executor serving that
    /// route honours it, one before it would ignore the field and start the run early.
    std::int64_t start_in_ms = 0;
    /// The run's W3C trace context (sched/protocol/trace_context.hpp: FireTrace), "" = not sent.
    std::string traceparent;
    /// The W3C tracestate a manual trigger's caller sent with its traceparent, forwarded
    /// unchanged (CheckTraceState: at most kMaxTraceStateLength); "" = not sent.
    std::string tracestate;

    friend bool operator==(const RunRequest&, const RunRequest&) = default;
};

nlohmann::json ToJson(const RunRequest& run);
/// Reads a /v1/run body (or one item of /v1/runs with `prefix` "runs[i]"). Required:
/// fire_id, job_id, attempt, epoch, handler; callback_url, when present, must be an http(s) URL;
/// start_in_ms, when present, 0..kMaxStartInMs; traceparent, when present, a valid W3C
/// traceparent (ParseTraceParent); tracestate, when present, a valid one (CheckTraceState),
/// dropped without a traceparent (as the trigger route does).
Parsed<RunRequest> ParseRunRequest(const nlohmann::json& body, const std::string& prefix = "");

/// Why a node asks an executor to stop a fire (the kill's `reason`).
enum class KillReason {
    kRequest,  ///< "request": someone asked (the API's kill); the fire ends `killed`
    /// "timeout": the node's watch of the job's timeout expired. The executor's own timeout counts
    /// from the handler's start, so it ends the run `timeout` only once that has passed too, and
    /// otherwise says how long it still has (KillAnswer::timeout_in_ms).
    kTimeout,
};

inline constexpr auto kKillReasonNames = MakeNameTable<KillReason>({"request", "timeout"});
/// The longest `reason` a kill may carry; longer is a 400 naming it.
inline constexpr std::size_t kMaxKillReasonLength = 64;

/// POST /v1/kill.
struct KillRequest {
    std::int64_t fire_id = 0;
    /// Not sent for kRequest, so a plain kill's body is what it always was. Read leniently: a
    /// reason this executor does not know (a newer node's) is a kill by request, so a kill is
    /// never refused for its reason; a reason that is not a string, or longer than
    /// kMaxKillReasonLength, is a 400 naming `reason`.
    KillReason reason = KillReason::kRequest;

    friend bool operator==(const KillRequest&, const KillRequest&) = default;
};

nlohmann::json ToJson(const KillRequest& kill);
Parsed<KillRequest> ParseKillRequest(const nlohmann::json& body);

}  // namespace sched::protocol
