#pragma once

/// The slave role (DESIGN 5): every trigger node runs one. It holds the fires the master
/// assigned to this node, claims them in groups at their due time, and calls their executors.
///
/// The unit of database work is a group, never a fire (docs/architecture.md "Slave"):
///   - waiting fires sit in one queue ordered by due time (DB clock, via DbTime), watched by ONE
///     timer; when the earliest is within `claim-ahead` of due, every fire due within the next
///     `claim-ahead` after it (at most `max-group`) is claimed in one transaction
///     (FireClaimStore::Claim: pending -> dispatching by one UPDATE stamped with a random claim
///     token, the fires won read back by that token, their jobs read in the same transaction).
///     A claim that fails is retried with backoff and the same token, so a commit hidden by the
///     error is found, never redone;
///   - with `send-ahead` (default), the fires won that are due at least 2 ms later, whose job
///     runs serially and whose routing needs no probe go right after the claim to their
///     first-choice instance, one `POST /v1/runs-ahead` per instance, each run with
///     `start_in_ms` (the time left to its due time, taken when the request is written): the
///     executor admits them at once and starts each at its due time (sched/protocol/run_batch.hpp).
///     One request then carries many due times. What such a batch does not place (an instance
///     without the route, busy, refused) is sent at its due time as below;
///   - the other fires are sent at their due time: the job's routing orders the live instances of its
///     app that serve its handler (an in-memory registry read once per `executor-refresh`, and
///     again when a fire's app has no instance in it). The fires of one due time whose routing
///     needs no probe go to their first-choice instance in one `POST /v1/runs` (one answer per
///     run); the others, and every run a batch did not place (busy, refused, transport error,
///     an instance without the route), take the per-fire path: `POST /v1/run` to the instances
///     in order until one accepts (202). At most `max-calls-per-executor` calls are open to one
///     instance; when every instance answered 429/503 (busy) the order is tried again with
///     backoff until `dispatch-timeout`; a fire with no live instance at all waits for one
///     (registry re-read with backoff) until `dispatch-timeout`, then fails;
///   - the 202s are recorded `running` in batches: one UPDATE per instance per `record-window`.
///     Fires that end here are recorded one by one (rare): 409 on `block_strategy`
///     (discard-later) -> `skipped`; no instance accepted -> `failed` (the master then retries
///     per the job); job deleted or paused -> `skipped`; a job timeout makes the slave ask the
///     executor to kill the run and mark the fire `timeout`.
/// A fire claimed ahead and then never sent (the node died in the `claim-ahead` window) becomes
/// `lost` like any fire of a dead slave: it is never sent twice. A group claimed ahead carries
/// the lease epoch of its claim; when a new master took the lease since and an executor has
/// already seen the new epoch, it refuses the older one (409 `epoch`): the slave then stamps the
/// fire with the current epoch if its claim still holds it (FireClaimStore::Restamp: still
/// `dispatching` under the claim's token) and asks again, once; a fire whose claim was ended
/// elsewhere meanwhile is not sent.
///
/// Fires arrive by Notify() (the master's message after its commit, with each fire's due time:
/// queued unread, read by the claim, which wins only fires still pending for this node) and by
/// polling (every poll-interval), so a lost message delays a fire by at most the poll interval.
/// The poll reads the ids of the node's pending fires (index only) and reads whole only those
/// it does not know (in chunks of 1,000). Stop() hands the fires not yet claimed back to the
/// master.
///
/// YAML (section `slave`), defaults shown:
///   enabled: true                # false: this node only competes for master
///   capacity: 1000               # the master's weight for this node
///   poll-interval: 1s
///   dispatch-timeout: 3s         # one /v1/run call (connect + answer), and the busy retries
///   executor-ttl: 30s            # instances with an older heartbeat get no fires
///   claim-ahead: 100ms           # claim groups this long (up to twice this) before their due time
///   send-ahead: true             # send serial jobs' runs right after the claim (start_in_ms)
///   max-group: 500               # fires per claim
///   record-window: 50ms          # `running` records are batched over this window
///   max-calls-per-executor: 64   # open /v1/run calls to one executor instance
///   executor-refresh: 1s         # how old the in-memory executor registry may get
///   (`executor-token` is refused: every call to an executor is signed with the app's signing
///    key through dispatch::ExecutorSigner, docs/protocol.md)
///
/// Thread-safe. Store calls run on `db_pool`, never on the I/O threads.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sched/common/config.hpp"
#include "sched/common/metrics.hpp"
#include "sched/common/net.hpp"
#include "sched/db/database.hpp"
#include "sched/http/client.hpp"
#include "sched/protocol/fires_notice.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/fire_metrics.hpp"
#include "sched/trigger/db_time.hpp"
#include "sched/trigger/routing.hpp"
#include "sched/trigger/slave_ports.hpp"

