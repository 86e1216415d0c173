#pragma once

/// The lock API: distributed locks for business services over HTTP (docs/api.md, "Locks"),
/// served wherever the SDK's registry and callback routes are (web nodes, the standalone node,
/// trigger nodes with `executor-api: true`). It is `sched::lock::DistributedLock` behind four
/// routes:
///
///   POST /api/v1/locks/{key}/acquire {lease_ms, wait_ms = 0}
///        200 {key, owner, epoch, lease_ms, waited_ms, lease_until_ms}
///        409 (code aborted, field key) still held by another owner after wait_ms
///        429 (code resource_exhausted, field wait_ms) too many acquires waiting already
///   POST /api/v1/locks/{key}/extend {owner, epoch, lease_ms}
///        200 {key, owner, epoch, lease_ms, lease_until_ms}: the lease now runs lease_ms from
///        the database's clock at the moment of the extend
///   POST /api/v1/locks/{key}/release {owner, epoch}
///        200 {key, released: true, epoch}: epoch is the new (released) epoch
///   GET  /api/v1/locks/{key}
///        200 {key, held, owner, epoch, lease_until_ms, remaining_ms, now_ms}
///
///   extend and release: 404 (field key) no lock `key` was ever acquired; 409 code aborted with
///   field `epoch` when the epoch is not the lock's current one (a newer holder has it, or it
///   was released), field `owner` when the epoch matches but the owner does not, and (extend
///   only) field `epoch` when the holding has expired: an expired holding is never revived, its
///   holder must acquire again and gets a new epoch. Every 409 also carries `"lock"`: the
///   lock's current state as GET returns it.
///
/// Owners are unique per acquisition ("<server node id>#<n>"); `epoch` is the fencing token,
/// strictly increasing per key (see docs/locks.md). Times (`*_ms` instants) are the database
/// clock in epoch milliseconds; durations are milliseconds.
///
/// Validation (400 naming the field): key 1..128 characters of [A-Za-z0-9._:-]; lease_ms in
/// 1..max_lease; wait_ms in 0..max_wait; owner a non-empty string; epoch a positive integer;
/// unknown body fields.
///
/// Waiting never blocks a thread: each attempt is one TryLock with no wait on the DB pool, and
/// the back-off between attempts (10 ms doubling to 500 ms, jittered, never past the holder's
/// remaining lease nor the caller's wait) is an Asio timer. At most `max_waiters` acquires may
/// be waiting at once (per process); more get 429 at once.

#include <chrono>
#include <functional>
#include <memory>

#include "sched/common/config.hpp"
#include "sched/common/duration.hpp"
#include "sched/lock/lock_backend.hpp"

namespace sched::web {

/// The lock API's settings. As YAML (the `locks:` section of web.yaml), with these defaults:
///
///     max-lease: 1h        # longest lease_ms accepted
///     max-wait: 30s        # longest wait_ms accepted
///     max-waiters: 256     # acquires that may be waiting at once; more get 429
///     backend: sql         # sql (the scheduler's database) or redis; see docs/locks.md
///     redis:               # for backend redis (lock::LockBackendConfig)
///       servers: ["127.0.0.1:6379"]
///       timeout: 200ms
///
/// `redlock` is refused here (locks.backend): the API hands out fencing epochs and Redlock has
/// none; use it through lock::DistributedLock directly if its guarantees suffice.
struct LockApiOptions {
    Micros max_lease = std::chrono::hours(1);
    Micros max_wait = std::chrono::seconds(30);
    int max_waiters = 256;
    /// What `store` is made from when it is not injected.
    lock::LockBackendConfig backend;
    /// Where the locks live (not a YAML key). nullptr: made from `backend` (for sql on the
    /// module's database, once that is open). Tests inject a store here.
    std::shared_ptr<lock::KeyLockStore> store;

    /// Reads the keys above from `node`, starting from `defaults`. Throws ConfigError naming the
    /// key.
    static LockApiOptions FromYaml(const ConfigNode& node, const LockApiOptions& defaults);
    static LockApiOptions FromYaml(const ConfigNode& node) { return FromYaml(node, LockApiOptions()); }
};

}  // namespace sched::web
