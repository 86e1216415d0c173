#pragma once

// The SDK's registry and callback handlers (contract: sched/web/executor_api.hpp), shared by
// AddExecutorRoutes (trigger nodes: the server's hook checks the cluster token) and the web
// module (which checks executor tokens itself).

#include <memory>

#include "sched/common/net.hpp"
#include "sched/db/database.hpp"
#include "sched/http/message.hpp"

namespace sched::web::impl {

net::awaitable<rest::Response> HandleHeartbeat(rest::Request& req, db::Database& db, net::thread_pool& db_pool);
net::awaitable<rest::Response> HandleDeregister(rest::Request& req, db::Database& db, net::thread_pool& db_pool);
net::awaitable<rest::Response> HandleCallback(rest::Request& req, db::Database& db, net::thread_pool& db_pool);

}  // namespace sched::web::impl
