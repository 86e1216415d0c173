#pragma once

// The SDK's registry and callback handlers (contract: sched/web/executor_api.hpp), shared by
// the web module and AddExecutorRoutes (trigger nodes); both authenticate the caller first.

#include <functional>
#include <memory>

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
/// `metrics` (may be null) counts the applied results (sched_fire_outcomes_total, duration);
/// `wake_masters` (may be empty) is called once when an applied result left a follow-up.
net::awaitable<http::Response> HandleCallback(http::Request& req, const Principal& who, db::Database& db,
                                              net::thread_pool& db_pool, store::FireOutcomeMetrics* metrics,
                                              const std::function<void()>& wake_masters);

}  // namespace sched::web::impl
