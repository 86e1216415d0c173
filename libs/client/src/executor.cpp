#include "sched/client/executor.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <charconv>
#include <ctime>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <spdlog/spdlog.h>

#include "impl/executor_metrics.hpp"
#include "impl/fire_log.hpp"
#include "impl/lock_service.hpp"
#include "impl/run_registry.hpp"
#include "impl/spool.hpp"
#include "sched/common/backoff.hpp"
#include "sched/common/net.hpp"
#include "sched/http/client.hpp"
#include "sched/http/json.hpp"
#include "sched/http/server.hpp"
#include "sched/http/url.hpp"
#include "sched/protocol/registry.hpp"
#include "sched/protocol/request_signature.hpp"
#include "sched/protocol/run.hpp"
#include "sched/protocol/run_batch.hpp"

namespace sched::client {
namespace impl {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::size_t kLogPageLines = 1000;
using protocol::kMaxRunsPerBatch;
constexpr auto kHeartbeatRetry = std::chrono::seconds(2);
constexpr auto kStopPoll = milliseconds(10);

std::int64_t WallMs() {
    return std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// "2026-01-02T03:04:05.678Z": log lines are read by people in other time zones.
std::string LogTimestamp() {
    const std::int64_t ms = WallMs();
    const std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    std::array<char, 32> buf{};
    const auto n = std::strftime(buf.data(), buf.size(), "%Y-%m-%dT%H:%M:%S", &tm);
    return std::string(buf.data(), n) + fmt::format(".{:03d}Z", static_cast<int>(ms % 1000));
}

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
    switch (wire.block_strategy) {
        case protocol::BlockStrategy::kSerial:
            run.block_strategy = BlockStrategy::kSerial;
            break;
        case protocol::BlockStrategy::kDiscardLater:
            run.block_strategy = BlockStrategy::kDiscardLater;
            break;
        case protocol::BlockStrategy::kCoverEarly:
            run.block_strategy = BlockStrategy::kCoverEarly;
            break;
    }
    run.callback_url = std::move(wire.callback_url);
    return run;
}

bool ValidHandlerName(const std::string& name) {
    if (name.empty() || name.size() > 128) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    });
}

}  // namespace

class Runtime {
  public:
    explicit Runtime(ExecutorOptions options);
    ~Runtime();

    void Handle(std::string name, Handler handler);
    void Start();
    void Stop();
    std::uint16_t port() const { return server_ ? server_->port() : 0; }
    std::string address() const { return address_; }
    ExecutorStats Stats() const;
    MetricsRegistry& metrics() { return metrics_registry_; }
    Result<LockGuard> Lock(std::string_view key, milliseconds lease, milliseconds wait);

  private:
    http::Router Routes();
    http::Response OnRun(http::Request& req);
    http::Response OnRuns(http::Request& req);
    // One run's admission, shared by /v1/run and /v1/runs: the HTTP status and the JSON answer.
    // `prefix` names the run in error fields ("runs[2]"; "" for /v1/run).
    struct RunAnswer {
        int status = 202;
        nlohmann::json body;
    };
    RunAnswer AdmitRun(const nlohmann::json& body, const std::string& prefix);
    static RunAnswer Refuse(const http::ApiError& error);
    http::Response OnKill(http::Request& req);
    http::Response OnBeat(http::Request& req);
    /// This instance as the registry sees it (heartbeat and /v1/beat).
    protocol::Heartbeat HeartbeatNow();
    http::Response OnIdleBeat(http::Request& req);
    http::Response OnLog(http::Request& req);
    http::Response OnMetrics(http::Request& req);

    void Launch(RunPtr run);
    void Execute(const RunPtr& run);
    void ReportNeverStarted(const RunPtr& run, const std::string& message);
    // Queues `result` for delivery and counts it (handler_seconds < 0: it never started).
    void Report(CallbackResult result, const std::string& handler, double handler_seconds);
    void FireLog(std::int64_t fire_id, const std::string& text);
    // The fire's log tail (options_.log_tail_bytes) into its result, for the cluster to keep.
    void AttachLogTail(CallbackResult& result) const;
    std::vector<std::string> HandlerNames() const;

    // The answer of the first endpoint that took the call (2xx), nullopt when none did.
    net::awaitable<std::optional<http::ClientResponse>> PostToWeb(std::string path, nlohmann::json body,
                                                                  std::string preferred_url);
    Status VerifyRequest(const http::Request& req) const;
    void LearnSigning(const http::ClientResponse& heartbeat_answer);
    net::awaitable<void> HeartbeatLoop();
    net::awaitable<bool> Deregister();
    net::awaitable<void> CallbackLoop();
    net::awaitable<bool> FlushResults();
    std::vector<CallbackResult> TakeBatch();
    void SpoolOrRequeue(std::vector<CallbackResult> batch);
    void SpoolOutbox();

