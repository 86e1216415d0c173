#pragma once

/// The executor-facing routes: what client SDKs call.
///
///   POST /api/v1/registry/heartbeat   {app, address, handlers:[...], capacity, running} -> 200
///   POST /api/v1/registry/deregister  {app, address} -> 200, 404 when not registered
///   POST /api/v1/callback             [{fire_id, attempt, epoch, address, status, code, message,
///                                       started_ms, finished_ms, log, log_truncated_bytes}, ...]
///                                     -> 200
///                                     {"results": [{"fire_id", "outcome"}]}
///
/// Authorisation (auth.hpp): the cluster token, or an executor token. An app-scoped executor
/// token heartbeats and deregisters only its apps' instances (else 403, field "app"), and its
/// results are applied only to fires of its apps' jobs (else the item's outcome is
/// "forbidden": the batch stays 200, so that a spool is never stuck behind one item).
///
/// Bodies are strict: an unknown field is 400 naming it ("capacityy", "[2].fire_idd"); `address`
/// is host:port (port 1..65535, at most 255 characters of [A-Za-z0-9.-_:[]]); `app` at most 128
/// characters; at most 1000 handler names of 1..128 characters; at most 1000 results per call;
/// `log` (optional, the run's log tail) at most store::FireLogs::kMaxLogBytes bytes, stored with
/// the result only when it is applied (store::FireLogs).
///
/// Callbacks are idempotent per (fire, attempt) and checked against the dispatch
/// (store::FireRepository::ApplyResult, applied per batch by store::FireResults::ApplyMany at a
/// constant number of statements): the first result moves the fire from
/// dispatching/running to its final status (CAS, with the follow-up flag for the master);
/// outcomes "applied", "duplicate" (a resend), "conflict" (ended differently already, or not
/// dispatched yet), "not_found", "forbidden" (another app's fire), "stale_attempt",
/// "stale_epoch" (`epoch` is not the dispatch epoch that was sent in /v1/run),
/// "wrong_executor" (`address` is not the instance the fire was dispatched to, or, while the
/// fire is still `dispatching`, not a registered instance of its app). Only "applied" changes
/// the row. `epoch` and `address` are required with an app-scoped token; with the cluster
/// token or a legacy all-apps token they may be left out (older SDKs), and are then not
/// checked. A malformed batch is 400 naming the item's field ("[3].status").
///
/// With them come the lock API's four routes (lock_api.hpp): a service's SDK locks through the
/// same addresses it registers with.
///
/// Handlers run their DB work on `db_pool`, never on the I/O thread. Served by scheduler-web,
/// scheduler-standalone and, so that a cluster works without a web node, scheduler-trigger.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sched/common/duration.hpp"
#include "sched/common/metrics.hpp"
#include "sched/common/net.hpp"
#include "sched/db/database.hpp"
#include "sched/http/router.hpp"
#include "sched/web/lock_api.hpp"

namespace sched::web {

/// Adds the three routes and the lock API's four to `router` (what a trigger node serves). They
/// are added as http::Access::kPublic and authenticate inside their handlers, as the web
/// module's do (auth.hpp): the cluster token, or an API token from `db`'s token table
/// (looked up on `db_pool`, cached for `auth_cache`), so a service holding only its app-scoped
/// executor token can use any node. The server's AuthHook is not consulted for them. `database`
/// (nullptr until open: the app adds these routes before TriggerNode::Start opens it; calls
/// meanwhile answer 503) and `db_pool` must outlive the server. `locks.store` nullptr: the locks
/// live in the database (SqlLockStore). Throws std::invalid_argument for an empty
/// `cluster_token`. `metrics` (optional, must outlive the router): where applied callbacks are
/// counted (AddWebRoutes). `wake_masters` (optional; WebOptions::wake_masters): called after a
/// callback batch whose applied results left the masters a follow-up (a failed or timed-out
/// end, a workflow step's end, a fixed-delay job's end; not a success of a cron or fixed-rate
/// job); must return at once. `results_applied` (optional; WebOptions::results_applied): called
/// with the fires a callback batch applied results for; must return at once.
void AddExecutorRoutes(http::Router& router, const std::string& cluster_token, db::DatabaseProvider database,
                       net::thread_pool& db_pool, LockApiOptions locks = {},
                       Micros auth_cache = std::chrono::seconds(5), MetricsRegistry* metrics = nullptr,
                       std::function<void()> wake_masters = {},
                       std::function<void(const std::vector<std::int64_t>&)> results_applied = {});

}  // namespace sched::web
