#include "sched/lock/distributed_lock.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "sched/common/backoff.hpp"
#include "sched/common/node_id.hpp"

namespace sched::lock {

namespace {

using SteadyTime = std::chrono::steady_clock::time_point;

constexpr std::string_view kLockPrefix = "lock:";

bool Retryable(const Status& s) {
    return s.code() == Code::kUnavailable || s.code() == Code::kDeadlineExceeded || s.code() == Code::kAborted;
}

// Sleeps up to `d` on the real clock; returns early when `cancel` is requested.
void SleepCancellable(Micros d, const std::stop_token& cancel) {
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock lock(mu);
    cv.wait_for(lock, cancel, d, [] { return false; });
}

}  // namespace

namespace impl {

struct GuardState {
    std::mutex mu;
    LockHandle handle;
    Micros lease{0};
    std::stop_token work;
    std::stop_source lost;
    bool released = false;
    bool lost_flag = false;
    bool watched = false;
    SteadyTime next_renew{};
};

class LockService {
  public:
    LockService(std::shared_ptr<KeyLockStore> store, std::string node_id, LockRetryPolicy retry, const Clock& clock)
        : store_(std::move(store)), node_id_(std::move(node_id)), retry_(retry), clock_(clock) {
        if (node_id_.empty()) node_id_ = MakeNodeId();
    }

    ~LockService() {
        if (watchdog_.joinable()) {
            watchdog_.request_stop();
            watchdog_.join();
        }
    }

    const std::string& node_id() const { return node_id_; }
    bool fenced() const { return store_->fenced(); }
    const Clock& clock() const { return clock_; }

    Result<std::optional<LockHandle>> TryLock(std::string_view key, Micros wait, Micros lease,
                                              const std::stop_token& cancel) {
        if (key.empty() || key.size() + kLockPrefix.size() > kMaxLockNameLength) {
            return InvalidArgument("lock key must have 1.." + std::to_string(kMaxLockNameLength - kLockPrefix.size()) +
                                   " characters, got " + std::to_string(key.size()));
        }
        if (lease.count() <= 0) return InvalidArgument("lease must be positive");
        const std::string name = std::string(kLockPrefix) + std::string(key);
        // Unique per acquisition, so two acquisitions in one process exclude each other and a
        // stale handle can never match a newer holding of the same process.
        const std::string owner = node_id_ + "#" + std::to_string(seq_.fetch_add(1) + 1);
        const bool forever = wait >= std::chrono::hours(24 * 365 * 100);
        const SteadyTime deadline = forever ? SteadyTime::max() : clock_.Steady() + wait;
        Backoff backoff(retry_.initial, retry_.max, BackoffJitter::kSpread);
        std::optional<Status> last_error;
        for (;;) {
            if (cancel.stop_requested()) return Cancelled("lock '" + std::string(key) + "': cancelled while waiting");
            const SteadyTime start = clock_.Steady();
            std::optional<LockRow> seen;
            auto acquired = store_->AcquireLock(name, owner, lease, &seen);
            if (acquired.ok()) {
                if (acquired->has_value()) {
                    return std::optional<LockHandle>(LockHandle{std::string(key), owner, (*acquired)->epoch,
                                                                (*acquired)->id, ValidUntil(start, lease)});
                }
                last_error.reset();
            } else {
                if (!Retryable(acquired.status())) return acquired.status();
                last_error = acquired.status();
            }
            const SteadyTime now = clock_.Steady();
            if (now >= deadline) {
                if (last_error) return *last_error;
                return std::optional<LockHandle>();
            }
            Micros sleep = backoff.Next();
            if (acquired.ok() && seen && !seen->Available()) {
                // No point sleeping past the moment the holder's lease ends (database clock).
                sleep = std::min(sleep, Micros(seen->lease_until_us - seen->db_now_us) + std::chrono::milliseconds(1));
            }
            if (!forever) sleep = std::min(sleep, std::chrono::duration_cast<Micros>(deadline - now));
            SleepCancellable(std::max(sleep, Micros(0)), cancel);
        }
    }

