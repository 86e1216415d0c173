#include <charconv>
#include <optional>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

#include "impl/runtime.hpp"
#include "sched/protocol/log_page.hpp"
#include "sched/protocol/registry.hpp"
#include "sched/protocol/run.hpp"
#include "sched/protocol/run_answer.hpp"
#include "sched/protocol/run_batch.hpp"

namespace sched::client::impl {

namespace {

using protocol::kMaxLogPageLines;
using protocol::kMaxRunsPerBatch;
using protocol::kRunsField;

std::optional<std::int64_t> ParseInt(std::string_view text) {
    std::int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
    return v;
}

// The handler-facing run (sched/client/job_context.hpp, installed) from the wire's (the
// protocol library stays inside the build).
RunRequest ToClientRun(protocol::RunRequest wire) {
    RunRequest run;
    run.fire_id = wire.fire_id;
    run.job_id = wire.job_id;
    run.attempt = wire.attempt;
    run.epoch = wire.epoch;
    run.handler = std::move(wire.handler);
    run.params = std::move(wire.params);
    run.scheduled_ms = wire.scheduled_ms;
    run.timeout_ms = wire.timeout_ms;
    run.shard_index = wire.shard_index;
    run.shard_total = wire.shard_total;
    run.block_strategy = wire.block_strategy;
    run.callback_url = std::move(wire.callback_url);
    return run;
}

}  // namespace

// ---- HTTP API (the handlers never block: they run on the io-threads, several at a time, and touch
// only locked or atomic state) ----

http::Router Runtime::Routes() {
    http::Router r;
    r.Add(http::Method::kPost, protocol::kRunPath, [this](http::Request& req) { return OnRun(req); });
    r.Add(http::Method::kPost, protocol::kRunsPath, [this](http::Request& req) { return OnRuns(req); });
    r.Add(http::Method::kPost, protocol::kKillPath, [this](http::Request& req) { return OnKill(req); });
    r.Add(http::Method::kGet, protocol::kBeatPath, [this](http::Request& req) { return OnBeat(req); });
    r.Add(http::Method::kPost, protocol::kIdleBeatPath, [this](http::Request& req) { return OnIdleBeat(req); });
    r.Add(http::Method::kGet, protocol::kLogPath, [this](http::Request& req) { return OnLog(req); });
    // Prometheus cannot sign: the route is public, behind its own bearer token when one is set.
    if (options_.metrics) {
        r.Add(
            http::Method::kGet, "/metrics", [this](http::Request& req) { return OnMetrics(req); },
            http::Access::kPublic);
    }
    return r;
}

http::Response Runtime::OnRun(http::Request& req) {
    auto body = req.Json();
    if (!body.ok()) return http::Response::Error(body.status(), "body");
    const protocol::RunAnswer answer = AdmitRun(*body, "");
    return http::Response::Json(protocol::ToJson(answer), answer.status);
}

// The batch form of /v1/run: one signed request carries the runs a node sends this instance at
// one due time, each admitted exactly as /v1/run would admit it, each answered in its own
// item. A malformed envelope is one 400; a malformed run is that item's 400
// ("runs[3].fire_id").
http::Response Runtime::OnRuns(http::Request& req) {
    auto body = req.Json();
    if (!body.ok()) return http::Response::Error(body.status(), "body");
    const std::string field(kRunsField);
    if (!body->is_object() || !body->contains(field) || !(*body)[field].is_array()) {
        return http::Response::Error(
            http::ApiError{Code::kInvalidArgument, field + ": required, an array of runs", field});
    }
    auto& runs = (*body)[field];
    if (runs.empty() || runs.size() > kMaxRunsPerBatch) {
        return http::Response::Error(http::ApiError{
            Code::kInvalidArgument,
            field + ": expected 1.." + std::to_string(kMaxRunsPerBatch) + " runs, got " + std::to_string(runs.size()),
            field});
    }
    for (const auto& key : body->items()) {
        if (key.key() != field) {
            return http::Response::Error(
                http::ApiError{Code::kInvalidArgument, key.key() + ": unknown field", std::string(key.key())});
        }
    }
    std::vector<protocol::RunAnswer> answers;
    answers.reserve(runs.size());
    for (std::size_t i = 0; i < runs.size(); ++i)
        answers.push_back(AdmitRun(runs[i], field + "[" + std::to_string(i) + "]"));
    return http::Response::Json(protocol::ToBatchJson(answers), 200);
}

protocol::RunAnswer Runtime::AdmitRun(const nlohmann::json& body, const std::string& prefix) {
    const auto named = [&](const char* field) {
        return prefix.empty() ? std::string(field) : prefix + "." + field;
    };
    auto parsed = protocol::ParseRunRequest(body, prefix);
    if (!parsed.ok()) return protocol::RunAnswer::Refused(*parsed.error);
    RunRequest run = ToClientRun(std::move(parsed.value));
    if (!handlers_.contains(run.handler)) {
        return protocol::RunAnswer::Refused(
            http::ApiError{Code::kNotFound,
                           "no handler \"" + run.handler + "\" in app " + options_.app +
                               " (handlers: " + fmt::format("{}", fmt::join(HandlerNames(), ", ")) + ")",
                           named("handler")});
    }
    if (!accepting_)
        return protocol::RunAnswer::Refused(http::ApiError{Code::kUnavailable, "the executor is stopping", ""});

