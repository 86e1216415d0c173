#pragma once

/// The slave role: every trigger node runs one. It holds the fires the master
/// assigned to this node, claims them in groups at their due time, and calls their executors.
///
/// The unit of database work is a group, never a fire (docs/architecture/slave.md):
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
///   - the 202s are recorded `running` in batches: one UPDATE per instance per window (the
///     longer of `record-window` and `record-running-after`), each record once its run has run
///     `record-running-after` (a CAS from `dispatching`: a run whose result landed first is not
///     written again; an end the slave itself records, a timeout, takes the queued record back
///     and writes the instance and start with the end). A run its job's policy may stop for a
///     later fire (cancel-other, terminate-other) is recorded at the next `record-window`: the
///     claim that stops it, maybe on another node, learns its instance from the record.
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
///   burst-claim-ahead: 8s        # a due time with max-group or more fires (a top of the hour)
///                                # is claimed up to this long before claim-ahead; 0s: not
///   burst-claim-rate: 2000       # fires per second the claims are assumed to keep up: a burst
///                                # of N fires starts N / rate (at most burst-claim-ahead) early
///   max-group: 500               # fires per claim
///   record-window: 50ms          # `running` records are batched over this window
///   record-running-after: 250ms  # a run is recorded `running` only once it has run this long;
///                                # 0: at the next record-window
///   max-calls-per-executor: 64   # open /v1/run calls to one executor instance
///   executor-refresh: 1s         # how old the in-memory executor registry may get
///   (`executor-token` is refused: every call to an executor is signed with the app's signing
///    key through dispatch::ExecutorSigner, docs/protocol.md)
///
/// The pieces, each its own type: FireQueue (what waits, and the next group), ExecutorDirectory
/// (live instances, call slots), RunSender (how runs reach executors), TimeoutWatch, and two
/// WindowedWriters (the `running` records and the endings). The slave runs the poll and group
/// loops and wires them.
///
/// Thread-safe. Store calls run on `db_pool`, never on the I/O threads.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "sched/common/config.hpp"
#include "sched/common/metrics.hpp"
#include "sched/common/net.hpp"
#include "sched/db/database.hpp"
#include "sched/dispatch/executor_client.hpp"
#include "sched/http/client.hpp"
#include "sched/protocol/fires_notice.hpp"
#include "sched/trigger/db_time.hpp"
#include "sched/trigger/executor_directory.hpp"
#include "sched/trigger/fire_queue.hpp"
#include "sched/trigger/group_claimer.hpp"
#include "sched/trigger/held_fires.hpp"
#include "sched/trigger/run_sender.hpp"
#include "sched/trigger/running_recorder.hpp"
#include "sched/trigger/sent_fires.hpp"
#include "sched/trigger/slave_ports.hpp"
#include "sched/trigger/timeout_watch.hpp"
#include "sched/trigger/windowed_writer.hpp"

namespace sched::trigger {

struct SlaveConfig {
    bool enabled = true;
    int capacity = 1000;
    Micros poll_interval = std::chrono::seconds(1);
    Micros dispatch_timeout = std::chrono::seconds(3);
    Micros executor_ttl = std::chrono::seconds(30);
    Micros claim_ahead = std::chrono::milliseconds(100);
    bool send_ahead = true;
    Micros burst_claim_ahead = std::chrono::seconds(8);
    int burst_claim_rate = 2000;
    int max_group = 500;
    int group_fill = 64;
    Micros group_span = std::chrono::milliseconds(400);
    Micros record_window = std::chrono::milliseconds(50);
    Micros record_running_after = std::chrono::milliseconds(250);
    int max_calls_per_executor = 64;
    Micros executor_refresh = std::chrono::seconds(1);
    /// Not a `slave` key: the node sets it from `master.misfire-threshold`, so a planned fire
    /// that became late while its node was stopped obeys the job's misfire policy.
    Micros misfire_threshold = std::chrono::seconds(5);

    static SlaveConfig FromYaml(const ConfigNode& node);
};

class Slave {
  public:
    /// A notice's fires due later than this are left to the poll (FireQueue).
    static constexpr std::int64_t kNoticeHorizonMs = FireQueue::kNoticeHorizonMs;
    /// Fires queued, claimed or being sent at most (FireQueue).
    static constexpr std::size_t kMaxQueued = FireQueue::kMaxQueued;
    /// A fire held back by its job's concurrency limit is claimed again after kFirstInLineMs when
    /// it is the first of its job in line for a seat; otherwise after twice that, then twice as
    /// long each time, at most kMaxHoldMs (HeldFires).
    static constexpr std::int64_t kFirstInLineMs = HeldFires::kFirstInLineMs;
    static constexpr std::int64_t kMaxHoldMs = HeldFires::kMaxHoldMs;

