#include "sched/lock/lock_store.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace sched::lock {

namespace {
constexpr std::string_view kLeaseLostPrefix = "lease lost";
}  // namespace

std::int64_t LockRow::ClockStepUs(const ClockStepGuard& guard) const {
    std::int64_t ahead = update_time_us - db_now_us - guard.tolerance.count();
    if (guard.max_lease_ahead.count() > 0) {
        ahead = std::max(ahead, lease_until_us - db_now_us - guard.max_lease_ahead.count());
    }
    return ahead;
}

Result<std::optional<Holding>> TryAcquireOnce(LockStore& store, std::string_view name, std::string_view owner,
                                              Micros lease, std::optional<LockRow>* seen, const ClockStepGuard& guard) {
    if (name.empty() || name.size() > kMaxLockNameLength) {
        return InvalidArgument("lock name must have 1.." + std::to_string(kMaxLockNameLength) + " characters, got " +
                               std::to_string(name.size()));
    }
    if (lease.count() <= 0) return InvalidArgument("lease must be positive");
    // Two passes at most: the second only when another node inserted the row between our read
    // and our insert, so a contended first use costs one extra read, never a loop.
    for (int pass = 0; pass < 2; ++pass) {
        auto row = store.Read(name);
        if (!row.ok()) return row.status();
        if (seen != nullptr) *seen = *row;
        if (!row->has_value()) {
            auto inserted = store.Insert(name, owner, lease);
            if (!inserted.ok()) return inserted.status();
            if (inserted->has_value()) return *inserted;
            continue;
        }
        const LockRow& current = **row;
        // Advisory pre-check on the database's own clock reading; TakeOver re-checks expiry
        // against the clock at the moment it runs, which is what decides.
        if (!current.Available(guard)) return std::optional<Holding>();
        auto taken = store.TakeOver(current, owner, lease, guard);
        if (!taken.ok()) return taken.status();
        if (!*taken) return std::optional<Holding>();  // lost the CAS: someone wrote the row first
        // Logged by the winner only, so one anomaly is one line however many nodes saw it.
        if (current.owner.has_value() && current.lease_until_us > current.db_now_us && current.ClockStepped(guard)) {
            spdlog::warn(
                "lock {}: clock anomaly: the lease of {} (epoch {}) was last written {:.3f} s and expires {:.3f} s "
                "ahead of the database clock, {:.3f} s more than allowed: the clock moved back; treated as "
                "expired and taken over by {} (epoch {})",
                current.name, *current.owner, current.epoch,
                static_cast<double>(current.update_time_us - current.db_now_us) / 1e6,
                static_cast<double>(current.lease_until_us - current.db_now_us) / 1e6,
                static_cast<double>(current.ClockStepUs(guard)) / 1e6, owner, current.epoch + 1);
        }
        return std::optional<Holding>(Holding{current.id, current.epoch + 1});
    }
    return std::optional<Holding>();
}

Result<std::optional<Holding>> LockStore::AcquireLock(std::string_view name, std::string_view owner, Micros lease,
                                                      std::optional<LockRow>* seen) {
    return TryAcquireOnce(*this, name, owner, lease, seen);
}

Result<bool> LockStore::RenewLock(std::string_view name, const Holding& holding, std::string_view owner, Micros lease) {
    (void)name;  // the row id names it
    return Renew(holding.id, owner, holding.epoch, lease);
}

Result<bool> LockStore::ReleaseLock(std::string_view name, const Holding& holding, std::string_view owner) {
    (void)name;
    return Release(holding.id, owner, holding.epoch);
}

Status LeaseLost(std::string_view detail) {
    return Aborted(std::string(kLeaseLostPrefix) + ": " + std::string(detail));
}

bool IsLeaseLost(const Status& status) {
    return status.code() == Code::kAborted && status.message().rfind(kLeaseLostPrefix, 0) == 0;
}

}  // namespace sched::lock
