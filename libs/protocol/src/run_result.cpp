#include "sched/protocol/run_result.hpp"

#include <algorithm>

#include "sched/http/json.hpp"
#include "sched/protocol/registry.hpp"
#include "sched/protocol/trace_context.hpp"

namespace sched::protocol {

namespace {

bool Present(const nlohmann::json& item, const char* key) {
    return item.is_object() && item.contains(key) && !item[key].is_null();
}

}  // namespace

std::string_view Name(RunOutcome outcome) {
    return kRunOutcomeNames.Name(outcome);
}

std::optional<RunOutcome> ParseRunOutcome(std::string_view name) {
    return kRunOutcomeNames.Parse(name);
}

nlohmann::json ToJson(const RunResult& r) {
    nlohmann::json j = {
        {"fire_id", r.fire_id}, {"attempt", r.attempt},       {"status", Name(r.outcome)},   {"code", r.code},
        {"message", r.message}, {"started_ms", r.started_ms}, {"finished_ms", r.finished_ms}};
    if (r.epoch) j["epoch"] = *r.epoch;
    if (r.address) j["address"] = *r.address;
    if (r.log) {
        j["log"] = *r.log;
        j["log_truncated_bytes"] = r.log_truncated_bytes;
    }
    if (!r.traceparent.empty()) j["traceparent"] = r.traceparent;
    return j;
}

Parsed<RunResult> ParseRunResult(const nlohmann::json& item, const std::string& prefix, bool require_fencing) {
    Parsed<RunResult> out;
    if (item.is_object()) {
        for (const auto& [key, value] : item.items()) {
            if (std::find(kRunResultFields.begin(), kRunResultFields.end(), key) == kRunResultFields.end()) {
                const std::string field = prefix + "." + key;
                out.error = http::ApiError{Code::kInvalidArgument, field + ": unknown field", field};
                return out;
            }
        }
    }
    http::JsonFields f(item, prefix);
    RunResult& r = out.value;
    r.fire_id = f.Int("fire_id", {.min = 1});
    r.attempt = f.Int("attempt", {.min = 0, .max = 1'000'000});
    const std::string outcome = f.String("status", "");
    const auto parsed_outcome = ParseRunOutcome(outcome);
    if (f.ok() && !parsed_outcome) {
        f.Fail("status", "expected one of " + kRunOutcomeNames.Expected(", ") + ", got \"" + outcome + "\"");
    }
    r.code = f.String("code", "");
    r.message = f.String("message", "");
    r.started_ms = f.Int("started_ms", 0, {.min = 0});
    r.finished_ms = f.Int("finished_ms", 0, {.min = 0});
    if (Present(item, "epoch") || require_fencing) r.epoch = f.Int("epoch", {.min = 0});
    if (Present(item, "address") || require_fencing) r.address = f.String("address");
    if (f.ok()) r.outcome = *parsed_outcome;
    if (f.ok() && r.code.size() > kMaxResultCodeChars) {
        f.Fail("code", "at most " + std::to_string(kMaxResultCodeChars) + " characters");
    }
    if (f.ok() && r.address) {
        if (auto problem = AddressProblem(*r.address)) f.Fail("address", *problem);
    }
    // The log's tail is optional (older SDKs send none). JSON parsing already refused invalid
    // UTF-8. Bounded as the cluster stores it: an executor that sends more is told so, rather
    // than having it cut silently.
    if (Present(item, "log")) {
        r.log = f.String("log", "");
        r.log_truncated_bytes = f.Int("log_truncated_bytes", 0, {.min = 0});
        if (f.ok() && r.log->size() > kMaxResultLogBytes) {
            f.Fail("log", "at most " + std::to_string(kMaxResultLogBytes) + " bytes (UTF-8), got " +
                              std::to_string(r.log->size()));
        }
    } else {
        f.Int("log_truncated_bytes", 0, {.min = 0});
    }
    r.traceparent = f.String("traceparent", "");
    if (f.ok() && !r.traceparent.empty() && !ParseTraceParent(r.traceparent)) {
        f.Fail("traceparent", "not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>, lower case)");
    }
    out.error = f.error();
    return out;
}

}  // namespace sched::protocol
