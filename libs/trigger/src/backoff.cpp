#include "sched/trigger/backoff.hpp"

#include <algorithm>
#include <chrono>

#include "sched/common/backoff.hpp"

namespace sched::trigger {

std::int64_t RetryDelayMs(std::int64_t base_ms, int attempt, std::int64_t cap_ms, std::mt19937_64& rng) {
    using std::chrono::milliseconds;
    base_ms = std::max<std::int64_t>(base_ms, 1);
    cap_ms = std::max(cap_ms, base_ms);
    const milliseconds d = CappedExponential(milliseconds(base_ms), attempt, milliseconds(cap_ms));
    return Jittered(d, BackoffJitter::kUpperHalf, rng).count();
}

}  // namespace sched::trigger
