#pragma once

/// The result of one run, as an executor reports it to the cluster (docs/protocol.md
/// "Routes"): the items of `POST /api/v1/callback`, a JSON array of at most kMaxResultsPerCallback.
/// The client SDK writes them with ToJson (and spools them across restarts), the web module
/// reads them with ParseRunResult.
///
///     [{"fire_id": 7, "attempt": 0, "epoch": 12, "status": "succeeded", "code": "",
///       "message": "3 parts", "started_ms": 1764000000012, "finished_ms": 1764000000420,
///       "address": "10.0.0.9:9100", "log": "...", "log_truncated_bytes": 0}]
///
/// Reading is strict: a field this version does not know is a 400 naming it, so that a typo or
/// a field of a newer protocol is never dropped unnoticed.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "sched/common/name_table.hpp"
#include "sched/protocol/parsed.hpp"

namespace sched::protocol {

/// How a run ended.
enum class RunOutcome {
    kSucceeded,  ///< "succeeded"
    kFailed,     ///< "failed": the handler returned an error
    kTimeout,    ///< "timeout": the run's timeout_ms passed
    kKilled,     ///< "killed": a kill, a cover-early or the executor's shutdown
};

inline constexpr auto kRunOutcomeNames = MakeNameTable<RunOutcome>({"succeeded", "failed", "timeout", "killed"});

std::string_view Name(RunOutcome outcome);
std::optional<RunOutcome> ParseRunOutcome(std::string_view name);

/// The fields of one item, every one this version knows.
inline constexpr std::array<std::string_view, 12> kRunResultFields = {"fire_id",
                                                                      "attempt",
                                                                      "epoch",
                                                                      "status",
                                                                      "code",
                                                                      "message",
                                                                      "started_ms",
                                                                      "finished_ms",
                                                                      "address",
                                                                      "log",
                                                                      "log_truncated_bytes",
                                                                      "traceparent"};

/// Items per callback request at most (more is a 400 for the body).
inline constexpr std::size_t kMaxResultsPerCallback = 1000;
/// The route on the cluster the results are posted to.
inline constexpr std::string_view kCallbackPath = "/api/v1/callback";
/// The log tail a result may carry, in UTF-8 bytes (the cluster stores at most this much).
inline constexpr std::size_t kMaxResultLogBytes = std::size_t{256} << 10;
/// `code` is a canonical error name ("unavailable"), at most this long.
inline constexpr std::size_t kMaxResultCodeChars = 64;

struct RunResult {
    std::int64_t fire_id = 0;
    std::int64_t attempt = 0;
    /// The epoch of the run this answers. Required from an app-scoped token; older SDKs may
    /// leave it out (nullopt: not checked).
    std::optional<std::int64_t> epoch;
    RunOutcome outcome = RunOutcome::kSucceeded;
    std::string code;  ///< canonical code name of a failure, "" on success
    std::string message;
    std::int64_t started_ms = 0;  ///< 0 = never started
    std::int64_t finished_ms = 0;
    /// The instance that ran it ("host:port"). Required with `epoch`; nullopt from older SDKs.
    std::optional<std::string> address;
    std::optional<std::string> log;  ///< the tail of the run's log, if sent
    std::int64_t log_truncated_bytes = 0;
    /// The traceparent the run ran under (the run request's), "" = not sent. Sent only to nodes
    /// that advertise kCapabilityResultTraceparent (registry_answer.hpp): an older node refuses
    /// the unknown field.
    std::string traceparent;

    friend bool operator==(const RunResult&, const RunResult&) = default;
};

nlohmann::json ToJson(const RunResult& result);
/// Reads one item (`prefix` "[i]"). With `require_fencing` (an app-scoped token), `epoch` and
/// `address` are required.
Parsed<RunResult> ParseRunResult(const nlohmann::json& item, const std::string& prefix, bool require_fencing);

}  // namespace sched::protocol