namespace sched::trigger {

struct SlaveConfig {
    bool enabled = true;
    int capacity = 1000;
    Micros poll_interval = std::chrono::seconds(1);
    Micros dispatch_timeout = std::chrono::seconds(3);
    Micros executor_ttl = std::chrono::seconds(30);
    Micros claim_ahead = std::chrono::milliseconds(100);
    bool send_ahead = true;
    int max_group = 500;
    Micros record_window = std::chrono::milliseconds(50);
    int max_calls_per_executor = 64;
    Micros executor_refresh = std::chrono::seconds(1);
    /// Not a `slave` key: the node sets it from `master.misfire-threshold`, so a planned fire
    /// that became late while its node was stopped obeys the job's misfire policy.
    Micros misfire_threshold = std::chrono::seconds(5);

    static SlaveConfig FromYaml(const ConfigNode& node);
};

class Slave {
  public:
    /// A notice's fires due later than this are left to the poll (which reads them): a notice
    /// is not read against the database, so what it may queue is bounded in time...
    static constexpr std::int64_t kNoticeHorizonMs = 60'000;
    /// ...and in count: past this many fires queued, claimed or being sent, a notice's or a
    /// poll's further fires wait for a later poll.
    static constexpr std::size_t kMaxQueued = 100'000;

    /// The node's slave: fires in `db`, executors called through `http` with the apps' signing keys.
    Slave(net::any_io_executor io, net::thread_pool& db_pool, const std::shared_ptr<db::Database>& db,
          const DbTime& time, http::HttpClient& http, std::string node_id, std::string lease_name, SlaveConfig config,
          MetricsRegistry& metrics);
    /// Any store and executor client (tests use fakes).
    Slave(net::any_io_executor io, net::thread_pool& db_pool, std::unique_ptr<FireClaimStore> store,
          std::unique_ptr<ExecutorClient> executors, const DbTime& time, std::string node_id, SlaveConfig config,
          MetricsRegistry& metrics);
    ~Slave();

    /// Starts the poll loop and the group loop. Call once.
    void Start();
    /// New fires for this node, with their due times (the master's notice): those due within
    /// kNoticeHorizonMs are queued as they are, read when claimed (a fire no longer pending
    /// here is then dropped).
    void Notify(const std::vector<protocol::NoticedFire>& fires);
    /// New fires for this node by id only (a notice from a master older than due times): loads
    /// and queues those still pending here.
    void NotifyIds(std::vector<std::int64_t> fire_ids);
    /// Stops taking fires: the fires not yet claimed are given back (their assigned_node becomes
    /// NULL, so the master reassigns them). Claimed fires are still sent: Stop returns when no
    /// dispatch is in flight, or after dispatch-timeout with the count still in flight logged
    /// (those stay `dispatching`; the next process under this node id, or the master's sweep,
    /// ends them `lost`). The slave may be destroyed while the I/O context still holds their
    /// coroutines: what they touch when destroyed is kept alive by them.
    net::awaitable<void> Stop();

    /// Fires queued or being dispatched here.
    std::size_t Scheduled() const;
    std::size_t InFlight() const;

