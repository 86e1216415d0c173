#pragma once

/// The executor's runtime (sched::client::Executor's implementation), one class split over
/// files by concept: executor.cpp (lifecycle), executor_routes.cpp (the HTTP API nodes call),
/// executor_runs.cpp (running handlers), executor_web.cpp (the web module: endpoint failover,
/// heartbeat, request signing), executor_results.cpp (result delivery: outbox, spool,
/// callbacks). Internal: not installed.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "impl/executor_metrics.hpp"
#include "impl/fire_log.hpp"
#include "impl/lock_service.hpp"
#include "impl/outbox.hpp"
#include "impl/run_registry.hpp"
#include "impl/spool.hpp"
#include "sched/client/executor.hpp"
#include "sched/common/net.hpp"
#include "sched/http/client.hpp"
#include "sched/http/json.hpp"
#include "sched/http/server.hpp"
#include "sched/http/url.hpp"
#include "sched/protocol/registry.hpp"
#include "sched/protocol/request_signature.hpp"
#include "sched/protocol/run_answer.hpp"
#include "sched/protocol/span_exporter.hpp"

namespace sched::client::impl {

/// Milliseconds since the Unix epoch by the local wall clock.
inline std::int64_t WallMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

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
    Result<LockGuard> Lock(std::string_view key, std::chrono::milliseconds lease, std::chrono::milliseconds wait);

  private:
    http::Router Routes();
    http::Response OnRun(http::Request& req);
    // /v1/runs and /v1/runs-ahead: the same admission; the second route is how a node learns
    // that this executor honours `start_in_ms`.
    http::Response OnRuns(http::Request& req);
    // The admission of runs, shared by /v1/run and /v1/runs (sched/protocol/run_answer.hpp): one
    // answer per run, in order. `field` "": `runs` is one run (/v1/run); else `runs` is the
    // batch's array and `field` names it in error fields ("runs[2].epoch"). A run's
    // start_in_ms counts from `received`.
    std::vector<protocol::RunAnswer> AdmitRuns(const nlohmann::json& runs, const std::string& field,
                                               std::chrono::steady_clock::time_point received);
    // Runs [begin, end) of AdmitRuns's: their answers into answers[begin, end).
    void AdmitChunk(const nlohmann::json& runs, const std::string& field, std::size_t begin, std::size_t end,
                    std::chrono::steady_clock::time_point received,
                    std::vector<std::optional<protocol::RunAnswer>>& answers);
    http::Response OnKill(http::Request& req);
    http::Response OnBeat(http::Request& req);
    /// This instance as the registry sees it (heartbeat and /v1/beat).
    protocol::Heartbeat HeartbeatNow();
    http::Response OnIdleBeat(http::Request& req);
    http::Response OnLog(http::Request& req);
    http::Response OnMetrics(http::Request& req);

    /// Hands runs to the workers, in order; a run with a not_before still ahead waits for it
    /// (one timer per distinct not_before). A held first attempt joins the held runs of its
    /// scheduled time whose start lies within kAlignHeldMs of its own (HeldGroup).
    void Launch(std::vector<RunPtr> runs);
    /// Held first attempts of one scheduled time, sent ahead by several nodes: each node's
    /// batch counts its hold from when the node wrote it, so the batches' starts differ by their
    /// transit and by each node's estimate of the cluster clock (a few ms), and a burst's
    /// batches started one after another with the workers idle in between. A group starts at
    /// the earliest of its runs' holds, all its runs together.
    struct HeldGroup {
        std::int64_t scheduled_ms = 0;
        std::chrono::steady_clock::time_point at;
        std::vector<RunPtr> runs;
        bool started = false;
    };
    static constexpr std::chrono::milliseconds kAlignHeldMs{25};
    void ArmHeld(const std::shared_ptr<HeldGroup>& group, std::chrono::steady_clock::time_point at);
    void StartHeld(const std::shared_ptr<HeldGroup>& group);
    /// Hands runs due now to the workers, started in their order (at most worker-threads tasks
    /// draining one list); `startable_at`, when they became due (their hold's end, or now), is
    /// what their start delay counts from.
    void StartTogether(std::vector<RunPtr> runs, std::chrono::steady_clock::time_point startable_at);
    // A run's start through its handler's return; its end (EndRun) is queued behind the runs
    // already handed to the workers.
    void Execute(const RunPtr& run);
    // The end of a run whose handler returned: its log closed, its span, its slot freed (the
    // next run of its job launched) and its result queued for delivery.
    void EndRun(const RunPtr& run, CallbackResult result, const std::string& trace_id);
    void LogRun(const RunRequest& r, const std::string& trace_id, std::string_view event) const;
    void ReportNeverStarted(const RunPtr& run, const std::string& message);
    // Queues `result` for delivery and counts it (handler_seconds < 0: it never started).
    void Report(CallbackResult result, const std::string& handler, double handler_seconds);
    /// `text` stamped with the wall clock's time, as a fire's log line.
    static std::string LogLine(const std::string& text);
    void FireLog(std::int64_t fire_id, const std::string& text, LineSource source = LineSource::kRuntime);
    // A run's last line, its log tail (options_.log_tail_bytes) into `result` for the cluster to
    // keep, and its log closed (FireLogBook::Finish).
    void FinishLog(CallbackResult& result, const std::string& text);
    std::vector<std::string> HandlerNames() const;