    const ExecutorOptions options_;
    // Before everything its observed series read: destroyed after them.
    MetricsRegistry metrics_registry_;
    std::unique_ptr<ExecutorMetrics> metrics_;  // created by Start(), with the handler names
    http::AuthHook metrics_auth_;               // set when metrics-token is
    std::vector<http::Url> endpoints_;
    std::map<std::string, Handler> handlers_;  // read-only after Start()
    bool started_ = false;
    std::mutex stop_mu_;
    bool stopped_ = false;

    net::io_context io_;
    // The heartbeat and callback loops, their timers, and the run timeout timers live here.
    net::strand<net::io_context::executor_type> strand_;
    std::optional<net::executor_work_guard<net::io_context::executor_type>> work_;
    std::thread io_thread_;
    std::unique_ptr<net::thread_pool> workers_;
    std::unique_ptr<http::Server> server_;
    std::unique_ptr<http::HttpClient> client_;
    std::atomic<std::size_t> preferred_endpoint_{0};
    std::string address_;

    RunRegistry registry_;
    FireLogBook logs_;
    std::unique_ptr<ResultSpool> spool_;  // used only by the callback loop once started
    mutable std::mutex outbox_mu_;
    std::deque<CallbackResult> outbox_;

    std::atomic<bool> accepting_{false};
    std::atomic<bool> heartbeat_stop_{false};
    std::atomic<bool> callback_stop_{false};
    net::steady_timer heartbeat_timer_;
    net::steady_timer callback_timer_;
    std::future<void> heartbeat_done_;
    std::future<void> callback_done_;
    bool web_reachable_ = true;  // callback loop only: to log transitions, not every failure
    std::mutex locks_mu_;
    std::shared_ptr<LockService> locks_;  // created by the first Lock()

    // What VerifyRequest checks against, replaced by each heartbeat answer.
    mutable std::mutex signing_mu_;
    std::vector<protocol::SigningKey> signing_keys_;
    std::int64_t clock_offset_ms_ = 0;  // cluster (DB) clock minus local wall clock
    // Wall-clock bounds of the last successful PostToWeb attempt (strand only): the RTT.
    std::int64_t last_post_sent_ms_ = 0;
    std::int64_t last_post_answered_ms_ = 0;

    struct Counters {
        std::atomic<std::uint64_t> accepted{0}, duplicates{0}, stale{0}, busy{0}, capacity{0};
        std::atomic<std::uint64_t> succeeded{0}, failed{0}, timed_out{0}, killed{0};
        std::atomic<std::uint64_t> delivered{0}, spooled{0}, spool_pending{0};
        std::atomic<std::uint64_t> heartbeats_ok{0}, heartbeats_failed{0}, callback_failures{0};
        mutable std::atomic<std::uint64_t> refused_unsigned{0};
    } counters_;
    mutable std::atomic<std::int64_t> last_refusal_log_ms_{0};
};

Runtime::Runtime(ExecutorOptions options)
    : options_(std::move(options)),
      strand_(net::make_strand(io_.get_executor())),
      registry_(static_cast<std::size_t>(options_.capacity), static_cast<std::size_t>(options_.dedupe_window)),
      logs_(static_cast<std::size_t>(options_.log_retained_fires), static_cast<std::size_t>(options_.log_max_lines),
            static_cast<std::size_t>(options_.log_tail_bytes)),
      heartbeat_timer_(strand_),
      callback_timer_(strand_) {
    options_.Validate();
    if (!options_.metrics_token.empty()) metrics_auth_ = http::BearerTokenAuth(options_.metrics_token);
    for (const auto& e : options_.web_endpoints) endpoints_.push_back(*http::Url::Parse(e));
}

Runtime::~Runtime() {
    Stop();
}

void Runtime::Handle(std::string name, Handler handler) {
    if (started_) throw std::logic_error("Executor::Handle(\"" + name + "\") after Start()");
    if (!ValidHandlerName(name)) throw std::logic_error("Executor::Handle: bad handler name \"" + name + "\"");
    if (!handler) throw std::logic_error("Executor::Handle(\"" + name + "\"): empty handler");
    if (!handlers_.emplace(name, std::move(handler)).second) {
        throw std::logic_error("Executor::Handle: handler \"" + name + "\" registered twice");
    }
}

std::vector<std::string> Runtime::HandlerNames() const {
    std::vector<std::string> names;
    for (const auto& [name, fn] : handlers_) names.push_back(name);
    return names;
}