    const std::int64_t fire_id = run.fire_id;
    // The line is written before the registry's lock is taken: the workers finishing runs wait
    // on that lock, and a burst admits hundreds of runs back to back.
    std::string accepted_line = LogLine("accepted: handler " + run.handler + ", attempt " +
                                        std::to_string(run.attempt) + ", epoch " + std::to_string(run.epoch));
    AdmitResult admit = registry_.Admit(std::move(run), [this, &accepted_line](const Run& accepted, bool start_now) {
        if (!start_now) accepted_line += " (queued behind the job's running fire)";
        logs_.Open(accepted.request.fire_id, std::move(accepted_line));
    });
    switch (admit.admission) {
        case Admission::kStaleEpoch:
            ++counters_.stale;
            return protocol::RunAnswer::Refused(http::ApiError{Code::kAborted, admit.message, named("epoch")});
        case Admission::kDuplicate:
            ++counters_.duplicates;
            return protocol::RunAnswer::Duplicate(fire_id);
        case Admission::kBusy:
            ++counters_.busy;
            return protocol::RunAnswer::Refused(http::ApiError{Code::kAborted, admit.message, named("block_strategy")});
        case Admission::kNoCapacity:
            ++counters_.capacity;
            return protocol::RunAnswer::Refused(http::ApiError{Code::kResourceExhausted, admit.message, ""});
        case Admission::kAccepted:
            break;
    }
    ++counters_.accepted;
    for (const auto& dropped : admit.dropped) {
        ReportNeverStarted(dropped, "covered by fire " + std::to_string(fire_id) + " before it started");
    }
    if (admit.start_now) Launch(admit.run);
    return protocol::RunAnswer::Accepted(fire_id,
                                         admit.start_now ? protocol::RunState::kRunning : protocol::RunState::kQueued);
}

http::Response Runtime::OnKill(http::Request& req) {
    auto body = req.Json();
    if (!body.ok()) return http::Response::Error(body.status(), "body");
    const auto kill = protocol::ParseKillRequest(*body);
    if (!kill.ok()) return http::Response::Error(*kill.error);
    const std::int64_t fire_id = kill.value.fire_id;
    const KillResult k = registry_.Kill(fire_id);
    if (!k.run) {
        return http::Response::Error(http::ApiError{
            Code::kNotFound, "fire " + std::to_string(fire_id) + " is not running or queued here", "fire_id"});
    }
    if (k.was_running) {
        FireLog(fire_id, "kill requested: the handler is asked to stop");
    } else {
        ReportNeverStarted(k.run, "killed by request before it started");
    }
    const protocol::KillAnswer answer{
        .fire_id = fire_id, .state = k.was_running ? protocol::RunState::kRunning : protocol::RunState::kQueued};
    return http::Response::Json(protocol::ToJson(answer));
}

protocol::Heartbeat Runtime::HeartbeatNow() {
    return {.app = options_.app,
            .address = address_,
            .handlers = HandlerNames(),
            .capacity = options_.capacity,
            .running = static_cast<std::int64_t>(registry_.InFlight())};
}

http::Response Runtime::OnBeat(http::Request&) {
    return http::Response::Json(
        protocol::ToJson(protocol::BeatAnswer{.heartbeat = HeartbeatNow(), .epoch = registry_.MaxEpoch()}));
}

http::Response Runtime::OnIdleBeat(http::Request& req) {
    auto body = req.Json();
    if (!body.ok()) return http::Response::Error(body.status(), "body");
    const auto request = protocol::ParseIdleBeatRequest(*body);
    if (!request.ok()) return http::Response::Error(*request.error);
    const std::int64_t job_id = request.value.job_id;
    if (!registry_.Idle(job_id)) {
        return http::Response::Error(
            http::ApiError{Code::kFailedPrecondition,
                           "job " + std::to_string(job_id) + " has a run in progress or queued here", "job_id"});
    }
    return http::Response::Json(protocol::ToJson(protocol::IdleBeatAnswer{.job_id = job_id}));
}

http::Response Runtime::OnLog(http::Request& req) {
    const auto fire_text = req.Query("fire_id");
    if (!fire_text)
        return http::Response::Error(http::ApiError{Code::kInvalidArgument, "fire_id: required", "fire_id"});
    const auto fire_id = ParseInt(*fire_text);
    if (!fire_id || *fire_id < 0) {
        return http::Response::Error(http::ApiError{
            Code::kInvalidArgument, "fire_id: expected a non-negative integer, got \"" + *fire_text + "\"", "fire_id"});
    }
    std::int64_t from_line = 0;
    if (const auto from_text = req.Query("from_line")) {
        const auto parsed = ParseInt(*from_text);
        if (!parsed || *parsed < 0) {
            return http::Response::Error(
                http::ApiError{Code::kInvalidArgument,
                               "from_line: expected a non-negative integer, got \"" + *from_text + "\"", "from_line"});
        }
        from_line = *parsed;
    }
    auto page = logs_.Read(*fire_id, from_line, kMaxLogPageLines);
    if (!page) {
        return http::Response::Error(
            http::ApiError{Code::kNotFound, "no log for fire " + std::to_string(*fire_id) + " here", "fire_id"});
    }
    return http::Response::Json(protocol::ToJson(protocol::LogPage{.fire_id = *fire_id,
                                                                   .from_line = page->from_line,
                                                                   .to_line = page->next_line,
                                                                   .lines = std::move(page->lines),
                                                                   .finished = page->finished}));
}

http::Response Runtime::OnMetrics(http::Request& req) {
    if (metrics_auth_) {
        if (Status s = metrics_auth_(req); !s.ok()) {
            http::Response res = http::Response::Error(s, "Authorization");
            res.headers.Set("WWW-Authenticate", "Bearer realm=\"metrics\"");
            return res;
        }
    }
    return http::Response::Text(metrics_registry_.Render(), 200, "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace sched::client::impl
