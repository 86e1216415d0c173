#pragma once

/// Test support (target sched::lock_testing): an in-memory LockStore with the same contract as
/// SqlLockStore, whose "database clock" is a Clock's System() time, so lease logic can be tested
/// with a FakeClock and no sleeping.

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "sched/common/clock.hpp"
#include "sched/lock/lock_store.hpp"

namespace sched::lock::testing {

/// Thread-safe.
class FakeLockStore final : public LockStore {
  public:
    /// Called at the start of every operation with its name ("read", "insert", "takeover",
    /// "renew", "release"), before the store looks at its rows and without its lock held: the
    /// hook may advance the clock (a slow statement), call the store (a competitor's move) or
    /// return an error, which the operation then returns without touching any row.
    using Hook = std::function<Status(std::string_view op)>;

    explicit FakeLockStore(const Clock& db_clock) : clock_(db_clock) {}

    Result<std::optional<LockRow>> Read(std::string_view name) override;
    Result<std::optional<Holding>> Insert(std::string_view name, std::string_view owner, Micros lease) override;
    Result<bool> TakeOver(const LockRow& seen, std::string_view owner, Micros lease,
                          const ClockStepGuard& guard) override;
    /// Overwrites a row's times as a clock that later moved back would have left them.
    void SetTimes(std::string_view name, std::int64_t lease_until_us, std::int64_t update_time_us);
    Result<bool> Renew(std::int64_t id, std::string_view owner, std::int64_t epoch, Micros lease) override;
    Result<bool> Release(std::int64_t id, std::string_view owner, std::int64_t epoch) override;

    void SetHook(Hook hook);
    /// The row as stored (db_now_us = the clock now), for assertions.
    std::optional<LockRow> Peek(std::string_view name) const;
    /// Operations attempted so far.
    std::uint64_t operations() const;

  private:
    std::int64_t NowUs() const;
    Status RunHook(std::string_view op);
    LockRow* FindById(std::int64_t id);

    const Clock& clock_;
    mutable std::mutex mu_;
    Hook hook_;
    std::map<std::string, LockRow, std::less<>> rows_;
    std::int64_t next_id_ = 1;
    std::uint64_t operations_ = 0;
};

}  // namespace sched::lock::testing
