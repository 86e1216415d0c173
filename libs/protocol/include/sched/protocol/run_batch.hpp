#pragma once

/// The batch form of the executor's run call (docs/protocol.md "POST /v1/runs"): the runs a
/// node sends one executor instance at one due time, in one signed request.
///
///     POST /v1/runs {"runs": [<a /v1/run body>, ...]}
///     200 {"results": [{"status": 202, "accepted": true, "fire_id": 7, "state": "running"},
///                      {"status": 404, "error": {"code": "not_found", "message", "field": "runs[1].handler"}},
///                      ...]}
///
/// One result per run, in order; each `status` is what POST /v1/run would have answered for
/// that run alone, and the rest of the item is that answer's body. An executor without the
/// route (an SDK before it) answers 404 for the path: the node then sends /v1/run per fire.
/// The answers' types: sched/protocol/run_answer.hpp.

#include <cstddef>
#include <string>
#include <string_view>

namespace sched::protocol {

inline constexpr std::string_view kRunsPath = "/v1/runs";
/// Runs per request at most (the executor answers 400 beyond it; its body-limit applies too).
inline constexpr std::size_t kMaxRunsPerBatch = 1000;
/// The request's one field: the runs, each a /v1/run body.
inline constexpr std::string_view kRunsField = "runs";

/// The request body around `joined_runs`, the runs' JSON texts already joined by commas (the
/// node writes the batch as text: a hot path).
inline std::string RunsBatchBody(std::string_view joined_runs) {
    std::string body;
    body.reserve(joined_runs.size() + kRunsField.size() + 8);
    body += "{\"";
    body += kRunsField;
    body += "\":[";
    body += joined_runs;
    body += "]}";
    return body;
}

}  // namespace sched::protocol
