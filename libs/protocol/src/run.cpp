#include "sched/protocol/run.hpp"

#include "sched/protocol/run_batch.hpp"
#include "sched/protocol/trace_context.hpp"

#include "sched/http/json.hpp"
#include "sched/http/url.hpp"

namespace sched::protocol {

nlohmann::json ToJson(const RunRequest& run) {
    nlohmann::json j = {{"fire_id", run.fire_id},
                        {"job_id", run.job_id},
                        {"attempt", run.attempt},
                        {"epoch", run.epoch},
                        {"handler", run.handler},
                        {"params", run.params},
                        {"scheduled_ms", run.scheduled_ms},
                        {"timeout_ms", run.timeout_ms},
                        {"shard_index", run.shard_index},
                        {"shard_total", run.shard_total},
                        {"block_strategy", BlockStrategyName(run.block_strategy)}};
    // Absent rather than "": an executor older than the field never sees it.
    if (!run.callback_url.empty()) j["callback_url"] = run.callback_url;
    if (run.overlap) j["overlap"] = BlockStrategyName(*run.overlap);
    if (run.start_in_ms != 0) j[kStartInField] = run.start_in_ms;
    if (!run.traceparent.empty()) j["traceparent"] = run.traceparent;
    if (!run.traceparent.empty() && !run.tracestate.empty()) j["tracestate"] = run.tracestate;
    return j;
}

Parsed<RunRequest> ParseRunRequest(const nlohmann::json& body, const std::string& prefix) {
    http::JsonFields f(body, prefix);
    Parsed<RunRequest> out;
    RunRequest& run = out.value;
    run.fire_id = f.Int("fire_id", {.min = 0});
    run.job_id = f.Int("job_id", {.min = 0});
    run.attempt = f.Int("attempt", {.min = 0});
    run.epoch = f.Int("epoch", {.min = 0});
    run.handler = f.String("handler");
    run.params = f.Value("params", nlohmann::json::object());
    run.scheduled_ms = f.Int("scheduled_ms", 0, {.min = 0});
    run.timeout_ms = f.Int("timeout_ms", 0, {.min = 0, .max = kMaxTimeoutMs});
    run.shard_index = f.Int("shard_index", 0, {.min = 0});
    run.shard_total = f.Int("shard_total", 1, {.min = 1});
    const std::string strategy = f.String("block_strategy", std::string(BlockStrategyName(BlockStrategy::kSerial)));
    if (f.ok()) {
        if (auto parsed = ParseBlockStrategy(strategy); parsed.ok()) {
            run.block_strategy = *parsed;
        } else {
            f.Fail("block_strategy", parsed.status().message());
        }
    }
    const std::string overlap = f.String("overlap", "");
    if (f.ok() && !overlap.empty()) {
        if (auto parsed = ParseBlockStrategy(overlap); parsed.ok()) {
            run.overlap = *parsed;
        } else {
            f.Fail("overlap", parsed.status().message());
        }
    }
    run.callback_url = f.String("callback_url", "");
    run.start_in_ms = f.Int(std::string(kStartInField), 0, {.min = 0, .max = kMaxStartInMs});
    run.traceparent = f.String("traceparent", "");
    if (f.ok() && !run.traceparent.empty() && !ParseTraceParent(run.traceparent)) {
        f.Fail("traceparent", "not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>, lower case)");
    }
    run.tracestate = f.String("tracestate", "");
    if (f.ok() && !run.tracestate.empty()) {
        if (auto bad = CheckTraceState(run.tracestate)) f.Fail("tracestate", *bad);
    }
    if (run.traceparent.empty()) run.tracestate.clear();  // meaningless without its traceparent
    if (f.ok() && run.shard_index >= run.shard_total) {
        f.Fail("shard_index", "must be less than shard_total (" + std::to_string(run.shard_total) + ")");
    }
    if (f.ok() && !run.callback_url.empty()) {
        if (auto url = http::Url::Parse(run.callback_url); !url.ok()) f.Fail("callback_url", url.status().message());
    }
    out.error = f.error();
    return out;
}

nlohmann::json ToJson(const KillRequest& kill) {
    nlohmann::json j = {{"fire_id", kill.fire_id}};
    // Absent for a kill by request: an executor older than the field reads the body it always did.
    if (kill.reason != KillReason::kRequest) j["reason"] = kKillReasonNames.Name(kill.reason);
    return j;
}

Parsed<KillRequest> ParseKillRequest(const nlohmann::json& body) {
    http::JsonFields f(body);
    Parsed<KillRequest> out;
    out.value.fire_id = f.Int("fire_id", {.min = 0});
    const std::string reason = f.String("reason", std::string(kKillReasonNames.Name(KillReason::kRequest)));
    if (f.ok() && reason.size() > kMaxKillReasonLength) {
        f.Fail("reason", "longer than " + std::to_string(kMaxKillReasonLength) + " bytes");
    }
    // An unknown reason is a newer node's: the fire is still to stop, as by request.
    if (f.ok()) out.value.reason = kKillReasonNames.Parse(reason).value_or(KillReason::kRequest);
    out.error = f.error();
    return out;
}

}  // namespace sched::protocol
