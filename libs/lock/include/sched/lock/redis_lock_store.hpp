#pragma once

/// Lock stores on Redis (hiredis), behind the same KeyLockStore interface as the SQL table, so
/// DistributedLock (TryLock / Lock / Unlock / Extend, Guard with its watchdog) runs unchanged on
/// them. See docs/locks.md "Redis and Redlock" for what each one guarantees.
///
///   auto store = std::make_shared<sched::lock::RedisLockStore>(
///       sched::lock::RedisServerAddress::Parse("127.0.0.1:6379").value());
///   sched::lock::DistributedLock locks(store);
///
/// Keys (prefix `RedisOptions::key_prefix`, default "sched:"; DistributedLock names are
/// "lock:<key>"):
///   <prefix>held:<name>   the lock: "<epoch> <owner>", expiring after the lease (PX)
///   <prefix>epoch:<name>  RedisLockStore only: the fencing counter (INCR), never expires
///
/// Acquire, renew and release are each one Lua script (EVALSHA), so each is atomic on a server:
///   acquire: GET; if absent: INCR epoch (RedisLockStore), SET value PX lease; if it holds our own
///            value (a retry whose first reply was lost): PEXPIRE and report it acquired;
///   renew:   compare-and-PEXPIRE (only if the value is exactly ours);
///   release: compare-and-DEL.
/// An expired key is gone, so renew and release of an expired holding return false, as on SQL.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sched/common/duration.hpp"
#include "sched/common/status.hpp"
#include "sched/lock/lock_store.hpp"

namespace sched::lock {

/// "host:port" of one Redis server.
struct RedisServerAddress {
    std::string host;
    int port = 6379;

    /// "host:port" with a port in 1..65535 (IPv6: "[::1]:6379"). kInvalidArgument otherwise.
    static Result<RedisServerAddress> Parse(std::string_view text);
    /// A comma-separated list of those ("h1:6379,h2:6379", a tool's command line): each parsed as
    /// Parse does, the first bad one's error returned.
    static Result<std::vector<RedisServerAddress>> ParseList(std::string_view text);
    std::string ToString() const;
    friend bool operator==(const RedisServerAddress&, const RedisServerAddress&) = default;
};

struct RedisOptions {
    /// Connect timeout (per attempt) and command timeout (per command). Keep both well below the
    /// lease: a renew that waits longer than the lease is useless.
    Micros connect_timeout = std::chrono::milliseconds(200);
    Micros timeout = std::chrono::milliseconds(200);
    std::string password;  ///< AUTH when not empty
    int db = 0;            ///< SELECT when not 0
    std::string key_prefix = "sched:";
};

namespace impl {
class RedisQuorum;
}  // namespace impl

/// What RedisLockStore and RedlockStore share: acquire, renew and release go to their servers
/// through one impl::RedisQuorum (one server, or Redlock's majority of N).
class RedisQuorumStore : public KeyLockStore {
  public:
    ~RedisQuorumStore() override;

    Result<std::optional<Holding>> AcquireLock(std::string_view name, std::string_view owner, Micros lease,
                                               std::optional<LockRow>* seen) override;
    Result<bool> RenewLock(std::string_view name, const Holding& holding, std::string_view owner,
                           Micros lease) override;
    Result<bool> ReleaseLock(std::string_view name, const Holding& holding, std::string_view owner) override;

    /// Commands sent so far, to all servers (for tests and the benchmark).
    std::uint64_t commands() const;

  protected:
    explicit RedisQuorumStore(std::unique_ptr<impl::RedisQuorum> quorum);
    std::unique_ptr<impl::RedisQuorum> quorum_;
};

/// One Redis server. Fenced: each acquisition of a name gets the next value of the name's
/// counter (1, 2, ...), strictly increasing for as long as the server keeps its data (a restart
/// without persistence restarts the counters - and forgets every held lock). Thread-safe: one
/// connection, one command at a time.
class RedisLockStore final : public RedisQuorumStore {
  public:
    explicit RedisLockStore(RedisServerAddress server, const RedisOptions& options = {});

    /// The held key (owner, epoch, PTTL) and the epoch counter, read atomically with the server's
    /// TIME; a released or expired key shows the counter's epoch and no owner.
    Result<std::optional<LockRow>> InspectLock(std::string_view name) override;
    bool fenced() const override { return true; }
};

/// Redlock over N independent Redis servers (not replicas of each other): a lock is held when
/// a majority (N / 2 + 1) of the servers accepted it within its validity time
/// (lease - time spent acquiring - DriftAllowance(lease)). A failed acquisition is released on
/// every server that may have accepted it (also those that timed out); renew needs a majority
/// again; release goes to all. Not fenced: every epoch is 0 (see docs/locks.md for what Redlock
/// does not guarantee). Thread-safe: one connection per server, one command at a time on each.
///
/// Errors: kUnavailable when fewer than a majority of the servers answered (never a lock then).
class RedlockStore final : public RedisQuorumStore {
  public:
    /// Clock drift allowed for, as in the Redlock description: lease * 0.01 + 2 ms.
    static constexpr double kDriftFactor = 0.01;
    static constexpr Micros kDriftConstant = std::chrono::milliseconds(2);

    /// Throws std::invalid_argument with fewer than 3 servers or a server listed twice.
    explicit RedlockStore(std::vector<RedisServerAddress> servers, const RedisOptions& options = {});

    /// kUnimplemented: N servers may disagree, none is authoritative.
    Result<std::optional<LockRow>> InspectLock(std::string_view name) override;
    bool fenced() const override { return false; }
    Micros DriftAllowance(Micros lease) const override;

    std::size_t servers() const;
    std::size_t quorum() const;
};

}  // namespace sched::lock
