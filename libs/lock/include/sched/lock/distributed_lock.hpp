#pragma once

/// A distributed lock for any key, for business code, on the same
/// `scheduler_lock` table as the master lease (rows named "lock:<key>").
///
///   sched::lock::DistributedLock locks(std::make_shared<sched::lock::SqlLockStore>(db));
///   auto handle = locks.TryLock("order-42", /*wait=*/2s, /*lease=*/30s);
///   if (!handle.ok()) { /* database error */ }
///   else if (!*handle) { /* someone else holds it */ }
///   else {
///       sched::lock::LockGuard guard = locks.Guard(**handle, 30s);  // unlocks on scope exit,
///       ...  // watchdog renews every 10 s; pass guard.epoch() to the resource as fencing token
///   }
///
/// What it guarantees: at most one owner holds a key at any instant *by the database clock*;
/// acquisition is insert-if-absent or a CAS take-over on (id, version) of a released or expired
/// row (never a delete by name); Unlock and Extend check owner and epoch, so they never touch a
/// lock someone else acquired; each acquisition's epoch is larger than every earlier one of the
/// same key (rows are kept, so tokens never repeat).
///
/// What it does not: a holder that stalls (GC-like pause, SIGSTOP, a slow disk) past its lease
/// keeps running while the next owner starts. Without fencing, a lease lock only *reduces*
/// overlap. For real exclusion, pass epoch() with every write and have the resource reject a
/// token lower than the highest it has seen (or check it in the same transaction, see
/// fenced.hpp for the pattern).

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "sched/common/clock.hpp"
#include "sched/common/duration.hpp"
#include "sched/common/status.hpp"
#include "sched/lock/lock_store.hpp"

namespace sched::lock {

namespace impl {
class LockService;
struct GuardState;
}  // namespace impl

/// One acquisition.
struct LockHandle {
    std::string key;         ///< as passed by the caller (without the "lock:" row prefix)
    std::string owner;       ///< unique per acquisition: "<node id>#<n>"
    std::int64_t epoch = 0;  ///< fencing token; always 0 when the store is not fenced (Redlock)
    std::int64_t id = 0;     ///< the row (SQL); 0 on Redis
    /// Local deadline: the steady time at the start of the last successful acquire/extend plus
    /// its lease (minus the store's DriftAllowance: Redlock). The backend's lease ends no
    /// earlier than this (as long as the backend's clock runs at the rate the store assumes).
    std::chrono::steady_clock::time_point valid_until{};
};

/// Back-off between acquisition attempts while a key is held: exponential from `initial` to
/// `max`, each sleep scaled by a random factor in [0.5, 1.5) and never longer than the holder's
/// remaining lease as the database reported it.
struct LockRetryPolicy {
    Micros initial = std::chrono::milliseconds(10);
    Micros max = std::chrono::milliseconds(500);
};

class LockGuard;

/// Thread-safe. Locks are not re-entrant: two acquisitions of one key exclude each other even
/// in one process. Guards keep what they need alive, so they may outlive the DistributedLock.
class DistributedLock {
  public:
    /// `store`: any backend (SqlLockStore, RedisLockStore, RedlockStore; see lock_backend.hpp).
    explicit DistributedLock(std::shared_ptr<KeyLockStore> store, std::string node_id = "", LockRetryPolicy retry = {},
                             const Clock& clock = SystemClock::Instance());
    ~DistributedLock();
    DistributedLock(const DistributedLock&) = delete;
    DistributedLock& operator=(const DistributedLock&) = delete;

    /// Acquires `key` for `lease`, retrying with back-off for up to `wait` (0: one attempt).
    /// nullopt: held by someone else the whole time. Errors: kInvalidArgument (empty key, key
    /// longer than kMaxLockNameLength - 5, lease not positive); kCancelled when `cancel` is
    /// requested; the last database error when the attempts ended in errors (transient errors
    /// are retried within `wait`).
    Result<std::optional<LockHandle>> TryLock(std::string_view key, Micros wait, Micros lease,
                                              const std::stop_token& cancel = {});

    /// Blocks until `key` is acquired or `cancel` is requested (kCancelled). Transient database
    /// errors are retried with back-off; other errors are returned.
    Result<LockHandle> Lock(std::string_view key, Micros lease, const std::stop_token& cancel);

    /// Releases the lock (owner = NULL, epoch + 1) if `handle` still holds it, expired or not.
    /// LeaseLost when someone else has acquired it since (nothing is changed).
    Status Unlock(const LockHandle& handle);

    /// Extends a live lock to `lease` from now (database clock) and moves handle.valid_until.
    /// LeaseLost when it has expired or been taken over: it cannot be revived, only re-acquired.
    Status Extend(LockHandle& handle, Micros lease);

    /// Makes `handle` scoped: the guard unlocks it when destroyed. With `watchdog` the lock is
    /// renewed to `lease` every lease / 3 on a background thread (one per DistributedLock) until
    /// unlocked, until the renewal finds it lost, or - if `work` is given - once `work` is
    /// stopped: a cancelled or wedged job then lets its lock expire instead of holding it.
    LockGuard Guard(LockHandle handle, Micros lease, bool watchdog = true, std::stop_token work = {});

    const std::string& node_id() const;
    /// Whether epochs are fencing tokens (KeyLockStore::fenced); false on Redlock (epoch 0).
    bool fenced() const;

  private:
    std::shared_ptr<impl::LockService> service_;
};

/// Holds one acquisition until destroyed or Unlock()ed. Movable (a moved-from guard may only be
/// destroyed or assigned to), not copyable. Thread-safe.
class LockGuard {
  public:
    LockGuard(LockGuard&&) noexcept;
    LockGuard& operator=(LockGuard&&) noexcept;
    LockGuard(const LockGuard&) = delete;
    LockGuard& operator=(const LockGuard&) = delete;
    /// Unlocks (errors are logged: the lock then expires by itself).
    ~LockGuard();

    const std::string& key() const;
    std::int64_t epoch() const;
    LockHandle handle() const;

    /// False once unlocked, once the watchdog found the lock lost, or once the local deadline
    /// (last successful renew + lease) has passed. Cheap.
    bool Held() const;
    /// Requested when the guard learns that the lock is lost (watchdog renewal rejected or its
    /// deadline passed without a renewal), so work can stop promptly.
    std::stop_token LostToken() const;

    /// Unlocks now; later calls return OK without doing anything.
    Status Unlock();

  private:
    friend class DistributedLock;
    LockGuard(std::shared_ptr<impl::LockService> service, std::shared_ptr<impl::GuardState> state);

    std::shared_ptr<impl::LockService> service_;
    std::shared_ptr<impl::GuardState> state_;
};

}  // namespace sched::lock
