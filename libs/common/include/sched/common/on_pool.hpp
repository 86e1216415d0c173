#pragma once

/// Running blocking work (soci) on a thread pool from a coroutine, resuming the caller with its
/// result, so that I/O threads never block on the database. The one copy used
/// by the web module, the trigger node and the dispatch library.
///
///     auto work = [&] { return store::JobRepository(db).Find(id); };
///     auto job = co_await OnPool(db_pool, work);
///
/// Exceptions propagate to the caller. Pass `fn` as a named local, never as a lambda written
/// inside the co_await: g++ 12 destroys such temporaries twice (docs/architecture/build.md).

#include <optional>
#include <type_traits>
#include <utility>

#include "sched/common/net.hpp"

namespace sched {

template <typename F>
net::awaitable<std::invoke_result_t<F>> OnPool(net::thread_pool& pool, F fn) {
    using R = std::invoke_result_t<F>;
    // The task is a named local, not a temporary inside the co_await (the g++ 12 bug above).
    if constexpr (std::is_void_v<R>) {
        auto task = [fn = std::move(fn)]() mutable -> net::awaitable<void> {
            fn();
            co_return;
        };
        co_await net::co_spawn(pool, task, net::use_awaitable);
    } else {
        // co_spawn needs a default-constructible result; Result<T> and Status-like types may
        // not be, hence the optional.
        auto task = [fn = std::move(fn)]() mutable -> net::awaitable<std::optional<R>> {
            co_return fn();
        };
        auto out = co_await net::co_spawn(pool, task, net::use_awaitable);
        co_return std::move(*out);
    }
}

}  // namespace sched