void Runtime::Start() {
    if (started_) throw std::logic_error("Executor::Start() called twice");
    if (handlers_.empty()) throw std::logic_error("Executor::Start() without handlers: call Handle() first");
    spool_ = std::make_unique<ResultSpool>(options_.spool_dir);
    counters_.spool_pending = spool_->pending();
    metrics_ = std::make_unique<ExecutorMetrics>(
        metrics_registry_, options_.app, HandlerNames(), [this] { return Stats(); },
        [this] { return server_ ? server_->Stats() : http::ServerStats{}; });

    // Every route nodes call is verified before its handler runs; no bearer token is accepted.
    server_ = std::make_unique<http::Server>(io_.get_executor(), options_.http, Routes(),
                                             [this](const http::Request& req) { return VerifyRequest(req); });
    server_->Start();
    if (!options_.advertised_address.empty()) {
        address_ = options_.advertised_address;
    } else {
        const auto host = http::HostPort::Parse(options_.http.listen)->host;
        address_ = http::HostPort{host, server_->port()}.Reachable(http::LocalHostname()).ToString();
    }
    http::ClientOptions client_options;
    client_options.connect_timeout = std::min(options_.web_timeout, client_options.connect_timeout);
    client_options.user_agent = "sched-client/" + options_.app;
    client_ = std::make_unique<http::HttpClient>(io_.get_executor(), client_options);
    workers_ = std::make_unique<net::thread_pool>(static_cast<std::size_t>(options_.worker_threads));

    started_ = true;
    accepting_ = true;
    work_.emplace(io_.get_executor());
    io_thread_ = std::thread([this] { io_.run(); });
    heartbeat_done_ = net::co_spawn(strand_, HeartbeatLoop(), net::use_future);
    callback_done_ = net::co_spawn(strand_, CallbackLoop(), net::use_future);
    spdlog::info("executor {}: serving {} handler(s) at {}, web endpoints: {}", options_.app, handlers_.size(),
                 address_, fmt::join(options_.web_endpoints, ", "));
}

void Runtime::Stop() {
    std::lock_guard lock(stop_mu_);
    if (!started_ || stopped_) return;
    stopped_ = true;
    spdlog::info("executor {}: stopping", options_.app);
    accepting_ = false;

    heartbeat_stop_ = true;
    net::post(strand_, [this] { heartbeat_timer_.cancel(); });
    heartbeat_done_.wait();
    if (!net::co_spawn(strand_, Deregister(), net::use_future).get()) {
        spdlog::warn("executor {}: no web endpoint acknowledged deregistration", options_.app);
    }

    const auto grace_end = Clock::now() + options_.shutdown_grace;
    while (registry_.InFlight() > 0 && Clock::now() < grace_end) std::this_thread::sleep_for(kStopPoll);
    if (registry_.InFlight() > 0) {
        spdlog::warn("executor {}: cancelling {} run(s) still in flight after the shutdown grace", options_.app,
                     registry_.InFlight());
        for (const auto& run : registry_.CancelAll(CancelReason::kShutdown)) {
            ReportNeverStarted(run, "executor shutting down");
        }
        auto next_warning = Clock::now() + std::chrono::seconds(5);
        while (registry_.InFlight() > 0) {
            if (Clock::now() >= next_warning) {
                spdlog::warn("executor {}: waiting for handlers that ignore cancellation (fires {})", options_.app,
                             fmt::join(registry_.RunningFires(), ", "));
                next_warning += std::chrono::seconds(5);
            }
            std::this_thread::sleep_for(kStopPoll);
        }
    }
    workers_->join();

    callback_stop_ = true;
    net::post(strand_, [this] { callback_timer_.cancel(); });
    callback_done_.wait();

    net::co_spawn(io_, server_->Shutdown(), net::use_future).get();
    client_->CloseIdle();
    work_.reset();
    io_.stop();
    io_thread_.join();
    spool_.reset();
    spdlog::info("executor {}: stopped", options_.app);
}

Result<LockGuard> Runtime::Lock(std::string_view key, milliseconds lease, milliseconds wait) {
    std::shared_ptr<LockService> locks;
    {
        std::lock_guard lock(locks_mu_);
        // Its own I/O thread: locks work before Start() and after Stop(), and a guard may
        // outlive the executor.
        if (!locks_)
            locks_ = std::make_shared<LockService>(endpoints_, options_.token, options_.web_timeout, options_.app);
        locks = locks_;
    }
    return locks->Lock(key, lease, wait);
}

ExecutorStats Runtime::Stats() const {
    ExecutorStats s;
    s.accepted = counters_.accepted;
    s.duplicates = counters_.duplicates;
    s.refused_stale_epoch = counters_.stale;
    s.refused_busy = counters_.busy;
    s.refused_capacity = counters_.capacity;
    s.succeeded = counters_.succeeded;
    s.failed = counters_.failed;
    s.timed_out = counters_.timed_out;
    s.killed = counters_.killed;
    s.results_delivered = counters_.delivered;
    s.results_spooled = counters_.spooled;
    s.spool_pending = counters_.spool_pending;
    s.in_flight = registry_.InFlight();
    s.heartbeats_sent = counters_.heartbeats_ok;
    s.heartbeats_failed = counters_.heartbeats_failed;
    s.callback_failures = counters_.callback_failures;
    {
        std::lock_guard lock(outbox_mu_);
        s.results_queued = outbox_.size();
    }
    s.refused_unsigned = counters_.refused_unsigned;
    std::lock_guard lock(signing_mu_);
    s.signing_keys = signing_keys_.size();
    s.clock_offset_ms = clock_offset_ms_;
    return s;
}

// ---- HTTP API (the handlers never block: they run on the I/O thread) ----

