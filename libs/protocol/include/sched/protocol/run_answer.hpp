#pragma once

/// What an executor answers to one run, and the batch answer (docs/protocol.md "Routes"): the
/// client SDK writes them, the trigger node's slave reads them.
///
///     POST /v1/run  -> 202 {"accepted": true, "fire_id": 7, "state": "running"}   (or "queued")
///                   -> 202 {"accepted": true, "duplicate": true, "fire_id": 7}      (seen before)
///                   -> 4xx/5xx, the uniform error body (sched/http/error_body.hpp), e.g.
///                      409 {"error": {"code": "aborted", ..., "field": "epoch"}}
///     POST /v1/runs -> 200 {"results": [<the /v1/run answer plus its "status">, ...]}
///     POST /v1/kill -> 200 {"fire_id": 7, "state": "running"}, or 404 naming fire_id
///                   -> 200 {"fire_id": 7, "state": "queued", "timeout_in_ms": 2000} (a timeout kill
///                      the executor did not act on: the run's own timeout has not passed)
///     POST /v1/idle-beat {"job_id": 3} -> 200 {"job_id": 3, "idle": true}, or 409 naming job_id
///
/// Reading is lenient about fields it does not know (a newer executor may say more).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sched/common/name_table.hpp"
#include "sched/http/error_body.hpp"
#include "sched/http/message.hpp"
#include "sched/protocol/parsed.hpp"

namespace sched::protocol {

/// The executor's routes, relative to an instance's "http://host:port".
inline constexpr std::string_view kRunPath = "/v1/run";
inline constexpr std::string_view kKillPath = "/v1/kill";
inline constexpr std::string_view kBeatPath = "/v1/beat";
inline constexpr std::string_view kIdleBeatPath = "/v1/idle-beat";
inline constexpr std::string_view kLogPath = "/v1/log";

/// Where an admitted run is on the instance.
enum class RunState {
    kRunning,  ///< "running": started now
    kQueued,   ///< "queued": behind the job's running fire (block strategy serial)
};

inline constexpr auto kRunStateNames = MakeNameTable<RunState>({"running", "queued"});

/// The answer to one run.
struct RunAnswer {
    int status = 202;  ///< the HTTP status /v1/run answers (202 = accepted)
    std::int64_t fire_id = 0;
    bool duplicate = false;                 ///< accepted before: nothing new started
    std::optional<RunState> state;          ///< for a new acceptance
    std::optional<http::ErrorReply> error;  ///< for a refusal (status != 202)

    static RunAnswer Accepted(std::int64_t fire_id, RunState state);
    static RunAnswer Duplicate(std::int64_t fire_id);
    static RunAnswer Refused(const http::ApiError& error);

    bool accepted() const { return status == 202; }
    /// The refusal's field ("" when accepted or not about one field).
    const std::string& field() const;

    friend bool operator==(const RunAnswer&, const RunAnswer&) = default;
};

/// The /v1/run body (the status is the HTTP status, not in the body).
nlohmann::json ToJson(const RunAnswer& answer);
/// A /v1/run answer from its status and body. A body that says neither (no error shape on a
/// refusal) still gives the status, with an error naming no field.
RunAnswer ReadRunAnswer(int status, const nlohmann::json& body);

/// The /v1/runs body for `answers`, one per run in request order.
nlohmann::json ToBatchJson(const std::vector<RunAnswer>& answers);
/// The answers of a /v1/runs 200 body, or nullopt unless it holds exactly `runs` items each with
/// an integer status (then the node sends the runs one by one).
std::optional<std::vector<RunAnswer>> ReadBatchAnswer(const nlohmann::json& body, std::size_t runs);

/// The /v1/kill answer: the fire and where it was when killed.
struct KillAnswer {
    std::int64_t fire_id = 0;
    RunState state = RunState::kRunning;
    /// Set only for a kill with reason `timeout` that the executor did not act on: the run's own
    /// timeout counts from its handler's start, and it started after the node's watch began
    /// (it waited behind the job's running fire, or for its start_in_ms) or has not started. The
    /// time until that timeout ends it (for a run not started yet, its whole timeout: at least
    /// that long); the node asks again after it. An executor older than the reason never sends it.
    std::optional<std::int64_t> timeout_in_ms;

    friend bool operator==(const KillAnswer&, const KillAnswer&) = default;
};

nlohmann::json ToJson(const KillAnswer& answer);
/// A /v1/kill 200 body: fire_id and state required, timeout_in_ms optional (0..kMaxTimeoutMs
/// of run.hpp); unknown fields ignored.
Parsed<KillAnswer> ReadKillAnswer(const nlohmann::json& body);

/// POST /v1/idle-beat: does `job_id` run nothing on this instance (routing busy-over)?
struct IdleBeatRequest {
    std::int64_t job_id = 0;

    friend bool operator==(const IdleBeatRequest&, const IdleBeatRequest&) = default;
};

nlohmann::json ToJson(const IdleBeatRequest& request);
Parsed<IdleBeatRequest> ParseIdleBeatRequest(const nlohmann::json& body);

/// Its 200 answer (a busy job is a 409 naming job_id).
struct IdleBeatAnswer {
    std::int64_t job_id = 0;

    friend bool operator==(const IdleBeatAnswer&, const IdleBeatAnswer&) = default;
};

nlohmann::json ToJson(const IdleBeatAnswer& answer);

}  // namespace sched::protocol
