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

// Runs admitted under one registry lock (Runtime::AdmitChunk).
constexpr std::size_t kAdmitChunk = 32;

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
    run.overlap = wire.overlap;
    run.callback_url = std::move(wire.callback_url);
    run.traceparent = std::move(wire.traceparent);
    run.tracestate = std::move(wire.tracestate);
    return run;
}

}  // namespace

// ---- HTTP API (the handlers never block: they run on the io-threads, several at a time, and touch
// only locked or atomic state) ----

http::Router Runtime::Routes() {
    http::Router r;
    r.Add(http::Method::kPost, protocol::kRunPath, [this](http::Request& req) { return OnRun(req); });
    r.Add(http::Method::kPost, protocol::kRunsPath, [this](http::Request& req) { return OnRuns(req); });
    r.Add(http::Method::kPost, protocol::kRunsAheadPath, [this](http::Request& req) { return OnRuns(req); });
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
    const auto received = std::chrono::steady_clock::now();
    auto body = req.Json();
    if (!body.ok()) return http::Response::Error(body.status(), "body");
    const protocol::RunAnswer answer = std::move(AdmitRuns(*body, "", received).front());
    return http::Response::Json(protocol::ToJson(answer), answer.status);
}

// The batch form of /v1/run: one signed request carries the runs a node sends this instance at
// one due time, each admitted exactly as /v1/run would admit it, each answered in its own
// item. A malformed envelope is one 400; a malformed run is that item's 400
// ("runs[3].fire_id").
http::Response Runtime::OnRuns(http::Request& req) {
    // A held run's delay counts from here, before the body is parsed and the runs admitted (a
    // few milliseconds for hundreds of runs): the node took it before it wrote the request.
    const auto received = std::chrono::steady_clock::now();
    auto body = req.Json();
    if (!body.ok()) return http::Response::Error(body.status(), "body");
    const std::string field(kRunsField);
    if (!body->is_object() || !body->contains(field) || !(*body)[field].is_array()) {
        return http::Response::Error(
            http::ApiError{Code::kInvalidArgument, field + ": required, an array of runs", field});
    }
    const auto& runs = (*body)[field];
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
    return http::Response::Json(protocol::ToBatchJson(AdmitRuns(runs, field, received)), 200);
}

std::vector<protocol::RunAnswer> Runtime::AdmitRuns(const nlohmann::json& runs, const std::string& field,
                                                    std::chrono::steady_clock::time_point received) {
    const bool batch = !field.empty();
    const std::size_t count = batch ? runs.size() : 1;
    std::vector<std::optional<protocol::RunAnswer>> answers(count);
    for (std::size_t begin = 0; begin < count; begin += kAdmitChunk) {
        AdmitChunk(runs, field, begin, std::min(count, begin + kAdmitChunk), received, answers);
    }
    std::vector<protocol::RunAnswer> out;
    out.reserve(count);
    for (auto& answer : answers) out.push_back(std::move(*answer));
    return out;
}