http::Router Runtime::Routes() {
    http::Router r;
    r.Add(http::Method::kPost, "/v1/run", [this](http::Request& req) { return OnRun(req); });
    r.Add(http::Method::kPost, protocol::kRunsPath, [this](http::Request& req) { return OnRuns(req); });
    r.Add(http::Method::kPost, "/v1/kill", [this](http::Request& req) { return OnKill(req); });
    r.Add(http::Method::kGet, "/v1/beat", [this](http::Request& req) { return OnBeat(req); });
    r.Add(http::Method::kPost, "/v1/idle-beat", [this](http::Request& req) { return OnIdleBeat(req); });
    r.Add(http::Method::kGet, "/v1/log", [this](http::Request& req) { return OnLog(req); });
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
    RunAnswer answer = AdmitRun(*body, "");
    return http::Response::Json(answer.body, answer.status);
}

// The batch form of /v1/run: one signed request carries the runs a node sends this instance at
// one due time, each admitted exactly as /v1/run would admit it, each answered in its own
// item. A malformed envelope is one 400; a malformed run is that item's 400
// ("runs[3].fire_id").
http::Response Runtime::OnRuns(http::Request& req) {
    auto body = req.Json();
    if (!body.ok()) return http::Response::Error(body.status(), "body");
    if (!body->is_object() || !body->contains("runs") || !(*body)["runs"].is_array()) {
        return http::Response::Error(
            http::ApiError{Code::kInvalidArgument, "runs: required, an array of runs", "runs"});
    }
    auto& runs = (*body)["runs"];
    if (runs.empty() || runs.size() > kMaxRunsPerBatch) {
        return http::Response::Error(http::ApiError{
            Code::kInvalidArgument,
            "runs: expected 1.." + std::to_string(kMaxRunsPerBatch) + " runs, got " + std::to_string(runs.size()),
            "runs"});
    }
    for (const auto& key : body->items()) {
        if (key.key() != "runs") {
            return http::Response::Error(
                http::ApiError{Code::kInvalidArgument, key.key() + ": unknown field", std::string(key.key())});
        }
    }
    nlohmann::json results = nlohmann::json::array();
    for (std::size_t i = 0; i < runs.size(); ++i) {
        RunAnswer answer = AdmitRun(runs[i], "runs[" + std::to_string(i) + "]");
        answer.body["status"] = answer.status;
        results.push_back(std::move(answer.body));
    }
    return http::Response::Json({{"results", std::move(results)}}, 200);
}

Runtime::RunAnswer Runtime::Refuse(const http::ApiError& error) {
    nlohmann::json e = {{"code", CodeName(error.code)}, {"message", error.message}, {"field", nullptr}};
    if (!error.field.empty()) e["field"] = error.field;
    return {http::HttpStatusFor(error.code), {{"error", std::move(e)}}};
}

Runtime::RunAnswer Runtime::AdmitRun(const nlohmann::json& body, const std::string& prefix) {
    const auto named = [&](const char* field) {
        return prefix.empty() ? std::string(field) : prefix + "." + field;
    };
    auto parsed = protocol::ParseRunRequest(body, prefix);
    if (!parsed.ok()) return Refuse(*parsed.error);
    RunRequest run = ToClientRun(std::move(parsed.value));
    if (!handlers_.contains(run.handler)) {
        return Refuse(http::ApiError{Code::kNotFound,
                                     "no handler \"" + run.handler + "\" in app " + options_.app +
                                         " (handlers: " + fmt::format("{}", fmt::join(HandlerNames(), ", ")) + ")",
                                     named("handler")});
    }
    if (!accepting_) return Refuse(http::ApiError{Code::kUnavailable, "the executor is stopping", ""});

    const std::int64_t fire_id = run.fire_id;
    AdmitResult admit = registry_.Admit(std::move(run), [this](const Run& accepted, bool start_now) {
        const RunRequest& r = accepted.request;
        logs_.Open(r.fire_id);
        FireLog(r.fire_id, "accepted: handler " + r.handler + ", attempt " + std::to_string(r.attempt) + ", epoch " +
                               std::to_string(r.epoch) + (start_now ? "" : " (queued behind the job's running fire)"));
    });
    switch (admit.admission) {
        case Admission::kStaleEpoch:
            ++counters_.stale;
            return Refuse(http::ApiError{Code::kAborted, admit.message, named("epoch")});
        case Admission::kDuplicate:
            ++counters_.duplicates;
            return {202, {{"accepted", true}, {"duplicate", true}, {"fire_id", fire_id}}};
        case Admission::kBusy:
            ++counters_.busy;
            return Refuse(http::ApiError{Code::kAborted, admit.message, named("block_strategy")});
        case Admission::kNoCapacity:
            ++counters_.capacity;
            return Refuse(http::ApiError{Code::kResourceExhausted, admit.message, ""});
        case Admission::kAccepted:
            break;
    }
    ++counters_.accepted;
    for (const auto& dropped : admit.dropped) {
        ReportNeverStarted(dropped, "covered by fire " + std::to_string(fire_id) + " before it started");
    }
    if (admit.start_now) Launch(admit.run);
    return {202, {{"accepted", true}, {"fire_id", fire_id}, {"state", admit.start_now ? "running" : "queued"}}};
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
    return http::Response::Json({{"fire_id", fire_id}, {"state", k.was_running ? "running" : "queued"}});
}

