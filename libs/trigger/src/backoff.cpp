#include "sched/trigger/backoff.hpp"

#include <algorithm>

namespace sched::trigger {

std::int64_t RetryDelayMs(std::int64_t base_ms, int attempt, std::int64_t cap_ms, std::mt19937_64& rng) {
    base_ms = std::max<std::int64_t>(base_ms, 1);
    cap_ms = std::max(cap_ms, base_ms);
    std::int64_t d = base_ms;
    // Doubling stops at the cap, so no shift can overflow however large `attempt` is.
    for (int i = 1; i < attempt && d < cap_ms; ++i) d = std::min(d * 2, cap_ms);
    std::uniform_int_distribution<std::int64_t> jitter(d / 2, d);
    return jitter(rng);
}

}  // namespace sched::trigger