    Status Unlock(const LockHandle& h) {
        auto released = store_->ReleaseLock(NameOf(h), Holding{h.id, h.epoch}, h.owner);
        if (!released.ok()) return released.status();
        if (!*released) {
            return LeaseLost("lock '" + h.key + "' epoch " + std::to_string(h.epoch) + " is no longer held by " +
                             h.owner + " (expired and acquired by another)");
        }
        return Status::Ok();
    }

    Status Extend(LockHandle& h, Micros lease) {
        if (lease.count() <= 0) return InvalidArgument("lease must be positive");
        const SteadyTime start = clock_.Steady();
        auto renewed = store_->RenewLock(NameOf(h), Holding{h.id, h.epoch}, h.owner, lease);
        if (!renewed.ok()) return renewed.status();
        if (!*renewed) {
            return LeaseLost("lock '" + h.key + "' epoch " + std::to_string(h.epoch) + " expired or was taken over");
        }
        h.valid_until = ValidUntil(start, lease);
        return Status::Ok();
    }

    void Watch(const std::shared_ptr<GuardState>& state) {
        std::lock_guard lock(wd_mu_);
        watched_.push_back(state);
        if (!watchdog_.joinable())
            watchdog_ = std::jthread([this](const std::stop_token& stop) { WatchdogLoop(stop); });
        wd_cv_.notify_all();
    }

  private:
    static std::string NameOf(const LockHandle& h) { return std::string(kLockPrefix) + h.key; }

    // The local deadline of a holding that an attempt starting at `start` obtained: the backend's
    // lease ends no earlier (minus the clock drift the backend allows for, Redlock).
    SteadyTime ValidUntil(SteadyTime start, Micros lease) const {
        return start + lease - store_->DriftAllowance(lease);
    }

    void WatchdogLoop(const std::stop_token& stop) {
        while (!stop.stop_requested()) {
            std::vector<std::shared_ptr<GuardState>> due;
            SteadyTime wake = clock_.Steady() + std::chrono::seconds(1);
            {
                std::lock_guard lock(wd_mu_);
                const SteadyTime now = clock_.Steady();
                std::erase_if(watched_, [&](const std::weak_ptr<GuardState>& w) {
                    auto s = w.lock();
                    if (!s) return true;
                    std::lock_guard state_lock(s->mu);
                    if (!s->watched) return true;
                    if (s->next_renew <= now) {
                        due.push_back(s);
                    } else {
                        wake = std::min(wake, s->next_renew);
                    }
                    return false;
                });
            }
            for (const auto& s : due) RenewOne(*s);
            if (!due.empty()) continue;  // recompute the schedule with the new renew times
            std::unique_lock lock(wd_mu_);
            wd_cv_.wait_for(lock, stop, wake - clock_.Steady(), [] { return false; });
        }
    }

    void RenewOne(GuardState& s) {
        LockHandle handle;
        Micros lease{0};
        {
            std::lock_guard lock(s.mu);
            if (s.released || s.lost_flag) {
                s.watched = false;
                return;
            }
            if (s.work.stop_requested()) {
                // The work was cancelled: stop renewing and let the lock run out, so a job that
                // never gets to its unlock cannot hold the key forever.
                s.watched = false;
                return;
            }
            handle = s.handle;
            lease = s.lease;
        }
        const SteadyTime start = clock_.Steady();
        auto renewed = store_->RenewLock(NameOf(handle), Holding{handle.id, handle.epoch}, handle.owner, lease);
        const SteadyTime done = clock_.Steady();
        std::lock_guard lock(s.mu);
        if (s.released) {
            s.watched = false;
            return;
        }
        if (renewed.ok() && *renewed) {
            s.handle.valid_until = ValidUntil(start, lease);
            s.next_renew = start + lease / 3;
            return;
        }
        if (renewed.ok() || done >= s.handle.valid_until) {
            spdlog::warn("lock '{}' epoch {} lost: {}", handle.key, handle.epoch,
                         renewed.ok() ? "expired or taken over" : renewed.status().ToString());
            s.lost_flag = true;
            s.watched = false;
            s.lost.request_stop();
            return;
        }
        // Transient failure with lease left: try again soon, well before the lease runs out.
        s.next_renew = done + std::max<Micros>(lease / 10, std::chrono::milliseconds(10));
    }

