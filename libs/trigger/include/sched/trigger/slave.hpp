#pragma once

/// The slave role (DESIGN 5): every trigger node runs one. It holds the fires the master
/// assigned to this node, fires each at its due time, and calls the job's executor.
///
/// For each fire: a timer until `due_at` (DB clock, via DbTime), then a claim by CAS
/// (pending -> dispatching, so a fire is dispatched at most once per attempt even if two slaves
/// hold it), then the job's routing decides the order of the live executor instances that
/// serve its handler, and `POST /v1/run` goes to them in that order until one accepts (202):
/// the fire is then `running`. 409 on `block_strategy` (discard-later) makes it `skipped`; when
/// no instance accepts, it is `failed` (the master then retries per the job). A job timeout
/// makes the slave ask the executor to kill the run and mark the fire `timeout`.
///
/// Fires arrive by Notify() (the master's message after its commit) and by polling (every
/// poll-interval), so a lost message delays a fire by at most the poll interval. Stop() hands
/// the fires not yet claimed back to the master.
///
/// YAML (section `slave`), defaults shown:
///   enabled: true              # false: this node only competes for master
///   capacity: 1000             # the master's weight for this node
///   poll-interval: 1s
///   dispatch-timeout: 3s       # one /v1/run call (connect + answer)
///   executor-ttl: 30s          # instances with an older heartbeat get no fires
///   (`executor-token` is refused: every call to an executor is signed with the app's signing
///    key through web::ExecutorSigner, docs/protocol.md)
///
/// Thread-safe. DB work runs on `db_pool`, never on the I/O threads.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "sched/common/config.hpp"
#include "sched/common/metrics.hpp"
#include "sched/common/net.hpp"
#include "sched/db/database.hpp"
#include "sched/http/client.hpp"
#include "sched/store/fire.hpp"
#include "sched/trigger/db_time.hpp"
#include "sched/trigger/routing.hpp"
#include "sched/web/executor_signer.hpp"

namespace sched::trigger {

struct SlaveConfig {
    bool enabled = true;
    int capacity = 1000;
    Micros poll_interval = std::chrono::seconds(1);
    Micros dispatch_timeout = std::chrono::seconds(3);
    Micros executor_ttl = std::chrono::seconds(30);

    static SlaveConfig FromYaml(const ConfigNode& node);
};

class Slave {
  public:
    Slave(net::any_io_executor io, net::thread_pool& db_pool, std::shared_ptr<db::Database> db, const DbTime& time,
          rest::HttpClient& http, std::string node_id, std::string lease_name, SlaveConfig config,
          MetricsRegistry& metrics);
    ~Slave();

    /// Starts the poll loop. Call once.
    void Start();
    /// New fires for this node (ids); loads and schedules those still pending here.
    void Notify(std::vector<std::int64_t> fire_ids);
    /// Stops taking fires: cancels the timers of unclaimed fires and gives them back (their
    /// assigned_node becomes NULL, so the master reassigns them). Dispatches in progress finish.
    net::awaitable<void> Stop();

    std::size_t Scheduled() const;
    std::size_t InFlight() const { return in_flight_.load(); }

  private:
    struct State;
    net::awaitable<void> PollLoop();
    /// Marks lost the fires this node id was dispatching in an earlier process; returns how many.
    Result<int> EndDispatchesOfAnEarlierRun();
    std::int64_t started_ms_ = 0;  // DB time of Start(): dispatches claimed before are an earlier run's
    void Track(const store::Fire& fire);
    net::awaitable<void> RunFire(store::Fire fire);
    net::awaitable<void> Dispatch(store::Fire fire);
    net::awaitable<void> WatchTimeout(std::int64_t fire_id, std::string app, std::string address,
                                      std::int64_t timeout_ms);
    net::awaitable<void> Finish(std::int64_t fire_id, store::FireStatus from, store::FireStatus to,
                                std::string message);

    net::any_io_executor io_;
    net::thread_pool& db_pool_;
    std::shared_ptr<db::Database> db_;
    const DbTime& time_;
    rest::HttpClient& http_;
    std::string node_id_;
    std::string lease_name_;
    SlaveConfig config_;
    std::unique_ptr<web::ExecutorSigner> executors_;  // every call to an executor goes through it
    Router router_;
    std::shared_ptr<State> state_;
    std::atomic<std::size_t> in_flight_{0};

    HistogramChild& lag_;
    Family<CounterChild>& dispatched_;
    Family<CounterChild>& dispatch_errors_;
};

}  // namespace sched::trigger
