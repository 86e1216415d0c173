#pragma once

/// LockStore over the `scheduler_lock` table of a Database (MySQL/MariaDB or SQLite).
///
/// Every operation is one autocommit statement (Read: one SELECT; Insert: one insert-if-absent
/// (Dialect::InsertIfAbsent) plus the id lookup of the new row; the CAS operations: one UPDATE),
/// with the database clock (Dialect::NowUs) evaluated inside it. On SQLite several processes may
/// share the file: each write statement takes the database's write lock for its duration.
///
/// Timeouts are the Database's: for the master lease, open a separate small pool with
/// ElectionDbUrl (lease_elector.hpp) so that no statement can outlast the election margin.

#include <atomic>
#include <cstdint>
#include <memory>

#include "sched/db/database.hpp"
#include "sched/lock/lock_store.hpp"

namespace sched::lock {

/// Thread-safe.
class SqlLockStore final : public LockStore {
  public:
    explicit SqlLockStore(std::shared_ptr<db::Database> db);

    Result<std::optional<LockRow>> Read(std::string_view name) override;
    Result<std::optional<Holding>> Insert(std::string_view name, std::string_view owner, Micros lease) override;
    Result<bool> TakeOver(const LockRow& seen, std::string_view owner, Micros lease,
                          const ClockStepGuard& guard) override;
    Result<bool> Renew(std::int64_t id, std::string_view owner, std::int64_t epoch, Micros lease) override;
    Result<bool> Release(std::int64_t id, std::string_view owner, std::int64_t epoch) override;

    /// SQL statements sent so far (successful or not); for tests and the benchmark.
    std::uint64_t statements() const { return statements_.load(std::memory_order_relaxed); }
    db::Database& database() const { return *db_; }

  private:
    std::shared_ptr<db::Database> db_;
    std::atomic<std::uint64_t> statements_{0};
};

}  // namespace sched::lock
