#pragma once

/// The node's watch over a run's timeout. Normally the executor ends a run at its own deadline
/// and reports `timeout`; when that report does not come (the executor is stuck, or its
/// handler ignores the deadline), the slave that sent the run asks the executor to kill it
/// (`POST /v1/kill`) and ends the fire `timeout` by compare-and-set from its current state,
/// so a result that arrives first keeps its outcome.
///
/// Thread-safe; each watch is one timer on the I/O context.

#include <cstdint>
#include <functional>
#include <string>

#include "sched/common/duration.hpp"
#include "sched/common/net.hpp"
#include "sched/common/status.hpp"
#include "sched/dispatch/executor_client.hpp"
#include "sched/store/fire.hpp"
#include "sched/trigger/fire_trace.hpp"
#include "sched/trigger/slave_ports.hpp"

namespace sched::trigger {

class TimeoutWatch {
  public:
    struct Ports {
        /// FireClaimStore::StatusOf (blocking; run on the DB pool).
        std::function<Result<model::FireStatus>(std::int64_t fire_id)> status_of;
        /// Records the end (the slave's windowed endings).
        std::function<void(FireEnding)> ended;
        /// The DB clock, for the end's finished_at.
        std::function<std::int64_t()> now_ms;
    };

    TimeoutWatch(net::any_io_executor io, net::thread_pool& db_pool, dispatch::ExecutorClient& executors,
                 Micros call_timeout, Ports ports, std::string node_id);

    /// Watches a run accepted by `address`: `held_ms` (a run sent ahead waits for its due time)
    /// and then `timeout_ms` later, a run still dispatching or running is killed and ended.
    /// With `ended` (the fire's `ended` span, FireTracer on), that end pushes it and the
    /// attempt's root, status `timeout`, at the end's time, if the end moves the fire's row.
    void Watch(std::int64_t fire_id, std::string app, std::string address, std::int64_t timeout_ms,
               std::int64_t held_ms, std::optional<PendingFireSpan> ended = std::nullopt);

  private:
    net::awaitable<void> Run(std::int64_t fire_id, std::string app, std::string address, std::int64_t timeout_ms,
                             std::int64_t held_ms, std::optional<PendingFireSpan> ended);

    net::any_io_executor io_;
    net::thread_pool& db_pool_;
    dispatch::ExecutorClient& executors_;
    Micros call_timeout_;
    Ports ports_;
    std::string node_id_;
};

}  // namespace sched::trigger