    /// The node's slave: fires in `db`, executors called through `http` with the apps' signing keys.
    Slave(net::any_io_executor io, net::thread_pool& db_pool, const std::shared_ptr<db::Database>& db,
          const DbTime& time, http::HttpClient& http, std::string node_id, std::string lease_name, SlaveConfig config,
          MetricsRegistry& metrics);
    /// Any store and executor client (tests use fakes).
    Slave(net::any_io_executor io, net::thread_pool& db_pool, std::unique_ptr<FireClaimStore> store,
          std::unique_ptr<dispatch::ExecutorClient> executors, const DbTime& time, std::string node_id,
          SlaveConfig config, MetricsRegistry& metrics);
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
    /// What the slave calls after it wrote work for a master: ends recorded here (each leaves a
    /// follow-up: a retry, a workflow's next step, a fixed-delay job's next time), fires skipped
    /// by their job's policy or as misfires at the claim, and pending fires handed back at Stop.
    /// TriggerNode wakes the masters with it. Call before Start; none: nothing is called.
    void SetWakeMasters(std::function<void()> wake) { wake_masters_ = std::move(wake); }
    /// Results for these fires were applied (the executor API's callback, in this process or on
    /// another node): the `running` records still queued for them are dropped unwritten
    /// (RunningRecorder). Returns how many.
    std::size_t ResultsApplied(const std::vector<std::int64_t>& fire_ids);

    /// Fires queued or being dispatched here.
    std::size_t Scheduled() const;
    std::size_t InFlight() const;

  private:
    /// What the loops and Stop share (kept alive by the loops' coroutines).
    struct Loops {
        std::atomic<bool> stopping{false};
        std::shared_ptr<net::steady_timer> poll_timer;  // the poll loop's, on poll_strand_
        std::shared_ptr<net::steady_timer> wake;        // the group loop's, on strand_
        std::atomic<bool> group_loop_done{true};        // no claim is running or will run (none before Start)
    };

    net::awaitable<void> PollLoop();
    net::awaitable<void> GroupLoop();
    net::awaitable<void> ClaimAndSend(std::vector<std::int64_t> ids, store::ClaimOptions options);
    // Until it succeeds once (from the poll loop): judges the fires an earlier process under
    // this node id claimed, or may have sent of those planned for it, and takes planned fires.
    net::awaitable<bool> Recover();
    // Those of `fires` this slave may queue: not planned fires it has sent.
    std::vector<protocol::NoticedFire> NotSent(const std::vector<protocol::NoticedFire>& fires) const;
    // What a claim of `ids` won: the held fires requeued, the others not won forgotten, the won
    // ones sent as one group.
    net::awaitable<void> SendClaimed(std::vector<std::int64_t> ids, std::int64_t token, ClaimedGroup claimed,
                                     std::chrono::steady_clock::time_point claim_started,
                                     std::int64_t claim_started_ms);
    // Queues fires and wakes the group loop when one is due before its planned wake-up.
    void Queue(const std::vector<protocol::NoticedFire>& fires);
    void Wake(const FireQueue::Admitted& admitted);
    void Accepted(AcceptedRun run);
    // Queues an end the slave records (a refusal, a timeout), taking back the fire's `running`
    // record if no flush took it yet.
    void End(FireEnding ending);
    // What the jobs' concurrency limits made of a claim's fires: the held ones go back in the
    // queue (HeldFires: each wait longer than the last, up to kMaxHoldMs), the running ones to stop are
    // killed. Runs on strand_.
    void Limited(const ClaimedGroup& claimed, const std::set<std::int64_t>& won);

    net::any_io_executor io_;
    net::strand<net::any_io_executor> strand_;       // the group loop and its wake-ups
    net::strand<net::any_io_executor> poll_strand_;  // the poll loop and its timer
    net::thread_pool& db_pool_;
    std::unique_ptr<FireClaimStore> store_;
    std::unique_ptr<dispatch::ExecutorClient> executors_;
    const DbTime& time_;
    std::string node_id_;
    std::function<void()> wake_masters_;
    SlaveConfig config_;
    std::shared_ptr<Loops> loops_;
    std::shared_ptr<FireQueue> queue_;
    ExecutorDirectory directory_;
    RunningRecorder running_;
    WindowedWriter<FireEnding> endings_;
    TimeoutWatch timeouts_;
    GroupClaimer claimer_;
    RunSender sender_;
    std::int64_t started_ms_ = 0;     // DB time of Start(): dispatches claimed before are an earlier run's
    HeldFires held_;                  // on strand_
    SentFires sent_;                  // planned fires sent and not yet recorded; the node's sent_through
    bool claimed_recovered_ = false;  // on poll_strand_: EndEarlierDispatches succeeded

    CounterChild& claims_;
    CounterChild& claimed_fires_;
    CounterChild& misfires_;  // fires a claim ended as misfires (sched_slave_fires_total)
    Family<CounterChild>& concurrency_;
};

}  // namespace sched::trigger
