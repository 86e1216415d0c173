#pragma once

/// Distributed locks for a business service, through the scheduler's lock API (docs/api.md,
/// "Locks"), from handlers or any other code of the service:
///
///     auto lock = executor.Lock("order-" + id, 10s, 5s);  // lease 10 s, wait up to 5 s
///     if (!lock.ok()) return lock.status();               // held by another (kAborted) or no server
///     // held: a watchdog extends it every lease / 3 until the guard goes
///     charge(order, lock->epoch());                       // the fencing token goes with the write
///     if (lock->LostToken().stop_requested()) ...         // lost (expired, taken over, no server)
///     // ~LockGuard releases it
///
/// The calls go over HTTP to the web endpoints the SDK registers with (`web-endpoints`), with
/// the executor token, starting with the endpoint that answered last, failing over to the next
/// one on a connection failure or a 502/503/504, and retrying rounds with back-off (100 ms
/// doubling to 2 s, jittered) for `web-timeout` (plus the wait, for an acquire).
///
/// What it guarantees and what it does not: see docs/locks.md. In short, the server holds the
/// lock for one owner at a time by its database clock, and `epoch()` strictly increases per
/// key; but a process that stalls past its lease (or loses its server for longer than the
/// lease) can still act after the next owner started. `Held()` and `LostToken()` tell the code
/// to stop as soon as this process knows, and the epoch lets the protected resource refuse a
/// stale writer.

#include <chrono>
#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>

#include "sched/common/status.hpp"

namespace sched::client {

namespace impl {
class LockService;
struct LockState;
}  // namespace impl

/// One acquired lock. Releases it when destroyed (or by Release()). Movable, not copyable; a
/// moved-from guard may only be destroyed or assigned to. Thread-safe.
class LockGuard {
  public:
    LockGuard(LockGuard&&) noexcept;
    LockGuard& operator=(LockGuard&&) noexcept;
    LockGuard(const LockGuard&) = delete;
    LockGuard& operator=(const LockGuard&) = delete;
    /// Release()s; a failure is logged (the lock then expires at the end of its lease).
    ~LockGuard();

    const std::string& key() const;
    /// The owner token the server gave this acquisition.
    const std::string& owner() const;
    /// The fencing token: higher than every earlier holder's of this key.
    std::int64_t epoch() const;

    /// False once released, once the watchdog learned the lock is lost (the server refused the
    /// extend: expired or taken over), or once its local deadline (start of the last successful
    /// acquire/extend request + lease) has passed without a successful extend. Cheap.
    bool Held() const;
    /// Requested when the guard learns the lock is lost (as above), so work can stop promptly.
    std::stop_token LostToken() const;

    /// Releases now (stopping the watchdog). OK when released or already released; kAborted
    /// when the server says it was not ours any more (expired and taken over: nothing was
    /// changed); kUnavailable when no endpoint answered (the lock expires by itself). Blocks up
    /// to about `web-timeout`.
    Status Release();

  private:
    friend class impl::LockService;
    LockGuard(std::shared_ptr<impl::LockService> service, std::shared_ptr<impl::LockState> state);

    std::shared_ptr<impl::LockService> service_;
    std::shared_ptr<impl::LockState> state_;
};

}  // namespace sched::client
