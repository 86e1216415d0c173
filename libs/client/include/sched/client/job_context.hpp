#pragma once

/// What a job handler sees of the fire it runs.
///
///     executor.Handle("report", [](sched::client::JobContext& ctx) -> sched::Status {
///         const auto day = ctx.params().value("day", "today");
///         ctx.Log("building report for {}", day);
///         for (const auto& part : Parts(day)) {
///             if (ctx.cancelled()) return sched::Cancelled("stopped");   // killed, timed out, covered
///             Build(part);
///         }
///         ctx.SetResultMessage("3 parts");
///         return sched::Status::Ok();
///     });
///
/// Cancellation is cooperative: the executor never interrupts a handler's thread. A handler
/// checks cancelled() (or waits with SleepFor / cancellation().WaitFor) and returns. Whatever it
/// returns after a cancellation, the fire is reported as `timeout` (deadline passed) or
/// `killed` (kill request, cover-early, shutdown).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include <spdlog/fmt/fmt.h>
#include <nlohmann/json.hpp>

#include "sched/common/job_vocabulary.hpp"

namespace sched::client {

/// What the executor does when a run arrives for a job that already has one running or queued
/// here (per job, chosen by the job's `block_strategy`): the job vocabulary's enum, so that the
/// SDK, the wire and the store share one spelling table.
///   kSerial: queue it; runs start one after another in arrival order.
///   kDiscardLater: refuse the new run (409).
///   kCoverEarly: cancel the running one, drop queued ones, run the new one next.
using BlockStrategy = sched::BlockStrategy;

/// A run as the scheduler dispatched it (`POST /v1/run`).
struct RunRequest {
    std::int64_t fire_id = 0;
    std::int64_t job_id = 0;
    std::int64_t attempt = 0;
    std::int64_t epoch = 0;  ///< the dispatching master's fencing epoch
    std::string handler;
    nlohmann::json params = nlohmann::json::object();
    std::int64_t scheduled_ms = 0;  ///< the fire's scheduled time, epoch milliseconds
    std::int64_t timeout_ms = 0;    ///< 0 = no timeout
    std::int64_t shard_index = 0;
    std::int64_t shard_total = 1;
    BlockStrategy block_strategy = BlockStrategy::kSerial;
    /// Set when the cluster enforced the job's overlap policy and concurrency limit where the
    /// fire was claimed: the run starts on arrival, beside any other run of the job here,
    /// without judging `block_strategy`.
    std::optional<BlockStrategy> overlap;
    std::string callback_url;  ///< where to send the result first ("" = the web endpoints)
    /// The run's W3C trace context ("00-<trace id>-<span id>-01"; "" from a node before it).
    std::string traceparent;
    /// The W3C tracestate that came with it (a manual trigger's caller's, unchanged); "" for none.
    std::string tracestate;
};

/// Why a run was asked to stop.
enum class CancelReason {
    kNone,
    kKilled,    ///< POST /v1/kill
    kTimeout,   ///< timeout_ms passed
    kCovered,   ///< a newer run of the same job arrived with cover-early
    kShutdown,  ///< the executor is stopping and the shutdown grace passed
};

/// A one-way flag with a reason; the first Cancel() wins. Thread-safe.
class CancellationToken {
  public:
    bool cancelled() const;
    CancelReason reason() const;
    /// Waits up to `timeout`; returns true when cancelled (before or while waiting).
    bool WaitFor(std::chrono::steady_clock::duration timeout) const;
    /// Sets the flag (if not set) and wakes waiters. Returns false when it was set already.
    bool Cancel(CancelReason reason);

  private:
    mutable std::mutex mu_;
    mutable std::condition_variable cv_;
    CancelReason reason_ = CancelReason::kNone;
};

/// The handler's view of one run. Created by the executor for each run and valid only during
/// the handler call. Log() may be called from any thread while the handler runs; the rest is
/// meant for the handler's thread.
class JobContext {
  public:
    using LogSink = std::function<void(std::string line)>;

    /// Public so that handlers can be unit-tested without an executor.
    JobContext(const RunRequest& run, const CancellationToken& token, std::chrono::steady_clock::time_point deadline,
               LogSink log_sink);

    std::int64_t fire_id() const { return run_.fire_id; }
    std::int64_t job_id() const { return run_.job_id; }
    std::int64_t attempt() const { return run_.attempt; }
    std::int64_t epoch() const { return run_.epoch; }
    const std::string& handler() const { return run_.handler; }
    /// The job's params as sent by the scheduler (any JSON; usually an object).
    const nlohmann::json& params() const { return run_.params; }
    std::int64_t scheduled_ms() const { return run_.scheduled_ms; }
    std::int64_t shard_index() const { return run_.shard_index; }
    std::int64_t shard_total() const { return run_.shard_total; }
    /// The run's W3C traceparent, to continue the fire's trace in the handler's own spans and
    /// outgoing calls (pass it on as the `traceparent` header); "" when the node sent none.
    const std::string& traceparent() const { return run_.traceparent; }
    /// The fire's trace id (32 hex digits; the same for every attempt of the fire), for the
    /// handler's log lines; "" when the node sent no traceparent.
    std::string trace_id() const { return run_.traceparent.size() >= 35 ? run_.traceparent.substr(3, 32) : ""; }
    /// The run's W3C tracestate (pass it on as the `tracestate` header with the traceparent);
    /// "" when the node sent none (a fire without a caller's trace, or a node before the field).
    const std::string& tracestate() const { return run_.tracestate; }
    /// When the run times out (steady clock); time_point::max() when it has no timeout.
    std::chrono::steady_clock::time_point deadline() const { return deadline_; }

    const CancellationToken& cancellation() const { return token_; }
    bool cancelled() const { return token_.cancelled(); }
    /// Sleeps for `d` unless cancelled first. Returns true when the full time passed.
    bool SleepFor(std::chrono::steady_clock::duration d) const { return !token_.WaitFor(d); }

    /// Appends a line to this fire's log (served by GET /v1/log), formatted like fmt::format.
    template <typename... Args>
    void Log(fmt::format_string<Args...> format, Args&&... args) {
        AppendLog(fmt::format(format, std::forward<Args>(args)...));
    }

    /// The message reported with a successful result (failures report their Status message).
    void SetResultMessage(std::string message) { result_message_ = std::move(message); }
    const std::string& result_message() const { return result_message_; }

  private:
    void AppendLog(std::string line);

    const RunRequest& run_;
    const CancellationToken& token_;
    std::chrono::steady_clock::time_point deadline_;
    LogSink log_sink_;
    std::string result_message_;
};

}  // namespace sched::client