    std::shared_ptr<KeyLockStore> store_;
    std::string node_id_;
    LockRetryPolicy retry_;
    const Clock& clock_;
    std::atomic<std::uint64_t> seq_{0};

    std::mutex wd_mu_;
    std::condition_variable_any wd_cv_;
    std::vector<std::weak_ptr<GuardState>> watched_;
    std::jthread watchdog_;  // last member: stopped and joined before the others go
};

}  // namespace impl

DistributedLock::DistributedLock(std::shared_ptr<KeyLockStore> store, std::string node_id, LockRetryPolicy retry,
                                 const Clock& clock)
    : service_(std::make_shared<impl::LockService>(std::move(store), std::move(node_id), retry, clock)) {}

DistributedLock::~DistributedLock() = default;

Result<std::optional<LockHandle>> DistributedLock::TryLock(std::string_view key, Micros wait, Micros lease,
                                                           const std::stop_token& cancel) {
    return service_->TryLock(key, wait, lease, cancel);
}

Result<LockHandle> DistributedLock::Lock(std::string_view key, Micros lease, const std::stop_token& cancel) {
    auto h = service_->TryLock(key, Micros::max(), lease, cancel);
    if (!h.ok()) return h.status();
    if (!h->has_value()) return Internal("lock '" + std::string(key) + "': wait ended without a result");
    return std::move(**h);
}

Status DistributedLock::Unlock(const LockHandle& handle) {
    return service_->Unlock(handle);
}

Status DistributedLock::Extend(LockHandle& handle, Micros lease) {
    return service_->Extend(handle, lease);
}

LockGuard DistributedLock::Guard(LockHandle handle, Micros lease, bool watchdog, std::stop_token work) {
    auto state = std::make_shared<impl::GuardState>();
    state->lease = lease;
    state->work = std::move(work);
    state->next_renew = handle.valid_until - lease + lease / 3;
    state->handle = std::move(handle);
    state->watched = watchdog && lease.count() > 0;
    if (state->watched) service_->Watch(state);
    return LockGuard(service_, std::move(state));
}

const std::string& DistributedLock::node_id() const {
    return service_->node_id();
}

bool DistributedLock::fenced() const {
    return service_->fenced();
}

LockGuard::LockGuard(std::shared_ptr<impl::LockService> service, std::shared_ptr<impl::GuardState> state)
    : service_(std::move(service)), state_(std::move(state)) {}

LockGuard::LockGuard(LockGuard&&) noexcept = default;

LockGuard& LockGuard::operator=(LockGuard&& other) noexcept {
    if (this != &other) {
        if (state_) (void)Unlock();
        service_ = std::move(other.service_);
        state_ = std::move(other.state_);
    }
    return *this;
}

LockGuard::~LockGuard() {
    if (!state_) return;
    if (Status s = Unlock(); !s.ok()) {
        spdlog::warn("lock '{}' epoch {}: unlock failed: {}", state_->handle.key, state_->handle.epoch, s.ToString());
    }
}

const std::string& LockGuard::key() const {
    return state_->handle.key;
}

std::int64_t LockGuard::epoch() const {
    return state_->handle.epoch;
}

LockHandle LockGuard::handle() const {
    std::lock_guard lock(state_->mu);
    return state_->handle;
}

bool LockGuard::Held() const {
    std::lock_guard lock(state_->mu);
    return !state_->released && !state_->lost_flag && service_->clock().Steady() < state_->handle.valid_until;
}

std::stop_token LockGuard::LostToken() const {
    return state_->lost.get_token();
}

Status LockGuard::Unlock() {
    LockHandle handle;
    {
        std::lock_guard lock(state_->mu);
        if (state_->released) return Status::Ok();
        state_->released = true;
        state_->watched = false;
        handle = state_->handle;
    }
    return service_->Unlock(handle);
}

}  // namespace sched::lock
