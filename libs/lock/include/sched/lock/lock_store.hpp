#pragma once

/// The lock table's operations, as an interface: every lock in this library (the master lease,
/// DistributedLock) is built from these five statements on one `scheduler_lock` row.
///
/// The row: (id, namespace UNIQUE, owner NULL, epoch, version, lease_until_us, update_time_us,
/// create_time_us). Invariants every implementation keeps:
///  - `version` changes on every successful write, so a CAS on (id, version) fails if anything
///    at all happened to the row since it was read;
///  - `epoch` changes whenever ownership changes (take-over and release; never on renew): it is
///    the fencing token, strictly increasing per row. Rows are never deleted, so a name's tokens
///    never repeat;
///  - expiry is judged by the database clock *inside* the statement that acts on it
///    (`lease_until_us <= NOW` means expired), in microseconds; no node's own clock is trusted
///    to decide who owns a row;
///  - a row that could only have been written by a clock that has since moved back counts as
///    expired too (ClockStepGuard): otherwise a clock stepped back by an hour while a holder was
///    down would keep its dead lease "valid" for that hour.
///
/// SqlLockStore (sql_lock_store.hpp) is the real implementation; FakeLockStore
/// (testing/fake_lock_store.hpp) implements the same contract over a FakeClock for unit tests.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sched/common/duration.hpp"
#include "sched/common/status.hpp"

namespace sched::lock {

/// The longest lock name the schema holds (`namespace VARCHAR(191)`).
inline constexpr std::size_t kMaxLockNameLength = 191;

/// How far a held row may lie in the future of the database clock before it is taken for the
/// trace of a clock that moved back (an NTP step, a VM restored from a snapshot; on SQLite the
/// "database clock" is the wall clock of whichever process writes), and is then treated as
/// expired. Every write stamps `update_time_us = NOW` and `lease_until_us = NOW + lease` in one
/// statement, so `lease_until_us - update_time_us` is the lease its holder asked for, and
///     update_time_us > NOW + tolerance
/// says exactly "the expiry lies further ahead than the requested lease + tolerance": no clock
/// that only moves forward can produce such a row.
struct ClockStepGuard {
    /// The default tolerance of general locks (DistributedLock): generous against clock slewing
    /// and the microseconds between two statements, tiny against a step that matters.
    static constexpr Micros kDefaultTolerance = std::chrono::seconds(1);

    Micros tolerance = kDefaultTolerance;
    /// When positive, also expired: `lease_until_us > NOW + max_lease_ahead`. The master lease
    /// sets ttl + margin (every node writes that row with the same ttl), which also catches a
    /// row whose expiry alone was pushed ahead. A node with a shorter ttl than the holder's
    /// (during a rollout of a new election.ttl) takes such a lease over; fencing keeps that safe,
    /// and once the shorter-ttl node leads, nobody sees its row as too far ahead.
    Micros max_lease_ahead = Micros(0);
};

/// One row as read, with the database clock of the same statement.
struct LockRow {
    std::int64_t id = 0;
    std::string name;                  ///< the `namespace` column
    std::optional<std::string> owner;  ///< empty: released (or never held)
    std::int64_t epoch = 0;            ///< fencing token
    std::int64_t version = 0;          ///< changes on every write
    std::int64_t lease_until_us = 0;   ///< expiry, database clock, epoch microseconds
    std::int64_t update_time_us = 0;   ///< last write, database clock
    /// When the holding at `epoch` began (database clock, epoch microseconds): written with the
    /// owner by Insert and TakeOver, kept by Renew and Release (a released row keeps its last
    /// holder's). 0 when unknown: a row last taken before the column existed, or a backend that
    /// keeps no such time (Redis).
    std::int64_t held_since_us = 0;
    std::int64_t db_now_us = 0;  ///< the database clock when this row was read

