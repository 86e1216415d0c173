#pragma once

// The SDK's registry and callback handlers (contract: sched/web/executor_api.hpp), shared by
// the web module and AddExecutorRoutes (trigger nodes); both authenticate the caller first.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "impl/last_success_writer.hpp"
#include "sched/common/net.hpp"
#include "sched/db/database.hpp"
#include "sched/http/message.hpp"
#include "sched/store/fire_metrics.hpp"
#include "sched/web/auth.hpp"

namespace sched::web::impl {

net::awaitable<http::Response> HandleHeartbeat(http::Request& req, const Principal& who, db::Database& db,
                                               net::thread_pool& db_pool);
net::awaitable<http::Response> HandleDeregister(http::Request& req, const Principal& who, db::Database& db,
                                                net::thread_pool& db_pool);
/// What the process is told of a callback batch (WebOptions), each may be empty.
struct CallbackHooks {
    /// Called once when an applied result left a follow-up.
    const std::function<void()>& wake_masters;
    /// Called with the fires whose results were applied, when any were.
    const std::function<void(const std::vector<std::int64_t>&)>& results_applied;
    /// Receives the jobs of the applied successes (may be null).
    LastSuccessWriter* last_success = nullptr;
};
/// `metrics` (may be null) counts the applied results (sched_fire_outcomes_total, duration).
net::awaitable<http::Response> HandleCallback(http::Request& req, const Principal& who, db::Database& db,
                                              net::thread_pool& db_pool, store::FireOutcomeMetrics* metrics,
                                              CallbackHooks hooks);

}  // namespace sched::web::impl
