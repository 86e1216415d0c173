#include "sched/lock/testing/fake_lock_store.hpp"

namespace sched::lock::testing {

std::int64_t FakeLockStore::NowUs() const {
    return std::chrono::duration_cast<std::chrono::microseconds>(clock_.System().time_since_epoch()).count();
}

void FakeLockStore::SetHook(Hook hook) {
    std::lock_guard lock(mu_);
    hook_ = std::move(hook);
}

Status FakeLockStore::RunHook(std::string_view op) {
    Hook hook;
    {
        std::lock_guard lock(mu_);
        ++operations_;
        hook = hook_;
    }
    return hook ? hook(op) : Status::Ok();
}

std::uint64_t FakeLockStore::operations() const {
    std::lock_guard lock(mu_);
    return operations_;
}

std::optional<LockRow> FakeLockStore::Peek(std::string_view name) const {
    std::lock_guard lock(mu_);
    auto it = rows_.find(name);
    if (it == rows_.end()) return std::nullopt;
    LockRow row = it->second;
    row.db_now_us = NowUs();
    return row;
}

LockRow* FakeLockStore::FindById(std::int64_t id) {
    for (auto& [name, row] : rows_) {
        if (row.id == id) return &row;
    }
    return nullptr;
}

Result<std::optional<LockRow>> FakeLockStore::Read(std::string_view name) {
    if (Status s = RunHook("read"); !s.ok()) return s;
    return Peek(name);
}

Result<std::optional<Holding>> FakeLockStore::Insert(std::string_view name, std::string_view owner, Micros lease) {
    if (Status s = RunHook("insert"); !s.ok()) return s;
    std::lock_guard lock(mu_);
    if (rows_.find(name) != rows_.end()) return std::optional<Holding>();
    const std::int64_t now = NowUs();
    LockRow row;
    row.id = next_id_++;
    row.name = std::string(name);
    row.owner = std::string(owner);
    row.epoch = 1;
    row.version = 1;
    row.lease_until_us = now + lease.count();
    row.update_time_us = now;
    row.held_since_us = now;
    rows_.emplace(row.name, row);
    return std::optional<Holding>(Holding{row.id, 1});
}

void FakeLockStore::SetTimes(std::string_view name, std::int64_t lease_until_us, std::int64_t update_time_us) {
    std::lock_guard lock(mu_);
    auto it = rows_.find(name);
    if (it == rows_.end()) return;
    it->second.lease_until_us = lease_until_us;
    it->second.update_time_us = update_time_us;
    ++it->second.version;
}

Result<bool> FakeLockStore::TakeOver(const LockRow& seen, std::string_view owner, Micros lease,
                                     const ClockStepGuard& guard) {
    if (Status s = RunHook("takeover"); !s.ok()) return s;
    std::lock_guard lock(mu_);
    LockRow* row = FindById(seen.id);
    const std::int64_t now = NowUs();
    if (row == nullptr || row->version != seen.version) return false;
    LockRow current = *row;
    current.db_now_us = now;
    if (!current.Available(guard)) return false;
    row->owner = std::string(owner);
    ++row->epoch;
    ++row->version;
    row->lease_until_us = now + lease.count();
    row->update_time_us = now;
    row->held_since_us = now;
    return true;
}

Result<bool> FakeLockStore::Renew(std::int64_t id, std::string_view owner, std::int64_t epoch, Micros lease) {
    if (Status s = RunHook("renew"); !s.ok()) return s;
    std::lock_guard lock(mu_);
    LockRow* row = FindById(id);
    const std::int64_t now = NowUs();
    if (row == nullptr || row->owner != owner || row->epoch != epoch || row->lease_until_us <= now) return false;
    ++row->version;
    row->lease_until_us = now + lease.count();
    row->update_time_us = now;
    return true;
}

Result<bool> FakeLockStore::Release(std::int64_t id, std::string_view owner, std::int64_t epoch) {
    if (Status s = RunHook("release"); !s.ok()) return s;
    std::lock_guard lock(mu_);
    LockRow* row = FindById(id);
    const std::int64_t now = NowUs();
    if (row == nullptr || row->owner != owner || row->epoch != epoch) return false;
    row->owner.reset();
    ++row->epoch;
    ++row->version;
    row->lease_until_us = now;
    row->update_time_us = now;
    return true;
}

}  // namespace sched::lock::testing
