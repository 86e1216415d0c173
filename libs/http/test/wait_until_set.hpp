#pragma once

// For handlers that must not answer before a test lets them.

#include <atomic>
#include <chrono>

#include "sched/common/net.hpp"

namespace sched::http {

// Suspends (without blocking the thread) until `flag` is set.
inline net::awaitable<void> WaitUntilSet(const std::atomic<bool>& flag) {
    net::steady_timer timer(co_await net::this_coro::executor);
    while (!flag.load()) {
        timer.expires_after(std::chrono::milliseconds(5));
        co_await timer.async_wait(net::use_awaitable);
    }
}

}  // namespace sched::http
