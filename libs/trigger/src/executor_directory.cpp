#include "sched/trigger/executor_directory.hpp"

#include <algorithm>
#include <deque>
#include <mutex>

#include <spdlog/spdlog.h>

#include "sched/common/on_pool.hpp"

namespace sched::trigger {

std::vector<std::string> Serving(const Registry& registry, const std::string& app, const std::string& handler) {
    std::vector<std::string> addresses;
    if (auto it = registry.find(app); it != registry.end()) {
        for (const auto& e : it->second) {
            if (std::find(e.handlers.begin(), e.handlers.end(), handler) != e.handlers.end()) {
                addresses.push_back(e.address);
            }
        }
    }
    return addresses;
}

// Shared with what the directory posts to its strand, so a post still pending when the
// directory goes touches only this.
struct ExecutorDirectory::State {
    // Only on the strand: the registry and the call slots.
    std::shared_ptr<const Registry> registry;
    std::chrono::steady_clock::time_point registry_at{};
    struct Waiter {
        explicit Waiter(net::strand<net::any_io_executor>& s) : timer(s) {}
        net::steady_timer timer;
        bool granted = false;
    };
    struct Calls {
        int open = 0;
        std::deque<std::shared_ptr<Waiter>> waiters;
    };
    std::map<std::string, Calls> calls;

    std::mutex mu;  // guards the refusals
    std::map<std::string, std::chrono::steady_clock::time_point> no_runs;
    std::map<std::string, std::chrono::steady_clock::time_point> no_ahead;
};

ExecutorDirectory::ExecutorDirectory(const net::any_io_executor& io, net::thread_pool& db_pool, ReadLive read_live,
                                     ExecutorDirectoryConfig config, std::string log_name)
    : strand_(net::make_strand(io)),
      db_pool_(db_pool),
      read_live_(std::move(read_live)),
      config_(config),
      log_name_(std::move(log_name)),
      state_(std::make_shared<State>()) {}

// Runs on the strand: on an error the old copy stays, and is logged.
net::awaitable<void> ExecutorDirectory::Read() {
    auto state = state_;
    const auto read_at = std::chrono::steady_clock::now();
    auto read = read_live_;
    auto live = co_await OnPool(db_pool_, read);
    if (live.ok()) {
        auto registry = std::make_shared<Registry>();
        for (auto& e : *live) (*registry)[e.app].push_back(std::move(e));
        state->registry = std::move(registry);
        state->registry_at = read_at;
        co_return;
    }
    spdlog::warn("slave {}: cannot read the executor registry (using the copy of {} ms ago): {}", log_name_,
                 std::chrono::duration_cast<std::chrono::milliseconds>(read_at - state->registry_at).count(),
                 live.status().ToString());
    if (!state->registry) state->registry = std::make_shared<Registry>();
}

// The registry changes every few seconds (heartbeats), not every fire: one read per
// executor-refresh, and again when a fire's app has no instance in a copy read before this
// claim began (a service that just registered).
net::awaitable<std::shared_ptr<const Registry>> ExecutorDirectory::ForClaim(
    std::chrono::steady_clock::time_point claim_started, std::vector<std::string> apps) {
    auto on_strand = [this, claim_started,
                      apps = std::move(apps)]() -> net::awaitable<std::shared_ptr<const Registry>> {
        auto state = state_;
        bool refresh = !state->registry || std::chrono::steady_clock::now() - state->registry_at > config_.refresh;
        if (!refresh && state->registry_at < claim_started) {
            refresh = std::any_of(apps.begin(), apps.end(),
                                  [&state](const std::string& app) { return !state->registry->contains(app); });
        }
        if (refresh) co_await Read();
        co_return state->registry;
    };
    co_return co_await net::co_spawn(strand_, on_strand, net::use_awaitable);
}

net::awaitable<std::vector<std::string>> ExecutorDirectory::LiveCandidates(std::string app, std::string handler,
                                                                           Micros max_age) {
    auto on_strand = [this, app = std::move(app), handler = std::move(handler),
                      max_age]() -> net::awaitable<std::vector<std::string>> {
        auto state = state_;
        if (!state->registry || std::chrono::steady_clock::now() - state->registry_at > max_age) co_await Read();
        co_return Serving(*state->registry, app, handler);
    };
    co_return co_await net::co_spawn(strand_, on_strand, net::use_awaitable);
}

net::awaitable<bool> ExecutorDirectory::AcquireCall(std::string address) {
    auto on_strand = [this, address = std::move(address)]() -> net::awaitable<bool> {
        auto state = state_;
        auto& calls = state->calls[address];
        if (calls.open < config_.max_calls_per_executor) {
            ++calls.open;
            co_return true;
        }
        auto waiter = std::make_shared<State::Waiter>(strand_);
        waiter->timer.expires_after(config_.call_wait);
        calls.waiters.push_back(waiter);
        try {
            co_await waiter->timer.async_wait(net::use_awaitable);
        } catch (const boost::system::system_error&) {
            // Cancelled by ReleaseCall, which handed over its slot.
        }
        if (waiter->granted) co_return true;
        auto& q = state->calls[address].waiters;
        q.erase(std::remove(q.begin(), q.end(), waiter), q.end());
        co_return false;
    };
    co_return co_await net::co_spawn(strand_, on_strand, net::use_awaitable);
}

void ExecutorDirectory::ReleaseCall(const std::string& address) {
    net::post(strand_, [state = state_, address] {
        auto& calls = state->calls[address];
        if (!calls.waiters.empty()) {
            auto next = calls.waiters.front();
            calls.waiters.pop_front();
            next->granted = true;  // the slot passes to it; `open` is unchanged
            next->timer.cancel();
            return;
        }
        --calls.open;
    });
}

bool ExecutorDirectory::RefusesBatch(const std::string& address, BatchRoute route) {
    std::lock_guard lock(state_->mu);
    auto& refused = route == BatchRoute::kRunsAhead ? state_->no_ahead : state_->no_runs;
    auto it = refused.find(address);
    if (it == refused.end()) return false;
    if (std::chrono::steady_clock::now() < it->second) return true;
    refused.erase(it);
    return false;
}

void ExecutorDirectory::RefuseBatch(const std::string& address, BatchRoute route) {
    std::lock_guard lock(state_->mu);
    (route == BatchRoute::kRunsAhead ? state_->no_ahead : state_->no_runs)[address] =
        std::chrono::steady_clock::now() + config_.batch_refusal;
}

}  // namespace sched::trigger
