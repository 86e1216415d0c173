#pragma once

/// How the slave delivers the runs of a claimed group to executor instances.
///
///   - With `send-ahead` (default), the fires due at least 2 ms later whose job runs serially
///     and whose routing needs no probe go right after the claim to their first-choice
///     instance, one `POST /v1/runs-ahead` per instance, each run with `start_in_ms` (the time
///     left to its due time, taken just before the request leaves): the executor admits them at
///     once and starts each at its due time. What such a batch does not place (an instance
///     without the route, busy, refused) is sent at its due time as below. Only serial jobs: an
///     executor admits a run on arrival, so under discard-later a run still going then (but
///     done by the due time) would discard the held one, and cover-early would end it early.
///   - The other fires leave at their due time (one timer per group, each due time's fires at
///     once): those of one due time whose routing needs no probe go to their first-choice
///     instance in one `POST /v1/runs`; the rest, and every run a batch did not place (busy,
///     refused, transport error, an instance without the route), take the per-fire path:
///     `POST /v1/run` to the job's routing order until one accepts (202), with the probes of
///     failover and busy-over; while every instance answers 429/503 (busy) the order is tried
///     again with backoff until `dispatch-timeout`; a fire with no live instance waits for one
///     (registry re-read with backoff) until `dispatch-timeout`, then fails.
///   - A planned fire that became a misfire before it was sent (the node was stopped past
///     `misfire-threshold`) obeys the job's misfire policy; fires of deleted or paused jobs
///     are skipped with their reason.
///   - A run refused with 409 `epoch` (a failover since the claim, already seen by the
///     executor) is re-stamped with the lease's current epoch while the claim still holds the
///     fire, and sent again once; 409 `block_strategy` (discard-later) ends the fire skipped.
/// Every run accepted is reported to `Ports::accepted`, every fire ended here to `Ports::ended`;
/// each fire is forgotten by the queue when its send is over.
///
/// Thread-safe. A send coroutine destroyed unfinished with the I/O context (a node stopped
/// while a dispatch hung) touches only shared state (the queue and the in-flight count), never
/// the sender, which may already be gone.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sched/common/duration.hpp"
#include "sched/common/metrics.hpp"
#include "sched/common/net.hpp"
#include "sched/dispatch/executor_client.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/fire_metrics.hpp"
#include "sched/store/job.hpp"
#include "sched/trigger/db_time.hpp"
#include "sched/trigger/executor_directory.hpp"
#include "sched/trigger/fire_queue.hpp"
#include "sched/trigger/fire_trace.hpp"
#include "sched/trigger/routing.hpp"
#include "sched/trigger/slave_ports.hpp"

namespace sched::trigger {

/// A claimed group, as the sender reads it (immutable once built).
struct DispatchGroup {
    std::int64_t epoch = 0;
    std::int64_t token = 0;          ///< the claim's: a fire is still this group's while it carries it
    std::vector<model::Fire> fires;  ///< won by the claim, earliest due first
    std::map<std::int64_t, model::Job> jobs;
    std::map<std::int64_t, std::string> run_params;  ///< of workflow runs triggered with params
    std::shared_ptr<const Registry> registry;        ///< the live instances it is routed with
};

/// Pushes the `claimed` span of each fire of `group`: from the claim's start to its end (DB
/// time, ms). With FireTracer off, nothing.
void TraceClaimed(const DispatchGroup& group, std::int64_t started_ms, std::int64_t ended_ms);

/// A run an executor instance accepted.
struct AcceptedRun {
    std::int64_t fire_id = 0;
    std::string app;
    std::string address;
    std::int64_t started_at = 0;  ///< when it starts: the 202's time, or its due time when held
    std::int64_t timeout_ms = 0;  ///< the job's (0: none)
    std::int64_t held_ms = 0;     ///< how long the executor holds it before it starts (sent ahead)
    /// Its job's policy stops running fires for a later one (cancel-other, terminate-other):
    /// the claim that stops it reads its instance from its `running` record.
    bool stoppable = false;
    /// With FireTracer on: the fire's `ended` span, for the end the timeout watch may record.
    std::optional<PendingFireSpan> trace;
};

struct RunSenderConfig {
    Micros dispatch_timeout = std::chrono::seconds(3);
    bool send_ahead = true;
    Micros misfire_threshold = std::chrono::seconds(5);
};

class RunSender {
  public:
    struct Ports {
        std::function<void(AcceptedRun)> accepted;  ///< record running, watch the timeout
        std::function<void(FireEnding)> ended;      ///< record an end without a (completed) run
        /// FireClaimStore::Restamp (blocking; run on the DB pool).
        std::function<Result<std::optional<std::int64_t>>(std::int64_t id, std::int64_t token)> restamp;
    };

