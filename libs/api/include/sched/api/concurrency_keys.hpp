#pragma once

/// A concurrency key as the API answers it (schema ConcurrencyKey; docs/api.md "Concurrency keys").

#include <cstdint>
#include <string>

#include "sched/api/view.hpp"

namespace sched::api {

/// Schema ConcurrencyKey: a limit shared by the jobs that name it.
struct ConcurrencyKeyView {
    std::string name;
    std::int64_t max_running = 0;     ///< fires of its jobs dispatching or running at once, cluster-wide
    std::int64_t rate_starts = 0;     ///< at most this many starts per rate_window_ms; 0: no rate limit
    std::int64_t rate_window_ms = 0;  ///< 0 without a rate limit
    std::int64_t created_at = 0;
    std::int64_t updated_at = 0;

    SCHED_API_FIELDS(ConcurrencyKeyView, name, max_running, rate_starts, rate_window_ms, created_at, updated_at)
};

}  // namespace sched::api