    /// True when nobody holds the row as of `db_now_us` (released, expired, or left by a clock
    /// that moved back: ClockStepped). Advisory: the take-over statement checks it again against
    /// the clock at that moment.
    bool Available(const ClockStepGuard& guard = {}) const {
        return !owner.has_value() || lease_until_us <= db_now_us || ClockStepped(guard);
    }
    /// True when the row lies further in the future of `db_now_us` than `guard` allows: its
    /// database clock has moved back since the row was written.
    bool ClockStepped(const ClockStepGuard& guard = {}) const {
        return update_time_us > db_now_us + guard.tolerance.count() ||
               (guard.max_lease_ahead.count() > 0 && lease_until_us > db_now_us + guard.max_lease_ahead.count());
    }
    /// How far the row lies ahead of the allowed (microseconds; > 0 when ClockStepped): at
    /// least how far the clock moved back.
    std::int64_t ClockStepUs(const ClockStepGuard& guard = {}) const;
};

/// What an acquisition gives its owner: the row to renew and release by, and the fencing token.
struct Holding {
    std::int64_t id = 0;     ///< the row (SQL); 0 on Redis, which names locks by key only
    std::int64_t epoch = 0;  ///< fencing token; 0 when the store is not fenced (Redlock)
};

/// What DistributedLock needs from a backend: named locks with an owner and a lease. Every
/// operation is one attempt; DistributedLock adds the waiting, back-off and watchdog on top.
///
/// Implementations: every LockStore (the SQL table: rows, fenced epochs), RedisLockStore (one
/// Redis server: SET NX PX + scripts, epochs from a per-name counter) and RedlockStore (a
/// majority of N independent Redis servers, no fencing: epoch 0). Factory: lock_backend.hpp.
///
/// Thread-safety: implementations are safe to call from several threads at once.
/// Errors as values: kUnavailable (server or database down, connection broken: retry the call
/// with back-off), kDeadlineExceeded (timed out), kUnauthenticated (Redis password refused), ...
/// "Someone else holds it" and "not ours any more" are not errors (nullopt / false).
class KeyLockStore {
  public:
    virtual ~KeyLockStore() = default;

    /// One attempt to acquire `name` for `owner` (unique per acquisition) for `lease`.
    /// nullopt: someone else holds it. `seen` (optional) receives what the attempt saw of the
    /// current holder (owner, lease_until_us and db_now_us on the backend's clock), so a waiter
    /// need not sleep past the end of the holder's lease. Retrying after an error with the same
    /// owner is safe: an acquisition whose reply was lost is found again, never held twice.
    /// kInvalidArgument when `name` is empty or longer than kMaxLockNameLength, or lease <= 0.
    virtual Result<std::optional<Holding>> AcquireLock(std::string_view name, std::string_view owner, Micros lease,
                                                       std::optional<LockRow>* seen) = 0;

    /// Extends a live holding of `name` to `lease` from now. False: it is gone (expired, taken,
    /// released); it cannot be revived, only re-acquired.
    virtual Result<bool> RenewLock(std::string_view name, const Holding& holding, std::string_view owner,
                                   Micros lease) = 0;

    /// Gives a holding of `name` back if `owner` still holds it at holding.epoch (expired or not,
    /// where the backend still knows it). A fenced backend moves the name's epoch on by one, so
    /// InspectLock then answers holding.epoch + 1. False: not ours any more, nothing was changed.
    virtual Result<bool> ReleaseLock(std::string_view name, const Holding& holding, std::string_view owner) = 0;

    /// The current state of `name` as the backend sees it, for display and for checks by an
    /// owner/epoch (the HTTP lock API): nullopt when `name` was never acquired (as far as the
    /// backend remembers); otherwise owner (none when released or expired and forgotten), epoch,
    /// lease_until_us and db_now_us on the backend's clock. kUnimplemented where no single
    /// server's view is authoritative (Redlock).
    virtual Result<std::optional<LockRow>> InspectLock(std::string_view name) = 0;

    /// True when Holding::epoch is a fencing token (strictly increasing per name for as long as
    /// the backend keeps its data). False (Redlock): every epoch is 0 and means "not fenced".
    virtual bool fenced() const = 0;

