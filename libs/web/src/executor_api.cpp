#include "sched/web/executor_api.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <stdexcept>
#include <unordered_map>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "impl/context.hpp"
#include "impl/executor_handlers.hpp"
#include "impl/lock_handlers.hpp"
#include "impl/signing_keys.hpp"
#include "sched/common/log_fields.hpp"
#include "sched/common/on_pool.hpp"
#include "sched/http/json.hpp"
#include "sched/http/url.hpp"
#include "sched/protocol/fire_spans.hpp"
#include "sched/protocol/registry.hpp"
#include "sched/protocol/registry_answer.hpp"
#include "sched/protocol/run_result.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/fire_log.hpp"
#include "sched/store/fire_metrics.hpp"
#include "sched/store/fire_results.hpp"
#include "sched/store/registry.hpp"

namespace sched::web {

namespace impl {

namespace {

// The log bound is the protocol's and the store's: one constant would do, but the store does
// not depend on the protocol library.
static_assert(protocol::kMaxResultLogBytes == store::FireLogs::kMaxLogBytes);

int CodeNumber(const std::string& name) {
    for (int c = 0; c <= static_cast<int>(Code::kUnauthenticated); ++c) {
        if (CodeName(static_cast<Code>(c)) == name) return c;
    }
    return static_cast<int>(Code::kInternal);  // a code this build does not know
}

model::FireStatus StoredStatus(protocol::RunOutcome outcome) {
    switch (outcome) {
        case protocol::RunOutcome::kSucceeded:
            return model::FireStatus::kSucceeded;
        case protocol::RunOutcome::kFailed:
            return model::FireStatus::kFailed;
        case protocol::RunOutcome::kTimeout:
            return model::FireStatus::kTimeout;
        case protocol::RunOutcome::kKilled:
            return model::FireStatus::kKilled;
    }
    throw std::logic_error("unknown run outcome");
}

// The items of a callback batch (sched/protocol/run_result.hpp), or the 400 naming the first
// bad field. A plain function, not part of the coroutine: g++ 12 miscompiles large coroutine
// frames (docs/architecture/build.md).
std::optional<http::Response> ParseCallback(const nlohmann::json& body, bool scoped,
                                            std::vector<store::ExecutorResult>& items,
                                            std::vector<std::string>& traceparents) {
    // An app-scoped token must say which dispatch and which instance a result is for; the
    // cluster token and legacy tokens (older SDKs) may leave them out, and then they go unchecked.
    for (std::size_t i = 0; i < body.size(); ++i) {
        auto parsed = protocol::ParseRunResult(body[i], "[" + std::to_string(i) + "]", scoped);
        if (!parsed.ok()) return http::Response::Error(*parsed.error);
        protocol::RunResult& r = parsed.value;
        store::ExecutorResult item;
        item.fire_id = r.fire_id;
        item.attempt = static_cast<int>(r.attempt);
        item.epoch = r.epoch;
        item.address = std::move(r.address);
        item.status = StoredStatus(r.outcome);
        item.result_code = CodeNumber(r.code);
        item.result_message = std::move(r.message);
        if (item.result_message.size() > 65535) item.result_message.resize(65535);
        item.started_ms = r.started_ms;
        item.finished_ms = r.finished_ms;
        // The store replaces NUL bytes.
        item.log = std::move(r.log);
        item.log_truncated_bytes = r.log_truncated_bytes;
        items.push_back(std::move(item));
        traceparents.push_back(std::move(r.traceparent));
    }
    return std::nullopt;
}

// Calls `fn(i, item, job)` for each applied result (`item`, items[i]) with its fire's job row
// (looked up in the same transaction). A fire deleted meanwhile has no job row any more: it is
// passed over.
template <typename Applied, typename Fn>
void ForEachApplied(const std::vector<store::ExecutorResult>& items, const Applied& applied, Fn fn) {
    std::unordered_map<std::int64_t, const store::FireJob*> by_fire;
    for (const auto& j : applied.jobs) by_fire.emplace(j.fire_id, &j);
    for (std::size_t i : applied.applied) {
        const auto it = by_fire.find(items[i].fire_id);
        if (it != by_fire.end()) fn(i, items[i], *it->second);
    }
}

// Counts each applied result by its job (a fire deleted meanwhile is not counted).
template <typename Applied>
void CountOutcomes(store::FireOutcomeMetrics& metrics, const std::vector<store::ExecutorResult>& items,
                   const Applied& applied) {
    ForEachApplied(items, applied, [&](std::size_t, const store::ExecutorResult& item, const store::FireJob& job) {
        std::optional<double> duration;
        if (item.started_ms > 0 && item.finished_ms >= item.started_ms) {
            duration = static_cast<double>(item.finished_ms - item.started_ms) / 1000.0;
        }
        metrics.Ended(job.app, job.job_id, item.status, duration);
    });
}

// Hands each applied success's job, finish time and fire to the last-success writer (a fire deleted
// meanwhile has no job to record).
template <typename Applied>
void RecordSuccesses(LastSuccessWriter& writer, const std::vector<store::ExecutorResult>& items, const Applied& applied,
                     const net::any_io_executor& ex) {
    std::vector<store::JobSuccess> successes;
    ForEachApplied(items, applied, [&](std::size_t, const store::ExecutorResult& item, const store::FireJob& job) {
        if (item.status == model::FireStatus::kSucceeded)
            successes.push_back({.job_id = job.job_id, .finished_ms = item.finished_ms, .fire_id = item.fire_id});
    });
    writer.Add(successes, ex);
}

// The fire an applied result's attempt belongs to, from its job row.
protocol::FireRef FireRefOf(const store::ExecutorResult& item, const store::FireJob& job) {
    return {.fire_id = item.fire_id,
            .job_id = job.job_id,
            .scheduled_ms = job.scheduled_time,
            .attempt = item.attempt,
            .app = job.app,
            .caller = job.trace_parent ? protocol::ParseTraceParent(*job.trace_parent) : std::nullopt};
}

// The `ended` span and the root of each applied result's attempt (sched/protocol/fire_spans.hpp).
template <typename Applied>
void TraceEnded(const std::vector<store::ExecutorResult>& items, const Applied& applied) {
    constexpr std::int64_t kNanosPerMs = 1'000'000;
    const std::int64_t now_ms = protocol::NowUnixNanos() / kNanosPerMs;
    ForEachApplied(items, applied, [&](std::size_t, const store::ExecutorResult& item, const store::FireJob& job) {
        const std::int64_t end_ms = item.finished_ms > 0 ? item.finished_ms : now_ms;
        protocol::FireTracer::Ended(FireRefOf(item, job), job.created_at * kNanosPerMs, end_ms * kNanosPerMs,
                                    model::FireStatusName(item.status));
    });
}

// Each applied result at debug with the fire's fields (`trace_id`: the one the run ran under,
// else the fire's); a result whose traceparent is not its run's is logged - one warning per
// batch, a few fire ids named - never refused: the result is the executor's word on the run,
// and a wrong trace id (a proxy that rewrote it, a bug in a service's own SDK) must not lose it.
template <typename Applied>
void LogResults(const std::vector<store::ExecutorResult>& items, const std::vector<std::string>& traceparents,
                const Applied& applied) {
    std::size_t mismatched = 0;
    std::string sample;
    ForEachApplied(items, applied, [&](std::size_t i, const store::ExecutorResult& item, const store::FireJob& job) {
        // The fire's own trace context.
        const protocol::TraceContext expected = protocol::RunTrace(FireRefOf(item, job));
        const auto sent = traceparents[i].empty() ? std::nullopt : protocol::ParseTraceParent(traceparents[i]);
        if (sent && (sent->trace_id != expected.trace_id || sent->span_id != expected.span_id)) {
            if (++mismatched <= 5) {
                sample += (sample.empty() ? "fire #" : ", #") + std::to_string(item.fire_id) + " sent trace " +
                          sent->trace_id + ", expected " + expected.trace_id;
            }
        }
        if (!spdlog::should_log(spdlog::level::debug)) return;
        LogWithFields(spdlog::level::debug,
                      {{"app", job.app},
                       {"job", job.job_id},
                       {"fire", item.fire_id},
                       {"attempt", item.attempt},
                       {"trace_id", sent ? sent->trace_id : expected.trace_id}},
                      "callback: fire {} of job {} ended {} (attempt {}{})", item.fire_id, job.job_id,
                      model::FireStatusName(item.status), item.attempt, sent ? ", the result carried its trace" : "");
    });
    if (mismatched == 0) return;
    spdlog::warn("callback: {} result(s) applied with a traceparent not their run's ({}{})", mismatched, sample,
                 mismatched > 5 ? ", ..." : "");
}

// One line per batch with refused results (never one per item: a hostile batch must not
// flood the log), so that an operator sees why a fire's result did not land.
void LogRefused(const Principal& who, const std::vector<store::ExecutorResult>& items,
                const std::vector<store::ResultOutcome>& outcomes) {
    std::size_t refused = 0;
    std::string sample;
    for (std::size_t i = 0; i < outcomes.size(); ++i) {
        if (outcomes[i] == store::ResultOutcome::kApplied || outcomes[i] == store::ResultOutcome::kDuplicate) continue;
        if (++refused <= 5) {
            sample += (sample.empty() ? "fire #" : ", #") + std::to_string(items[i].fire_id) + " " +
                      std::string(store::ResultOutcomeName(outcomes[i]));
        }
    }
    if (refused == 0) return;
    spdlog::warn("callback from token \"{}\": {} of {} result(s) refused ({}{})", who.name, refused, outcomes.size(),
                 sample, refused > 5 ? ", ..." : "");
}

// 403 naming the app, in the uniform error body.
http::Response Forbidden(const Status& denied) {
    return http::Response::Error(denied, "app");
}

// The body of an executor's registry call (heartbeat, deregister) read by `parse`, its app at
// most kMaxAppName characters; the first problem in its `error` (a 400 naming body, the field or
// app).
template <typename Message>
protocol::Parsed<Message> ReadAppBody(const http::Request& req,
                                      protocol::Parsed<Message> (*parse)(const nlohmann::json& body)) {
    auto body = req.Json();
    if (!body.ok()) {
        return {.error = http::ApiError{body.status().code(), body.status().message(), "body"}};
    }
    auto parsed = parse(*body);
    if (parsed.ok() && CodePoints(parsed.value.app) > kMaxAppName) {
        parsed.error = http::ApiError{Code::kInvalidArgument,
                                      "app: at most " + std::to_string(kMaxAppName) + " characters", "app"};
    }
    return parsed;
}

}  // namespace

net::awaitable<http::Response> HandleHeartbeat(http::Request& req, const Principal& who, db::Database& db,
                                               net::thread_pool& db_pool) {
    auto beat = ReadAppBody(req, protocol::ParseHeartbeat);
    if (!beat.ok()) co_return http::Response::Error(*beat.error);
    store::ExecutorInstance e;
    e.app = std::move(beat.value.app);
    e.address = std::move(beat.value.address);
    e.handlers = std::move(beat.value.handlers);
    e.capacity = static_cast<int>(beat.value.capacity);
    e.running = static_cast<int>(beat.value.running);
    if (Status allowed = AuthorizeApp(who, e.app); !allowed.ok()) co_return Forbidden(allowed);
    auto work = [&] {
        return store::ExecutorRepository(db).Heartbeat(e);
    };
    Status s = co_await OnPool(db_pool, work);
    if (!s.ok()) co_return http::Response::Error(s);
    // The app's signing keys (its first is created here) and the DB clock: the SDK verifies
    // the nodes' calls with them (docs/protocol.md "Key delivery").
    auto keys_work = [&] {
        return store::SigningKeyRepository(db).EnsureForApp(e.app);
    };
    auto keys = co_await OnPool(db_pool, keys_work);
    if (!keys.ok()) co_return http::Response::Error(keys.status());
    co_return http::Response::Json(protocol::ToJson(
        protocol::HeartbeatAnswer{.signing = KeyDeliveryOf(*keys), .capabilities = protocol::OwnCapabilities()}));
}

net::awaitable<http::Response> HandleDeregister(http::Request& req, const Principal& who, db::Database& db,
                                                net::thread_pool& db_pool) {
    auto parsed = ReadAppBody(req, protocol::ParseDeregister);
    if (!parsed.ok()) co_return http::Response::Error(*parsed.error);
    const std::string app = std::move(parsed.value.app);
    const std::string address = std::move(parsed.value.address);
    if (Status allowed = AuthorizeApp(who, app); !allowed.ok()) co_return Forbidden(allowed);
    auto work = [&] {
        return store::ExecutorRepository(db).Deregister(app, address);
    };
    Status s = co_await OnPool(db_pool, work);
    if (!s.ok()) co_return http::Response::Error(s, s.code() == Code::kNotFound ? "address" : "");
    co_return http::Response::Json(protocol::ToJson(protocol::DeregisterAnswer{}));
}

net::awaitable<http::Response> HandleCallback(http::Request& req, const Principal& who, db::Database& db,
                                              net::thread_pool& db_pool, store::FireOutcomeMetrics* metrics,
                                              CallbackHooks hooks) {
    auto body = req.Json();
    if (!body.ok()) co_return http::Response::Error(body.status(), "body");
    if (!body->is_array()) {
        co_return http::Response::Error(InvalidArgument("body: expected an array of results"), "body");
    }
    if (body->size() > protocol::kMaxResultsPerCallback) {
        co_return http::Response::Error(
            InvalidArgument("body: at most " + std::to_string(protocol::kMaxResultsPerCallback) + " results per call"),
            "body");
    }
    std::vector<store::ExecutorResult> items;
    std::vector<std::string> traceparents;  // one per item ("" = not sent)
    if (auto bad = ParseCallback(*body, IsAppScoped(who), items, traceparents)) co_return *bad;
    // The applied fires' rows are read when something below needs them: the metrics, the spans,
    // the debug lines, or a traceparent to check.
    const bool any_trace =
        std::any_of(traceparents.begin(), traceparents.end(), [](const std::string& t) { return !t.empty(); });
    const bool need_jobs =
        metrics != nullptr || protocol::FireTracer::On() || any_trace || spdlog::should_log(spdlog::level::debug);
    // The successes' jobs for job_last_success, from the same SELECT (no statement of its own).
    const bool any_success =
        hooks.last_success != nullptr && std::any_of(items.begin(), items.end(), [](const store::ExecutorResult& r) {
            return r.status == model::FireStatus::kSucceeded;
        });
    const bool read_jobs = need_jobs || any_success;
    const auto app_allowed = [&who](const std::string& app) {
        return AuthorizeApp(who, app).ok();
    };
    struct Applied {
        nlohmann::json results = nlohmann::json::array();
        std::vector<std::size_t> applied;            // indexes into items
        std::vector<store::FireJob> jobs;            // of the applied fires, for the metrics
        std::vector<store::ResultOutcome> outcomes;  // one per item
        bool raised_followup = false;                // an applied result left the master work
    };
    // Causal reads: each result answers a claim committed before the executor got the run,
    // maybe through another Galera node; read before this node applied that claim, the fire
    // still looks `pending` and the result would be refused for good.
    auto work = [&]() -> Result<Applied> {
        // A constant number of statements per batch (store::FireResults), not 3-4 per item; the
        // applied fires' jobs for the metrics come from the same SELECT. The usual batch first
        // without a transaction (a SELECT and an UPDATE); what that leaves undecided, or a batch
        // it does not take, in a transaction without a savepoint, the batch being all it holds:
        // a CAS lost to a concurrent change (rare) rolls it back, and the batch goes again with
        // one.
        Applied out;
        std::vector<std::optional<store::ResultOutcome>> decided(items.size());
        if (db.backend() == db::Backend::kMySql && !db.causal_reads()) {
            auto first = db.Run([&](soci::session& s) {
                return store::FireResults::ApplyManyAutocommit(s, items, app_allowed, read_jobs ? &out.jobs : nullptr,
                                                               &out.raised_followup);
            });
            if (!first.ok()) return first.status();
            decided = std::move(*first);
        }
        std::vector<std::size_t> rest;  // indexes into items, in input order
        for (std::size_t i = 0; i < items.size(); ++i) {
            if (!decided[i]) rest.push_back(i);
        }
        if (!rest.empty()) {
            std::vector<store::ExecutorResult> batch;
            batch.reserve(rest.size());
            for (std::size_t i : rest) batch.push_back(items[i]);
            struct Batch {
                std::vector<store::ResultOutcome> outcomes;
                std::vector<store::FireJob> jobs;
                bool raised_followup = false;
            };
            const auto apply = [&](bool alone) {
                return db.InTransaction(
                    db::TxMode::kWrite,
                    [&](soci::session& s) -> Result<Batch> {
                        Batch b;
                        auto* jobs = read_jobs ? &b.jobs : nullptr;
                        auto outcomes =
                            alone ? store::FireResults::TryApplyMany(s, batch, app_allowed, jobs, &b.raised_followup)
                                  : store::FireResults::ApplyMany(s, batch, app_allowed, jobs, &b.raised_followup);
                        if (!outcomes)
                            return Status(Code::kAborted, "a fire of the batch changed while it was applied");
                        b.outcomes = std::move(*outcomes);
                        return b;
                    },
                    db.CausalReads());
            };
            auto applied = apply(true);
            if (!applied.ok() && applied.status().code() == Code::kAborted) applied = apply(false);
            if (!applied.ok()) return applied.status();
            for (std::size_t k = 0; k < rest.size(); ++k) decided[rest[k]] = applied->outcomes[k];
            out.jobs.insert(out.jobs.end(), applied->jobs.begin(), applied->jobs.end());
            out.raised_followup = out.raised_followup || applied->raised_followup;
        }
        for (std::size_t i = 0; i < items.size(); ++i) {
            out.outcomes.push_back(*decided[i]);
            out.results.push_back({{"fire_id", items[i].fire_id}, {"outcome", store::ResultOutcomeName(*decided[i])}});
            if (*decided[i] == store::ResultOutcome::kApplied) out.applied.push_back(i);
        }
        return out;
    };
    auto applied = co_await OnPool(db_pool, work);
    if (!applied.ok()) co_return http::Response::Error(applied.status());
    // A retry, a workflow step's end or a fixed-delay job's next time: the masters act now rather
    // than at their next probe. A batch of cron jobs' successes (the usual one) wakes nobody.
    if (applied->raised_followup && hooks.wake_masters) hooks.wake_masters();
    // A trigger node's slave then drops the `running` records it still holds for these fires:
    // ended, they would change no row (the SDK posts every result to one node, this one or not).
    if (!applied->applied.empty() && hooks.results_applied) {
        std::vector<std::int64_t> ended;
        ended.reserve(applied->applied.size());
        for (std::size_t i : applied->applied) ended.push_back(items[i].fire_id);
        hooks.results_applied(ended);
    }
    if (any_success) {
        const net::any_io_executor ex = co_await net::this_coro::executor;
        RecordSuccesses(*hooks.last_success, items, *applied, ex);
    }
    if (metrics) CountOutcomes(*metrics, items, *applied);
    if (protocol::FireTracer::On()) TraceEnded(items, *applied);
    if (need_jobs) LogResults(items, traceparents, *applied);
    LogRefused(who, items, applied->outcomes);
    co_return http::Response::Json({{"results", applied->results}});
}

void AddSdkRoutes(Routes& routes) {
    auto ctx = routes.context();
    using Fn = net::awaitable<http::Response> (*)(http::Request&, const Principal&, db::Database&, net::thread_pool&);
    const std::pair<std::string_view, Fn> sdk_routes[] = {{protocol::kHeartbeatPath, &HandleHeartbeat},
                                                          {protocol::kDeregisterPath, &HandleDeregister}};
    // Init-captures: clang before 16 cannot capture a structured binding itself.
    for (const auto& [pattern, fn] : sdk_routes) {
        routes.Add(http::Method::kPost, std::string(pattern), Permission::kExecutor,
                   [ctx, fn = fn](http::Request& req, const Principal& who) -> net::awaitable<http::Response> {
                       auto db = ctx->database();
                       if (!db) co_return http::Response::Error(Unavailable("the database is not open yet"));
                       http::Response response = co_await fn(req, who, *db, ctx->db_pool);
                       co_return response;
                   });
    }
    routes.Add(http::Method::kPost, std::string(protocol::kCallbackPath), Permission::kExecutor,
               [ctx](http::Request& req, const Principal& who) -> net::awaitable<http::Response> {
                   auto db = ctx->database();
                   if (!db) co_return http::Response::Error(Unavailable("the database is not open yet"));
                   store::FireOutcomeMetrics* metrics = ctx->fire_metrics.get();
                   http::Response response = co_await HandleCallback(req, who, *db, ctx->db_pool, metrics,
                                                                     {.wake_masters = ctx->options.wake_masters,
                                                                      .results_applied = ctx->options.results_applied,
                                                                      .last_success = ctx->last_success.get()});
                   co_return response;
               });
    AddLockRoutes(routes);
}

void AddLockRoutes(Routes& routes) {
    auto ctx = routes.context();
    auto api = std::make_shared<LockApi>(ctx->options.locks, ctx->database, ctx->db_pool);
    using Fn = net::awaitable<http::Response> (LockApi::*)(http::Request&, const Principal&);
    const QueryParams app_query{.names = {"app"}};
    const std::tuple<http::Method, const char*, Permission, const QueryParams*, Fn> lock_routes[] = {
        {http::Method::kPost, "/api/v1/locks/{key}/acquire", Permission::kLockHolder, &kNoQuery, &LockApi::Acquire},
        {http::Method::kPost, "/api/v1/locks/{key}/extend", Permission::kLockHolder, &kNoQuery, &LockApi::Extend},
        {http::Method::kPost, "/api/v1/locks/{key}/release", Permission::kLockHolder, &kNoQuery, &LockApi::Release},
        {http::Method::kGet, "/api/v1/locks/{key}", Permission::kLockViewer, &app_query, &LockApi::Inspect}};
    for (const auto& [method, pattern, permission, query, fn] : lock_routes) {
        routes.Add(method, pattern, permission, *query,
                   [api, fn = fn](http::Request& req, const Principal& who) -> net::awaitable<http::Response> {
                       http::Response response = co_await (api.get()->*fn)(req, who);
                       co_return response;
                   });
    }
}

}  // namespace impl

void AddExecutorRoutes(http::Router& router, const std::string& cluster_token, db::DatabaseProvider database,
                       net::thread_pool& db_pool, LockApiOptions locks, Micros auth_cache, MetricsRegistry* metrics,
                       std::function<void()> wake_masters,
                       std::function<void(const std::vector<std::int64_t>&)> results_applied) {
    WebOptions options;
    options.wake_masters = std::move(wake_masters);
    options.results_applied = std::move(results_applied);
    options.token = cluster_token;
    options.locks = std::move(locks);
    options.auth_cache = auth_cache;
    auto ctx = std::make_shared<impl::Context>(options, std::move(database), db_pool, metrics);
    impl::Routes routes(router, ctx);
    impl::AddSdkRoutes(routes);
}

}  // namespace sched::web