  private:
    struct State;
    struct Group;
    net::awaitable<void> PollLoop();
    net::awaitable<void> GroupLoop();
    net::awaitable<void> ClaimAndSend(std::vector<std::int64_t> ids);
    // How a batch of runs is sent: at its due time (POST /v1/runs), or ahead of it
    // (POST /v1/runs-ahead, each run with its start_in_ms).
    enum class Batch { kAtDue, kAhead };
    net::awaitable<void> SendGroup(std::shared_ptr<const Group> group);
    // Fires by the (app, instance address) their batch goes to.
    using Batches = std::map<std::pair<std::string, std::string>, std::vector<store::Fire>>;
    // Sends the group's fires that can go ahead (send-ahead); returns the others.
    std::vector<store::Fire> SendAhead(const std::shared_ptr<const Group>& group);
    // One SendBatch per instance and kMaxRunsPerBatch runs; the fires are moved out of `batches`.
    void SendBatches(const std::shared_ptr<const Group>& group, Batches& batches, Batch kind);
    net::awaitable<void> SendAtDue(std::shared_ptr<const Group> group, std::vector<store::Fire> fires);
    net::awaitable<void> Send(std::shared_ptr<const Group> group, store::Fire fire);
    // The fires of one due time: those whose first choice is the same instance go in one
    // POST /v1/runs (SendBatch); the rest, and whatever a batch did not place, go through Send.
    void DispatchDue(const std::shared_ptr<const Group>& group, std::vector<store::Fire> fires);
    // Runs not placed by an ahead batch go at their due time (SendAtDue); by a due-time batch,
    // one by one (Send).
    net::awaitable<void> SendBatch(std::shared_ptr<const Group> group, std::string app, std::string address,
                                   std::vector<store::Fire> fires, Batch kind);
    // The instance a fire's batch goes to: its routing's first choice when the routing needs no
    // probe, the fire is to be sent at all (job present, enabled, not a misfire) and the
    // instance has not refused that kind of batch lately; else none.
    std::optional<std::string> BatchAddress(const Group& group, const store::Fire& fire, std::int64_t now_ms,
                                            Batch kind);
    std::vector<std::string> Candidates(const Group& group, const store::Job& job) const;
    // Runs on strand_: the live instances of `app` serving `handler`, from the registry re-read
    // when it is older than `max_age`.
    net::awaitable<std::vector<std::string>> LiveCandidates(std::string app, std::string handler, Micros max_age);
    // Runs on strand_: reads every app's live instances into the registry (on an error the old
    // copy stays, and is logged).
    net::awaitable<void> ReadRegistry();
    // What a 202 for `fire` at `address` leads to: running recorded, lag observed, timeout watched.
    void Accepted(const store::Fire& fire, const store::Job& job, const std::string& address, std::int64_t sent_at);
    // After held_ms (a run sent ahead waits for its due time) and then the job's timeout_ms.
    net::awaitable<void> WatchTimeout(std::int64_t fire_id, std::string app, std::string address,
                                      std::int64_t timeout_ms, std::int64_t held_ms);
    net::awaitable<void> Finish(std::int64_t fire_id, store::FireStatus from, store::FireStatus to, std::string message,
                                std::optional<store::FireReason> reason);
    /// Whether a planned fire became a misfire (later than misfire-threshold, as when this node
    /// was stopped) that the job's misfire policy does not run; the reason when so.
    std::optional<std::string> MisfireVerdict(const Group& group, const store::Fire& fire, const store::Job& job,
                                              std::int64_t now_ms) const;
    net::awaitable<bool> AcquireCall(std::string address);
    void ReleaseCall(const std::string& address);
    void RecordRunning(std::int64_t fire_id, const std::string& address, std::int64_t started_at);
    net::awaitable<void> FlushRunning();
    net::awaitable<void> FlushEndings();
    void Track(const std::vector<protocol::NoticedFire>& fires);
    static std::vector<protocol::NoticedFire> Queued(const std::vector<store::Fire>& fires);
    /// Those of `ids` not queued, claimed or being sent here (the poll reads only these whole).
    std::vector<std::int64_t> Unknown(const std::vector<std::int64_t>& ids) const;
    void Forget(std::int64_t fire_id);

    net::any_io_executor io_;
    net::strand<net::any_io_executor> strand_;  // the group loop and its wake-ups
    net::thread_pool& db_pool_;
    std::unique_ptr<FireClaimStore> store_;
    std::unique_ptr<ExecutorClient> executors_;
    const DbTime& time_;
    std::string node_id_;
    SlaveConfig config_;
    Router router_;
    std::shared_ptr<State> state_;
    std::int64_t started_ms_ = 0;  // DB time of Start(): dispatches claimed before are an earlier run's

    HistogramChild& lag_;
    Family<CounterChild>& dispatched_;
    Family<CounterChild>& dispatch_errors_;
    CounterChild& claims_;
    CounterChild& claimed_fires_;
    store::FireOutcomeMetrics fire_outcomes_;  // fires this slave ends without a run
    CounterChild& running_batches_;
    CounterChild& run_batches_;
};

}  // namespace sched::trigger
