#pragma once

// Runs blocking work (soci) on a thread pool from a coroutine and resumes with its result, so
// the I/O threads never block on the database (STYLE "Async").

#include <optional>
#include <type_traits>

#include "sched/common/net.hpp"

namespace sched::trigger::impl {

template <typename F>
net::awaitable<std::invoke_result_t<F>> OnPool(net::thread_pool& pool, F fn) {
    using R = std::invoke_result_t<F>;
    if constexpr (std::is_void_v<R>) {
        co_await net::co_spawn(
            pool,
            [fn = std::move(fn)]() mutable -> net::awaitable<void> {
                fn();
                co_return;
            },
            net::use_awaitable);
    } else {
        // co_spawn needs a default-constructible result; Result<T> is not, hence the optional.
        auto out = co_await net::co_spawn(
            pool, [fn = std::move(fn)]() mutable -> net::awaitable<std::optional<R>> { co_return fn(); },
            net::use_awaitable);
        co_return std::move(*out);
    }
}

}  // namespace sched::trigger::impl