    RunSender(net::any_io_executor io, net::thread_pool& db_pool, std::shared_ptr<FireQueue> queue,
              dispatch::ExecutorClient& executors, ExecutorDirectory& directory, const DbTime& time,
              RunSenderConfig config, Ports ports, std::string node_id, MetricsRegistry& metrics);

    /// Sends the group's runs as described above (returns at once; the sends run detached).
    void Send(std::shared_ptr<const DispatchGroup> group);
    /// Asks `address` to kill the run of fire `fire_id` (of `app`), once, in the background: a
    /// running fire of a job whose overlap policy stops it for a newer one.
    void Kill(std::int64_t fire_id, std::string app, std::string address);
    /// Fires being sent (in a per-fire send or a batch).
    std::size_t InFlight() const { return shared_->in_flight.load(); }
    /// From now on a fire with no live instance does not wait for one.
    void Stop() { shared_->stopping = true; }

  private:
    struct Shared {
        std::shared_ptr<FireQueue> queue;
        std::atomic<std::size_t> in_flight{0};
        std::atomic<bool> stopping{false};
    };
    // How a batch of runs is sent: at its due time (POST /v1/runs), or ahead of it
    // (POST /v1/runs-ahead, each run with its start_in_ms).
    enum class Batch { kAtDue, kAhead };
    // Fires by the (app, instance address) their batch goes to.
    using Batches = std::map<std::pair<std::string, std::string>, std::vector<model::Fire>>;
    using GroupPtr = std::shared_ptr<const DispatchGroup>;

    net::awaitable<void> SendGroup(GroupPtr group);
    // Sends the group's fires that can go ahead; returns the others.
    std::vector<model::Fire> SendAhead(const GroupPtr& group);
    // One SendBatch per instance and kMaxRunsPerBatch runs; the fires are moved out of `batches`.
    void SendBatches(const GroupPtr& group, Batches& batches, Batch kind);
    net::awaitable<void> SendAtDue(GroupPtr group, std::vector<model::Fire> fires);
    // The fires of one due time: batched per first-choice instance, the rest one by one.
    void DispatchDue(const GroupPtr& group, std::vector<model::Fire> fires);
    // Runs not placed by an ahead batch go at their due time (SendAtDue); by a due-time
    // batch, one by one (SendOne).
    net::awaitable<void> SendBatch(GroupPtr group, std::string app, std::string address, std::vector<model::Fire> fires,
                                   Batch kind);
    net::awaitable<void> SendOne(GroupPtr group, model::Fire fire);
    net::awaitable<void> SendKill(std::int64_t fire_id, std::string app, std::string address);
    // The instance a fire's batch goes to: its routing's first choice when the routing needs no
    // probe, the fire is to be sent at all (job present, enabled, not a misfire) and the
    // instance has not refused that kind of batch lately; else none.
    std::optional<std::string> BatchAddress(const DispatchGroup& group, const model::Fire& fire, std::int64_t now_ms,
                                            Batch kind);
    void Accepted(const model::Fire& fire, const model::Job& job, const std::string& address, std::int64_t sent_at);
    void End(const model::Fire& fire, const model::Job* job, model::FireStatus to, std::string message,
             std::optional<model::FireReason> reason);

    net::any_io_executor io_;
    net::thread_pool& db_pool_;
    std::shared_ptr<Shared> shared_;
    dispatch::ExecutorClient& executors_;
    ExecutorDirectory& directory_;
    const DbTime& time_;
    RunSenderConfig config_;
    Ports ports_;
    std::string node_id_;
    Router router_;

    HistogramChild& lag_;
    Family<CounterChild>& dispatched_;
    Family<CounterChild>& dispatch_errors_;
    store::FireOutcomeMetrics fire_outcomes_;  // fires this sender ends without a run
    CounterChild& run_batches_;
};

}  // namespace sched::trigger
