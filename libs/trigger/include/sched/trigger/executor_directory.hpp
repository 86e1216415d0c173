#pragma once

/// What the slave knows of the executor instances it sends runs to: the live registry (read
/// from the database at most once per `executor-refresh`, and again when a claimed fire's app
/// is missing from a copy older than its claim), the instances serving a job's handler, how
/// many calls are open to each instance (at most `max-calls-per-executor`), and which instances
/// recently refused a batch route (an older SDK), so that runs go to them one by one for a
/// while.
///
/// The registry and the call slots live on the directory's own strand; every awaitable method
/// hops there and back, so callers on any I/O thread may use it. Registry snapshots are
/// immutable and shared (a claimed group keeps the one it was routed with).

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sched/common/duration.hpp"
#include "sched/common/net.hpp"
#include "sched/common/status.hpp"
#include "sched/store/registry.hpp"

namespace sched::trigger {

/// Live instances by app.
using Registry = std::map<std::string, std::vector<store::ExecutorInstance>>;

/// The addresses of `app`'s instances in `registry` that serve `handler`, in registry order.
std::vector<std::string> Serving(const Registry& registry, const std::string& app, const std::string& handler);

/// A batch route an instance may lack (an SDK older than it).
enum class BatchRoute { kRuns, kRunsAhead };

struct ExecutorDirectoryConfig {
    Micros refresh = std::chrono::seconds(1);        ///< executor-refresh
    int max_calls_per_executor = 64;                 ///< open calls to one instance
    Micros call_wait = std::chrono::seconds(3);      ///< how long AcquireCall waits for a slot
    Micros batch_refusal = std::chrono::minutes(1);  ///< how long a refused batch route is not tried
};

class ExecutorDirectory {
  public:
    /// Every app's live instances (blocking: a database read, run on `db_pool`).
    using ReadLive = std::function<Result<std::vector<store::ExecutorInstance>>()>;

    /// `log_name` prefixes the log lines (the node's id).
    ExecutorDirectory(const net::any_io_executor& io, net::thread_pool& db_pool, ReadLive read_live,
                      ExecutorDirectoryConfig config, std::string log_name);

    /// The registry to route a claimed group with: re-read when older than `refresh`, or when
    /// one of `apps` is missing from a copy read before `claim_started` (a service that just
    /// registered). On a read error the previous copy stays in use (logged); never null.
    net::awaitable<std::shared_ptr<const Registry>> ForClaim(std::chrono::steady_clock::time_point claim_started,
                                                             std::vector<std::string> apps);
    /// The instances of `app` serving `handler`, from a registry re-read when older than `max_age`.
    net::awaitable<std::vector<std::string>> LiveCandidates(std::string app, std::string handler, Micros max_age);

    /// A call slot to `address`, waiting up to `call_wait` for one to free up; false when none did.
    net::awaitable<bool> AcquireCall(std::string address);
    /// Gives the slot back (to the longest waiter, if any).
    void ReleaseCall(const std::string& address);

    /// Whether `address` refused `route` within the last `batch_refusal`.
    bool RefusesBatch(const std::string& address, BatchRoute route);
    /// Remembers that `address` does not serve `route`.
    void RefuseBatch(const std::string& address, BatchRoute route);

  private:
    struct State;
    net::awaitable<void> Read();

    net::strand<net::any_io_executor> strand_;
    net::thread_pool& db_pool_;
    ReadLive read_live_;
    ExecutorDirectoryConfig config_;
    std::string log_name_;
    std::shared_ptr<State> state_;
};

}  // namespace sched::trigger
