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
///
///     POST /v1/runs-ahead {"runs": [<a /v1/run body with "start_in_ms">, ...]}
///
/// The same request and answers for runs sent before they are due: the executor admits each
/// at once (epoch, duplicates, block strategy, capacity: an accepted run holds its slot) and
/// starts it `start_in_ms` after the request arrived. The delay is relative, not a wall-clock
/// time, so a skew between the node's and the executor's clocks does not move the start. An
/// executor without the route answers 404 for the path: the node then sends those runs at
/// their due time with /v1/runs or /v1/run.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sched::protocol {

inline constexpr std::string_view kRunsPath = "/v1/runs";
inline constexpr std::string_view kRunsAheadPath = "/v1/runs-ahead";
/// Runs per request at most (the executor answers 400 beyond it; its body-limit applies too).
inline constexpr std::size_t kMaxRunsPerBatch = 1000;
/// The request's one field: the runs, each a /v1/run body.
inline constexpr std::string_view kRunsField = "runs";

/// The field of a run sent ahead (RunRequest::start_in_ms).
inline constexpr std::string_view kStartInField = "start_in_ms";

/// `run_json`, one run's JSON object as ToJson wrote it (without start_in_ms), with
/// start_in_ms set: the node writes each run's text first and stamps the time left to its due
/// time just before it sends the request, so writing hundreds of runs does not delay their start.
inline std::string WithStartIn(std::string_view run_json, std::int64_t start_in_ms) {
    std::string out;
    out.reserve(run_json.size() + kStartInField.size() + 24);
    out += "{\"";
    out += kStartInField;
    out += "\":";
    out += std::to_string(start_in_ms);
    out += ',';
    out.append(run_json.substr(1));  // ToJson's object always has fields: "{" "fire_id":...
    return out;
}

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
