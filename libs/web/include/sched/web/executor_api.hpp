#pragma once

/// The executor-facing routes (DESIGN 6): what client SDKs call.
///
///   POST /api/v1/registry/heartbeat   {app, address, handlers:[...], capacity, running} -> 200
///   POST /api/v1/registry/deregister  {app, address} -> 200, 404 when not registered
///   POST /api/v1/callback             [{fire_id, attempt, epoch, status, code, message,
///                                       started_ms, finished_ms}, ...] -> 200
///                                     {"results": [{"fire_id", "outcome"}]}
///
/// Callbacks are idempotent per (fire, attempt): the first result moves the fire from
/// dispatching/running to its final status (CAS, with the follow-up flag for the master), a
/// repeat of the same result is "duplicate", a result for another attempt or a fire already
/// finished differently is "conflict", an unknown fire "not_found". A batch is answered 200
/// with one outcome per item, so that one bad item never makes the SDK resend the whole
/// batch forever; a malformed batch is 400 naming the item's field ("[3].status").
///
/// With them come the lock API's four routes (lock_api.hpp): a service's SDK locks through the
/// same addresses it registers with.
///
/// Handlers run their DB work on `db_pool`, never on the I/O thread. Served by scheduler-web,
/// scheduler-standalone and, so that a cluster works without a web node, scheduler-trigger.

#include <memory>

#include "sched/common/net.hpp"
#include "sched/db/database.hpp"
#include "sched/http/router.hpp"
#include "sched/web/lock_api.hpp"

namespace sched::web {

/// Adds the three routes and the lock API's four (all authenticated: the server's auth hook
/// applies) to `router`. `db` and `db_pool` must outlive the server. `locks.store` nullptr: the
/// locks live in `db` (SqlLockStore).
void AddExecutorRoutes(rest::Router& router, std::shared_ptr<db::Database> db, net::thread_pool& db_pool,
                       LockApiOptions locks = {});

}  // namespace sched::web
