#pragma once

// The lock API's handlers (contract: sched/web/lock_api.hpp), shared by the web module's SDK
// routes and AddExecutorRoutes (trigger nodes); both authenticate the caller first, and the
// handlers check the caller's app scope.

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "sched/common/net.hpp"
#include "sched/common/status.hpp"
#include "sched/db/database.hpp"
#include "sched/http/message.hpp"
#include "sched/lock/distributed_lock.hpp"
#include "sched/web/auth.hpp"
#include "sched/web/lock_api.hpp"

namespace sched::web::impl {

/// Thread-safe. `db_pool` must outlive it.
class LockApi {
  public:
    LockApi(LockApiOptions options, DatabaseProvider database, net::thread_pool& db_pool);

    net::awaitable<http::Response> Acquire(http::Request& req, const Principal& who);
    net::awaitable<http::Response> Extend(http::Request& req, const Principal& who);
    net::awaitable<http::Response> Release(http::Request& req, const Principal& who);
    net::awaitable<http::Response> Inspect(http::Request& req, const Principal& who);

    /// Acquires waiting right now (for tests and metrics).
    int waiting() const { return waiting_.load(); }

    struct Backend {
        std::shared_ptr<lock::KeyLockStore> store;
        std::shared_ptr<lock::DistributedLock> locks;
    };

  private:
    /// A lock as a request names it: the backend, its name in DistributedLock's key space and
    /// its row in the lock store.
    struct Target {
        Backend backend;
        std::string name;
        std::string row_name;
    };

    Result<Backend> GetBackend();
    /// The lock `key` (in `app`'s namespace) for `who`, or nullopt with `error` set: first the
    /// name's checks (400/403), then the backend's (503 while the database is not open).
    std::optional<Target> Resolve(const Principal& who, const std::optional<std::string>& app, const std::string& key,
                                  std::optional<http::Response>& error);
    net::awaitable<http::Response> ExtendOrRelease(http::Request& req, const Principal& who, bool extend);

    const LockApiOptions options_;
    const DatabaseProvider database_;
    net::thread_pool& db_pool_;
    std::atomic<int> waiting_{0};
    std::mutex mu_;
    std::optional<Backend> backend_;  // created on first use: the database may open late
};

}  // namespace sched::web::impl