    // The answer of the first endpoint that took the call (2xx), nullopt when none did; then
    // `failure` (when given) gets the last attempt's URL and cause. `answered` (when given) gets
    // the index in endpoints_ of the one that answered (kNoEndpoint: preferred_url or none).
    static constexpr std::size_t kNoEndpoint = static_cast<std::size_t>(-1);
    net::awaitable<std::optional<http::ClientResponse>> PostToWeb(std::string path, nlohmann::json body,
                                                                  std::string preferred_url,
                                                                  std::string* failure = nullptr,
                                                                  std::size_t* answered = nullptr);
    Status VerifyRequest(const http::Request& req) const;
    void LearnSigning(const http::ClientResponse& heartbeat_answer);
    // Notes whether endpoint `index` advertised result-traceparent, and whether every endpoint
    // has now (results_carry_trace_). Strand only.
    void LearnCapabilities(const http::ClientResponse& heartbeat_answer, std::size_t index);
    // A heartbeat to one endpoint not yet known to take a result's traceparent (at most one a
    // minute): the heartbeat loop reaches only its preferred endpoint. Strand only.
    net::awaitable<void> ProbeCapabilities();
    net::awaitable<void> HeartbeatLoop();
    net::awaitable<bool> Deregister();
    net::awaitable<void> CallbackLoop();
    net::awaitable<bool> FlushResults();
    /// One callback request with `batch` (not empty); false (counted) when no endpoint took it.
    net::awaitable<bool> PostResults(const std::vector<CallbackResult>& batch);
    /// Logs the results of `batch` its callback's answer says were not applied (nor duplicates).
    void LogRefused(const std::vector<CallbackResult>& batch, const http::ClientResponse& answer) const;
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
    std::vector<std::thread> io_threads_;  // options_.io_threads of them run io_
    std::unique_ptr<net::thread_pool> workers_;
    std::unique_ptr<http::Server> server_;
    std::unique_ptr<http::HttpClient> client_;
    std::unique_ptr<protocol::SpanExporter> spans_;  // telemetry on: each run's span
    std::atomic<std::size_t> preferred_endpoint_{0};
    // Per endpoint (strand only): its last heartbeat answer advertised result-traceparent.
    std::vector<bool> endpoint_takes_trace_;
    std::int64_t next_capability_probe_ms_ = 0;     // strand only
    std::atomic<bool> results_carry_trace_{false};  // every endpoint advertised it
    std::string address_;

    RunRegistry registry_;
    std::mutex held_mu_;
    std::map<std::int64_t, std::vector<std::shared_ptr<HeldGroup>>> held_groups_;  // by scheduled_ms, not started
    FireLogBook logs_;
    std::unique_ptr<ResultSpool> spool_;  // used only by the callback loop once started
    Outbox outbox_;

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

}  // namespace sched::client::impl