    /// How much shorter than `lease` a holder must assume its lock to be, on its own steady clock:
    /// 0 where one server's clock decides expiry; Redlock's clock-drift allowance
    /// (lease * 0.01 + 2 ms) where several servers' clocks do. DistributedLock sets
    /// LockHandle::valid_until = start of the attempt + lease - this.
    virtual Micros DriftAllowance(Micros lease) const {
        (void)lease;
        return Micros(0);
    }
};

/// The lock table's row operations (the SQL store, the fake). The KeyLockStore operations are
/// built from them: AcquireLock = TryAcquireOnce, RenewLock = Renew(holding.id, ...),
/// ReleaseLock = Release(holding.id, ...). LeaseElector and Fence need these rows (and fence in
/// the same database), so they only run on a LockStore.
///
/// Errors: database failures as Database::Run classifies them (kUnavailable = retry the call,
/// kDeadlineExceeded = a lock wait or statement timed out, ...). A CAS that matches no row is
/// not an error: it returns false.
class LockStore : public KeyLockStore {
  public:
    Result<std::optional<Holding>> AcquireLock(std::string_view name, std::string_view owner, Micros lease,
                                               std::optional<LockRow>* seen) final;
    Result<bool> RenewLock(std::string_view name, const Holding& holding, std::string_view owner, Micros lease) final;
    Result<bool> ReleaseLock(std::string_view name, const Holding& holding, std::string_view owner) final;
    /// Read(name): the row, expired holders included.
    Result<std::optional<LockRow>> InspectLock(std::string_view name) final { return Read(name); }
    bool fenced() const final { return true; }

    /// The row named `name` and the database clock, read in one statement; nullopt when there is
    /// no such row.
    virtual Result<std::optional<LockRow>> Read(std::string_view name) = 0;

    /// Creates the row held by `owner` (epoch 1, lease_until = NOW + lease) unless a row with
    /// that name exists. nullopt: it existed (nothing was written). Never fails with a
    /// duplicate-key error: the insert is Dialect::InsertIfAbsent.
    virtual Result<std::optional<Holding>> Insert(std::string_view name, std::string_view owner, Micros lease) = 0;

    /// Takes over `seen` for `owner` (epoch + 1, version + 1, lease_until = NOW + lease) if the
    /// row is still at seen.id/seen.version and, by the clock inside the statement, released,
    /// expired, or left by a clock that moved back (`guard`, judged in the same statement).
    /// True: taken, and the new epoch is seen.epoch + 1.
    virtual Result<bool> TakeOver(const LockRow& seen, std::string_view owner, Micros lease,
                                  const ClockStepGuard& guard) = 0;

    /// Extends a live holding: lease_until = NOW + lease, version + 1, if the row is still held
    /// by `owner` at `epoch` and not expired. False: the holding is gone (expired, taken over or
    /// released); it cannot be revived, only re-acquired with a new epoch.
    virtual Result<bool> Renew(std::int64_t id, std::string_view owner, std::int64_t epoch, Micros lease) = 0;

    /// Gives a holding back: owner = NULL, epoch + 1, version + 1, lease_until = NOW, if the row
    /// is held by `owner` at `epoch` (expired or not). False: it was not ours any more, and
    /// nothing was changed; never releases another owner's holding.
    virtual Result<bool> Release(std::int64_t id, std::string_view owner, std::int64_t epoch) = 0;
};

/// One acquisition attempt from the operations above: read; insert when absent, or take over
/// when released, expired or clock-stepped by `guard` (one more read if another node inserted
/// first). Returns the holding, or nullopt when someone else holds the row or won the race;
/// `seen` (optional) receives the last row read, so callers can tell who holds it and until
/// when (database clock). A take-over of a clock-stepped row is logged once, as a warning with
/// the amount (the row is sane again after it).
/// kInvalidArgument when `name` is empty or longer than kMaxLockNameLength.
Result<std::optional<Holding>> TryAcquireOnce(LockStore& store, std::string_view name, std::string_view owner,
                                              Micros lease, std::optional<LockRow>* seen = nullptr,
                                              const ClockStepGuard& guard = {});

/// The error every lock in this library returns when a holding is gone: code kAborted (retry at
/// a higher level: re-acquire, then redo the work) and a message starting with "lease lost".
/// kAborted alone is not enough to tell (a deadlock is kAborted too): use IsLeaseLost.
Status LeaseLost(std::string_view detail);
bool IsLeaseLost(const Status& status);

}  // namespace sched::lock