protocol::Heartbeat Runtime::HeartbeatNow() {
    return {.app = options_.app,
            .address = address_,
            .handlers = HandlerNames(),
            .capacity = options_.capacity,
            .running = static_cast<std::int64_t>(registry_.InFlight())};
}

http::Response Runtime::OnBeat(http::Request&) {
    nlohmann::json beat = protocol::ToJson(HeartbeatNow());
    beat["epoch"] = registry_.MaxEpoch();
    return http::Response::Json(beat);
}

http::Response Runtime::OnIdleBeat(http::Request& req) {
    auto body = req.Json();
    if (!body.ok()) return http::Response::Error(body.status(), "body");
    http::JsonFields f(*body);
    const auto job_id = f.Int("job_id", {.min = 0});
    if (f.error()) return http::Response::Error(*f.error());
    if (!registry_.Idle(job_id)) {
        return http::Response::Error(
            http::ApiError{Code::kFailedPrecondition,
                           "job " + std::to_string(job_id) + " has a run in progress or queued here", "job_id"});
    }
    return http::Response::Json({{"job_id", job_id}, {"idle", true}});
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
    const auto page = logs_.Read(*fire_id, from_line, kLogPageLines);
    if (!page) {
        return http::Response::Error(
            http::ApiError{Code::kNotFound, "no log for fire " + std::to_string(*fire_id) + " here", "fire_id"});
    }
    return http::Response::Json({{"fire_id", *fire_id},
                                 {"from_line", page->from_line},
                                 {"to_line", page->next_line},
                                 {"lines", page->lines},
                                 {"finished", page->finished}});
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

// ---- Runs (Execute runs on a worker thread) ----

void Runtime::Launch(RunPtr run) {
    net::post(*workers_, [this, run = std::move(run)] { Execute(run); });
}

void Runtime::FireLog(std::int64_t fire_id, const std::string& text) {
    logs_.Append(fire_id, LogTimestamp() + " " + text);
}

void Runtime::AttachLogTail(CallbackResult& result) const {
    if (options_.log_tail_bytes <= 0) return;
    if (auto tail = logs_.ReadTail(result.fire_id)) {
        result.log = std::move(tail->text);
        result.log_truncated_bytes = tail->truncated_bytes;
    }
}

void Runtime::Execute(const RunPtr& run) {
    const RunRequest& r = run->request;
    const std::int64_t started_ms = WallMs();
    const auto timeout = milliseconds(r.timeout_ms);
    const auto deadline = r.timeout_ms > 0 ? Clock::now() + timeout : Clock::time_point::max();
    std::shared_ptr<net::steady_timer> timer;
    if (r.timeout_ms > 0) {
        timer = std::make_shared<net::steady_timer>(strand_);
        net::post(strand_, [timer, run, timeout] {
            timer->expires_after(timeout);
            timer->async_wait([run](const boost::system::error_code& ec) {
                if (!ec) run->token.Cancel(CancelReason::kTimeout);
            });
        });
    }
    FireLog(r.fire_id, "started: shard " + std::to_string(r.shard_index) + "/" + std::to_string(r.shard_total));
    JobContext ctx(r, run->token, deadline, [this, id = r.fire_id](const std::string& line) { FireLog(id, line); });
    Status status;
    if (run->token.cancelled()) {
        status = Cancelled("cancelled before it started");
    } else {
        try {
            status = handlers_.at(r.handler)(ctx);
        } catch (const std::exception& e) {
            status = Internal(std::string("handler threw: ") + e.what());
        } catch (...) {
            status = Internal("handler threw a non-standard exception");
        }
    }
    if (timer) net::post(strand_, [timer] { timer->cancel(); });

    CallbackResult result;
    result.fire_id = r.fire_id;
    result.attempt = r.attempt;
    result.epoch = r.epoch;
    result.started_ms = started_ms;
    result.finished_ms = WallMs();
    result.callback_url = r.callback_url;
    // After a cancellation the reason decides, whatever the handler returned: the scheduler
    // asked for it to stop, and it must not count as a normal success or failure.
    switch (run->token.reason()) {
        case CancelReason::kTimeout:
            result.outcome = protocol::RunOutcome::kTimeout;
            result.code = std::string(CodeName(Code::kDeadlineExceeded));
            result.message = "timed out after " + std::to_string(r.timeout_ms) + " ms";
            break;
        case CancelReason::kKilled:
            result.outcome = protocol::RunOutcome::kKilled;
            result.code = std::string(CodeName(Code::kCancelled));
            result.message = "killed by request";
            break;
        case CancelReason::kCovered:
            result.outcome = protocol::RunOutcome::kKilled;
            result.code = std::string(CodeName(Code::kCancelled));
            result.message = "covered by fire " + std::to_string(run->covered_by.load());
            break;
        case CancelReason::kShutdown:
            result.outcome = protocol::RunOutcome::kKilled;
            result.code = std::string(CodeName(Code::kCancelled));
            result.message = "executor shutting down";
            break;
        case CancelReason::kNone:
            result.outcome = status.ok() ? protocol::RunOutcome::kSucceeded : protocol::RunOutcome::kFailed;
            result.code = std::string(CodeName(status.code()));
            result.message = status.ok() ? ctx.result_message() : status.message();
            break;
    }
    FireLog(r.fire_id, "finished: " + std::string(protocol::Name(result.outcome)) +
                           (result.message.empty() ? "" : ": " + result.message));
    logs_.Close(r.fire_id);
    AttachLogTail(result);
    const double handler_seconds = static_cast<double>(result.finished_ms - started_ms) / 1e3;
    // Free the slot before reporting: whoever sees the result may ask at once whether we are idle.
    RunPtr next = registry_.Finish(run);
    Report(std::move(result), r.handler, handler_seconds);
    if (next) Launch(std::move(next));
}

void Runtime::ReportNeverStarted(const RunPtr& run, const std::string& message) {
    const RunRequest& r = run->request;
    CallbackResult result;
    result.fire_id = r.fire_id;
    result.attempt = r.attempt;
    result.epoch = r.epoch;
    result.outcome = protocol::RunOutcome::kKilled;
    result.code = std::string(CodeName(Code::kCancelled));
    result.message = message;
    result.started_ms = result.finished_ms = WallMs();
    result.callback_url = r.callback_url;
    FireLog(r.fire_id, "killed: " + message);
    logs_.Close(r.fire_id);
    AttachLogTail(result);
    Report(std::move(result), r.handler, -1);
}

void Runtime::Report(CallbackResult result, const std::string& handler, double handler_seconds) {
    if (metrics_) metrics_->RunEnded(handler, std::string(protocol::Name(result.outcome)), handler_seconds);
    result.address = address_;  // the server checks that the result comes from the instance that ran it
    switch (result.outcome) {
        case protocol::RunOutcome::kSucceeded:
            ++counters_.succeeded;
            break;
        case protocol::RunOutcome::kFailed:
            ++counters_.failed;
            break;
        case protocol::RunOutcome::kTimeout:
            ++counters_.timed_out;
            break;
        case protocol::RunOutcome::kKilled:
            ++counters_.killed;
            break;
    }
    std::lock_guard lock(outbox_mu_);
    outbox_.push_back(std::move(result));
}

// ---- The web module (coroutines on strand_) ----

Status Runtime::VerifyRequest(const http::Request& req) const {
    std::lock_guard lock(signing_mu_);
    if (signing_keys_.empty()) {
        return {Code::kUnauthenticated,
                "no signing keys yet: they arrive with the first answered heartbeat (docs/protocol.md)"};
    }
    const protocol::SignedRequest signed_request{.method = req.method_text,
                                                 .target = req.target,
                                                 .body = req.body,
                                                 .key_id = req.headers.Get(protocol::kKeyIdHeader),
                                                 .timestamp = req.headers.Get(protocol::kTimestampHeader),
                                                 .signature = req.headers.Get(protocol::kSignatureHeader)};
    Status verified = protocol::VerifySignature(signed_request, signing_keys_, WallMs() + clock_offset_ms_,
                                                options_.signature_window);
    if (!verified.ok()) {
        ++counters_.refused_unsigned;
        // At most one line per second: a flood of forged calls must not become a flood of logs.
        const std::int64_t now = WallMs();
        std::int64_t last = last_refusal_log_ms_.load();
        if (now - last >= 1000 && last_refusal_log_ms_.compare_exchange_strong(last, now)) {
            spdlog::warn("executor {}: refused {} {} from {}: {} ({} refused so far)", options_.app, req.method_text,
                         req.path, req.remote, verified.message(), counters_.refused_unsigned.load());
        }
    }
    return verified;
}

void Runtime::LearnSigning(const http::ClientResponse& answer) {
    // An answer without keys (an older server) changes nothing; a malformed one is ignored
    // whole, so one bad answer never drops keys that work.
    constexpr std::size_t kMaxKeys = 8;
    constexpr std::size_t kMaxField = 256;
    auto body = answer.Json();
    if (!body.ok() || !body->is_object() || !body->contains("signing")) return;
    const auto& signing = (*body)["signing"];
    if (!signing.is_object() || !signing.contains("keys") || !signing["keys"].is_array() ||
        signing["keys"].size() > kMaxKeys || !signing.contains("server_time_ms") ||
        !signing["server_time_ms"].is_number_integer()) {
        spdlog::warn("executor {}: ignoring a malformed signing object in the heartbeat answer", options_.app);
        return;
    }
    std::vector<protocol::SigningKey> keys;
    for (const auto& k : signing["keys"]) {
        if (!k.is_object() || !k.contains("id") || !k["id"].is_string() || !k.contains("secret") ||
            !k["secret"].is_string()) {
            return;
        }
        protocol::SigningKey key{k["id"].get<std::string>(), k["secret"].get<std::string>()};
        if (key.id.empty() || key.id.size() > kMaxField || key.secret.empty() || key.secret.size() > kMaxField) return;
        keys.push_back(std::move(key));
    }
    // The server read its clock somewhere between our send and its answer: assume the middle
    // (the error is at most half the round trip, far inside the signature window).
    const std::int64_t server_ms = signing["server_time_ms"].get<std::int64_t>();
    const std::int64_t offset = server_ms - (last_post_sent_ms_ + last_post_answered_ms_) / 2;
    std::lock_guard lock(signing_mu_);
    if (keys.size() != signing_keys_.size() || !std::equal(keys.begin(), keys.end(), signing_keys_.begin(),
                                                           [](const auto& a, const auto& b) { return a.id == b.id; })) {
        std::vector<std::string> ids;
        ids.reserve(keys.size());
        for (const auto& k : keys) ids.push_back(k.id);
        spdlog::info("executor {}: signing keys now {}; cluster clock offset {} ms", options_.app, fmt::join(ids, ", "),
                     offset);
    }
    signing_keys_ = std::move(keys);
    clock_offset_ms_ = offset;
}

net::awaitable<std::optional<http::ClientResponse>> Runtime::PostToWeb(std::string path, nlohmann::json body,
                                                                       std::string preferred_url) {
    std::vector<std::string> targets;
    if (!preferred_url.empty()) targets.push_back(preferred_url);
    const std::size_t first_endpoint = targets.size();
    const std::size_t start = preferred_endpoint_.load();
    for (std::size_t i = 0; i < endpoints_.size(); ++i) {
        targets.push_back(endpoints_[(start + i) % endpoints_.size()].WithPath(path).ToString());
    }
    http::CallOptions call;
    call.timeout = options_.web_timeout;
    call.bearer_token = options_.token;
    for (std::size_t t = 0; t < targets.size(); ++t) {
        const std::int64_t sent = WallMs();
        auto r = co_await client_->PostJson(targets[t], body, call);
        if (r.ok() && r->ok()) {
            if (t >= first_endpoint) preferred_endpoint_ = (start + t - first_endpoint) % endpoints_.size();
            last_post_sent_ms_ = sent;
            last_post_answered_ms_ = WallMs();
            co_return std::move(*r);
        }
        spdlog::debug("executor {}: POST {} failed: {}", options_.app, targets[t],
                      r.ok() ? "HTTP " + std::to_string(r->status) + " " + r->body : r.status().ToString());
    }
    co_return std::nullopt;
}

net::awaitable<void> Runtime::HeartbeatLoop() {
    bool was_ok = true;
    while (!heartbeat_stop_) {
        nlohmann::json body = protocol::ToJson(HeartbeatNow());
        auto answer = co_await PostToWeb("/api/v1/registry/heartbeat", body, "");
        const bool ok = answer.has_value();
        if (ok) LearnSigning(*answer);
        ++(ok ? counters_.heartbeats_ok : counters_.heartbeats_failed);
        if (ok != was_ok) {
            if (ok) {
                spdlog::info("executor {}: heartbeats acknowledged again", options_.app);
            } else {
                spdlog::warn("executor {}: no web endpoint acknowledged the heartbeat", options_.app);
            }
            was_ok = ok;
        }
        if (heartbeat_stop_) break;
        const auto interval = std::chrono::duration_cast<Clock::duration>(options_.heartbeat_interval);
        heartbeat_timer_.expires_after(ok ? interval : std::min<Clock::duration>(interval, kHeartbeatRetry));
        boost::system::error_code ec;
        co_await heartbeat_timer_.async_wait(net::redirect_error(net::use_awaitable, ec));
    }
}

net::awaitable<bool> Runtime::Deregister() {
    nlohmann::json body = protocol::ToJson(protocol::Deregister{.app = options_.app, .address = address_});
    auto answer = co_await PostToWeb("/api/v1/registry/deregister", body, "");
    co_return answer.has_value();
}

std::vector<CallbackResult> Runtime::TakeBatch() {
    std::lock_guard lock(outbox_mu_);
    std::vector<CallbackResult> batch;
    if (outbox_.empty()) return batch;
    // One batch goes to one callback URL: the oldest result's. Results of the other URLs stay
    // queued in their order. Each trigger node names itself as the callback URL of the runs it
    // dispatched, so with several nodes the outbox interleaves them; cutting the batch at the
    // first other URL made batches of 3-5 results (a transaction each at the web side) where a
    // flush interval holds dozens.
    const std::string url = outbox_.front().callback_url;
    std::deque<CallbackResult> rest;
    std::size_t bytes = 0;
    bool full = false;
    for (auto& r : outbox_) {
        if (!full && r.callback_url == url) {
            // Logs make results large: a batch stays under the web module's body limit.
            bytes += r.WireBytes();
            full = batch.size() >= static_cast<std::size_t>(options_.callback_batch_size) ||
                   (!batch.empty() && bytes > kCallbackBatchBytes);
            if (!full) {
                batch.push_back(std::move(r));
                continue;
            }
        }
        rest.push_back(std::move(r));
    }
    outbox_.swap(rest);
    return batch;
}

void Runtime::SpoolOrRequeue(std::vector<CallbackResult> batch) {
    if (batch.empty()) return;
    const Status s = spool_->Append(batch);
    if (s.ok()) {
        counters_.spooled += batch.size();
        counters_.spool_pending = spool_->pending();
        return;
    }
    // Keep them in memory rather than lose them; the next round tries the disk again.
    spdlog::error("executor {}: {}", options_.app, s.ToString());
    std::lock_guard lock(outbox_mu_);
    outbox_.insert(outbox_.begin(), std::make_move_iterator(batch.begin()), std::make_move_iterator(batch.end()));
}

void Runtime::SpoolOutbox() {
    std::vector<CallbackResult> all;
    {
        std::lock_guard lock(outbox_mu_);
        all.assign(std::make_move_iterator(outbox_.begin()), std::make_move_iterator(outbox_.end()));
        outbox_.clear();
    }
    SpoolOrRequeue(std::move(all));
}

net::awaitable<bool> Runtime::FlushResults() {
    // Spooled results are the oldest: they go first.
    while (spool_->pending() > 0) {
        const auto batch = spool_->Peek(static_cast<std::size_t>(options_.callback_batch_size));
        nlohmann::json body = nlohmann::json::array();
        for (const auto& r : batch) body.push_back(r.ToJson());
        auto answer = co_await PostToWeb("/api/v1/callback", body, batch.front().callback_url);
        const bool ok = answer.has_value();
        if (!ok) {
            ++counters_.callback_failures;
            // While no endpoint answers, every new result goes to disk at once.
            SpoolOutbox();
            co_return false;
        }
        if (const Status s = spool_->Ack(batch.size()); !s.ok())
            spdlog::error("executor {}: {}", options_.app, s.ToString());
        counters_.delivered += batch.size();
        counters_.spool_pending = spool_->pending();
    }
    // What was queued when this flush began goes out now; results that arrive while its
    // requests are in flight wait for the next flush, sharing a batch. (Draining until the
    // queue was empty sent a request every few ms with 3-5 results each: on a quiet machine at
    // 1,000 fires/s, 217 callback transactions/s.) A backlog still drains at full speed: it
    // was queued when the flush began.
    std::size_t due = 0;
    {
        std::lock_guard lock(outbox_mu_);
        due = outbox_.size();
    }
    for (std::size_t sent = 0; sent < due;) {
        auto batch = TakeBatch();
        if (batch.empty()) break;
        sent += batch.size();
        nlohmann::json body = nlohmann::json::array();
        for (const auto& r : batch) body.push_back(r.ToJson());
        auto answer = co_await PostToWeb("/api/v1/callback", body, batch.front().callback_url);
        const bool ok = answer.has_value();
        if (!ok) {
            ++counters_.callback_failures;
            SpoolOrRequeue(std::move(batch));
            SpoolOutbox();
            co_return false;
        }
        counters_.delivered += batch.size();
    }
    co_return true;
}

net::awaitable<void> Runtime::CallbackLoop() {
    const auto flush = std::chrono::duration_cast<Clock::duration>(options_.callback_flush_interval);
    // After a failed round the pause doubles from 2 * flush-interval up to callback-max-backoff.
    Backoff backoff(std::min<Micros>(options_.callback_flush_interval * 2, options_.callback_max_backoff),
                    options_.callback_max_backoff);
    for (;;) {
        const bool final_round = callback_stop_.load();
        const bool ok = co_await FlushResults();
        if (ok != web_reachable_) {
            if (ok) {
                spdlog::info("executor {}: results delivered again", options_.app);
            } else {
                spdlog::warn("executor {}: no web endpoint accepts results; spooling them to {}", options_.app,
                             spool_->dir().string());
            }
            web_reachable_ = ok;
        }
        if (final_round) break;
        if (ok) backoff.Reset();
        if (callback_stop_) continue;  // straight to the final round
        if (ok) {
            callback_timer_.expires_after(flush);
        } else {
            callback_timer_.expires_after(backoff.Next());
        }
        boost::system::error_code ec;
        co_await callback_timer_.async_wait(net::redirect_error(net::use_awaitable, ec));
    }
}

}  // namespace impl

Executor::Executor(ExecutorOptions options) : runtime_(std::make_unique<impl::Runtime>(std::move(options))) {}
Executor::~Executor() = default;
Executor& Executor::Handle(std::string name, Handler handler) {
    runtime_->Handle(std::move(name), std::move(handler));
    return *this;
}
void Executor::Start() {
    runtime_->Start();
}
void Executor::Stop() {
    runtime_->Stop();
}
std::uint16_t Executor::port() const {
    return runtime_->port();
}
std::string Executor::address() const {
    return runtime_->address();
}
ExecutorStats Executor::Stats() const {
    return runtime_->Stats();
}
MetricsRegistry& Executor::metrics() {
    return runtime_->metrics();
}
Result<LockGuard> Executor::Lock(std::string_view key, std::chrono::milliseconds lease,
                                 std::chrono::milliseconds wait) {
    return runtime_->Lock(key, lease, wait);
}

}  // namespace sched::client
