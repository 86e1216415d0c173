#pragma once

// Running blocking work (soci) on the DB thread pool from a coroutine on an I/O strand.

#include <optional>
#include <type_traits>
#include <utility>

#include "sched/common/net.hpp"

namespace sched::web::impl {

/// Runs fn() on `pool` and resumes the caller with its result. Exceptions propagate to the caller.
/// Callers: pass `fn` as a named local, never as a lambda written inside the co_await (see below).
template <typename F>
net::awaitable<std::invoke_result_t<F>> OnPool(net::thread_pool& pool, F fn) {
    using R = std::invoke_result_t<F>;
    // co_spawn needs a default-constructible result; Result<T> and Status-like types may not be.
    // The task is a named local, not a temporary inside the co_await: g++ 12 destroys such
    // temporaries twice, which corrupts anything they own (shared_ptr, strings).
    auto task = [fn = std::move(fn)]() mutable -> net::awaitable<std::optional<R>> {
        co_return fn();
    };
    auto out = co_await net::co_spawn(pool, task, net::use_awaitable);
    co_return std::move(*out);
}

}  // namespace sched::web::impl