// Runs [begin, end) of a batch: each parsed and checked alone, the valid ones admitted under one
// registry lock, the ones that start handed to the workers together. In chunks rather than the
// whole batch at once so that the first runs of a 333-run batch start while the rest is read.
void Runtime::AdmitChunk(const nlohmann::json& runs, const std::string& field, std::size_t begin, std::size_t end,
                         std::chrono::steady_clock::time_point received,
                         std::vector<std::optional<protocol::RunAnswer>>& answers) {
    const bool batch = !field.empty();
    const auto prefix_of = [&](std::size_t i) {
        return batch ? field + "[" + std::to_string(i) + "]" : std::string();
    };
    std::vector<RunRequest> admissible;
    std::vector<std::size_t> slot;           // admissible[k] answers answers[slot[k]],
    std::vector<std::int64_t> fire_ids;      // is fire fire_ids[k],
    std::vector<std::string> accepted_line;  // opens its log with accepted_line[k]
    std::vector<std::int64_t> start_in_ms;   // and starts start_in_ms[k] after `received`
    admissible.reserve(end - begin);
    start_in_ms.reserve(end - begin);
    slot.reserve(end - begin);
    fire_ids.reserve(end - begin);
    accepted_line.reserve(end - begin);
    for (std::size_t i = begin; i < end; ++i) {
        const std::string prefix = prefix_of(i);
        auto parsed = protocol::ParseRunRequest(batch ? runs[i] : runs, prefix);
        if (!parsed.ok()) {
            answers[i] = protocol::RunAnswer::Refused(*parsed.error);
            continue;
        }
        const std::int64_t hold_ms = parsed.value.start_in_ms;
        RunRequest run = ToClientRun(std::move(parsed.value));
        if (!handlers_.contains(run.handler)) {
            answers[i] = protocol::RunAnswer::Refused(
                http::ApiError{Code::kNotFound,
                               "no handler \"" + run.handler + "\" in app " + options_.app +
                                   " (handlers: " + fmt::format("{}", fmt::join(HandlerNames(), ", ")) + ")",
                               prefix.empty() ? std::string("handler") : prefix + ".handler"});
            continue;
        }
        if (!accepting_) {
            answers[i] =
                protocol::RunAnswer::Refused(http::ApiError{Code::kUnavailable, "the executor is stopping", ""});
            continue;
        }
        // The line is written before the registry's lock is taken: the workers finishing runs wait
        // on that lock.
        accepted_line.push_back(LogLine("accepted: handler " + run.handler + ", attempt " +
                                        std::to_string(run.attempt) + ", epoch " + std::to_string(run.epoch) +
                                        (hold_ms > 0 ? ", starts in " + std::to_string(hold_ms) + " ms" : "")));
        start_in_ms.push_back(hold_ms);
        slot.push_back(i);
        fire_ids.push_back(run.fire_id);
        admissible.push_back(std::move(run));
    }

    std::vector<RunPtr> start;
    start.reserve(admissible.size());
    auto admitted = registry_.AdmitAll(std::move(admissible), [&](std::size_t k, Run& accepted, bool start_now) {
        if (!start_now) accepted_line[k] += " (queued behind the job's running fire)";
        accepted.not_before = received + std::chrono::milliseconds(start_in_ms[k]);
        logs_.Open(accepted.request.fire_id, std::move(accepted_line[k]));
    });
    for (std::size_t k = 0; k < admitted.size(); ++k) {
        AdmitResult& admit = admitted[k];
        auto& answer = answers[slot[k]];
        const std::string prefix = prefix_of(slot[k]);
        const auto named = [&prefix](const char* name) {
            return prefix.empty() ? name : prefix + "." + name;
        };
        switch (admit.admission) {
            case Admission::kStaleEpoch:
                ++counters_.stale;
                answer = protocol::RunAnswer::Refused(http::ApiError{Code::kAborted, admit.message, named("epoch")});
                continue;
            case Admission::kDuplicate:
                ++counters_.duplicates;
                answer = protocol::RunAnswer::Duplicate(fire_ids[k]);
                continue;
            case Admission::kBusy:
                ++counters_.busy;
                answer = protocol::RunAnswer::Refused(
                    http::ApiError{Code::kAborted, admit.message, named("block_strategy")});
                continue;
            case Admission::kNoCapacity:
                ++counters_.capacity;
                answer = protocol::RunAnswer::Refused(http::ApiError{Code::kResourceExhausted, admit.message, ""});
                continue;
            case Admission::kAccepted:
                break;
        }
        ++counters_.accepted;
        for (const auto& dropped : admit.dropped) {
            ReportNeverStarted(dropped, "covered by fire " + std::to_string(fire_ids[k]) + " before it started");
        }
        answer = protocol::RunAnswer::Accepted(
            fire_ids[k], admit.start_now ? protocol::RunState::kRunning : protocol::RunState::kQueued);
        if (admit.start_now) start.push_back(std::move(admit.run));
    }
    Launch(std::move(start));
}

http::Response Runtime::OnKill(http::Request& req) {
    auto body = req.Json();
    if (!body.ok()) return http::Response::Error(body.status(), "body");
    const auto kill = protocol::ParseKillRequest(*body);
    if (!kill.ok()) return http::Response::Error(*kill.error);
    const std::int64_t fire_id = kill.value.fire_id;
    const bool timeout = kill.value.reason == protocol::KillReason::kTimeout;
    const KillResult k = registry_.Kill(fire_id, timeout);
    if (!k.run) {
        return http::Response::Error(http::ApiError{
            Code::kNotFound, "fire " + std::to_string(fire_id) + " is not running or queued here", "fire_id"});
    }
    protocol::KillAnswer answer{.fire_id = fire_id,
                                .state = k.was_running ? protocol::RunState::kRunning : protocol::RunState::kQueued};
    if (k.timeout_in) {
        answer.timeout_in_ms = k.timeout_in->count();
        FireLog(fire_id, "timeout kill not acted on: the run's own timeout ends it in " +
                             std::to_string(*answer.timeout_in_ms) + " ms (it counts from the handler's start)");
    } else if (k.was_running) {
        // A run already stopping (its own timeout passed, an earlier kill) gets no line: its
        // "finished" line may be written already, and stays the log's last.
        if (k.stopped_now) {
            FireLog(fire_id, timeout ? "timeout kill: the handler is asked to stop"
                                     : "kill requested: the handler is asked to stop");
        }
    } else {
        ReportNeverStarted(k.run, timeout ? "timed out before it started" : "killed by request before it started");
    }
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
