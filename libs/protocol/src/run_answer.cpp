#include "sched/protocol/run_answer.hpp"

#include "sched/http/json.hpp"
#include "sched/protocol/run.hpp"

namespace sched::protocol {

namespace {

const std::string kNoField;

}  // namespace

RunAnswer RunAnswer::Accepted(std::int64_t fire_id, RunState state) {
    return {.status = 202, .fire_id = fire_id, .duplicate = false, .state = state, .error = std::nullopt};
}

RunAnswer RunAnswer::Duplicate(std::int64_t fire_id) {
    return {.status = 202, .fire_id = fire_id, .duplicate = true, .state = std::nullopt, .error = std::nullopt};
}

RunAnswer RunAnswer::Refused(const http::ApiError& error) {
    return {.status = http::HttpStatusFor(error.code),
            .fire_id = 0,
            .duplicate = false,
            .state = std::nullopt,
            .error = http::ErrorReply{
                .code = std::string(CodeName(error.code)), .message = error.message, .field = error.field}};
}

const std::string& RunAnswer::field() const {
    return error ? error->field : kNoField;
}

nlohmann::json ToJson(const RunAnswer& answer) {
    if (!answer.accepted()) {
        const http::ErrorReply e = answer.error.value_or(http::ErrorReply{});
        return http::ErrorBody(e.code, e.message, e.field);
    }
    nlohmann::json j = {{"accepted", true}, {"fire_id", answer.fire_id}};
    if (answer.duplicate) j["duplicate"] = true;
    if (answer.state) j["state"] = kRunStateNames.Name(*answer.state);
    return j;
}

RunAnswer ReadRunAnswer(int status, const nlohmann::json& body) {
    RunAnswer answer;
    answer.status = status;
    if (status != 202) {
        // Whatever the body, a refusal is a refusal: its shape only decides what it names.
        answer.error = http::ParseErrorBody(body).value_or(http::ErrorReply{});
        return answer;
    }
    if (!body.is_object()) return answer;
    if (const auto it = body.find("fire_id"); it != body.end() && it->is_number_integer()) {
        answer.fire_id = it->get<std::int64_t>();
    }
    if (const auto it = body.find("duplicate"); it != body.end() && it->is_boolean())
        answer.duplicate = it->get<bool>();
    if (const auto it = body.find("state"); it != body.end() && it->is_string()) {
        answer.state = kRunStateNames.Parse(it->get<std::string>());
    }
    return answer;
}

nlohmann::json ToBatchJson(const std::vector<RunAnswer>& answers) {
    nlohmann::json results = nlohmann::json::array();
    for (const RunAnswer& answer : answers) {
        nlohmann::json item = ToJson(answer);
        item["status"] = answer.status;
        results.push_back(std::move(item));
    }
    return {{"results", std::move(results)}};
}

std::optional<std::vector<RunAnswer>> ReadBatchAnswer(const nlohmann::json& body, std::size_t runs) {
    if (!body.is_object()) return std::nullopt;
    const auto results = body.find("results");
    if (results == body.end() || !results->is_array() || results->size() != runs) return std::nullopt;
    std::vector<RunAnswer> answers;
    answers.reserve(runs);
    for (const auto& item : *results) {
        if (!item.is_object()) return std::nullopt;
        const auto status = item.find("status");
        if (status == item.end() || !status->is_number_integer()) return std::nullopt;
        answers.push_back(ReadRunAnswer(status->get<int>(), item));
    }
    return answers;
}

nlohmann::json ToJson(const KillAnswer& answer) {
    nlohmann::json j = {{"fire_id", answer.fire_id}, {"state", kRunStateNames.Name(answer.state)}};
    if (answer.timeout_in_ms) j["timeout_in_ms"] = *answer.timeout_in_ms;
    return j;
}

Parsed<KillAnswer> ReadKillAnswer(const nlohmann::json& body) {
    http::JsonFields f(body);
    Parsed<KillAnswer> out;
    out.value.fire_id = f.Int("fire_id", {.min = 0});
    const std::string state = f.String("state");
    if (f.ok()) {
        if (const auto parsed = kRunStateNames.Parse(state)) {
            out.value.state = *parsed;
        } else {
            f.Fail("state", "expected " + kRunStateNames.Expected() + ", got \"" + state + "\"");
        }
    }
    if (f.ok() && body.contains("timeout_in_ms") && !body["timeout_in_ms"].is_null()) {
        out.value.timeout_in_ms = f.Int("timeout_in_ms", 0, {.min = 0, .max = kMaxTimeoutMs});
    }
    out.error = f.error();
    return out;
}

nlohmann::json ToJson(const IdleBeatRequest& request) {
    return {{"job_id", request.job_id}};
}

Parsed<IdleBeatRequest> ParseIdleBeatRequest(const nlohmann::json& body) {
    http::JsonFields f(body);
    Parsed<IdleBeatRequest> out;
    out.value.job_id = f.Int("job_id", {.min = 0});
    out.error = f.error();
    return out;
}

nlohmann::json ToJson(const IdleBeatAnswer& answer) {
    return {{"job_id", answer.job_id}, {"idle", true}};
}

}  // namespace sched::protocol
