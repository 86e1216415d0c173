#pragma once

/// Retry timing for failed fires: sched::CappedExponential with kUpperHalf jitter, in the
/// milliseconds of a job's retry_backoff_ms.

#include <cstdint>
#include <random>

namespace sched::trigger {

/// The delay before retry `attempt` (1 = first retry) of a job whose base backoff is
/// `base_ms`: a uniformly random value in [d/2, d] where d = min(base_ms * 2^(attempt-1), cap_ms).
/// The lower half-bound keeps retries from bunching at zero; the jitter spreads a thundering
/// herd of jobs that failed together (one executor down). Thread-safe if `rng` is not shared.
std::int64_t RetryDelayMs(std::int64_t base_ms, int attempt, std::int64_t cap_ms, std::mt19937_64& rng);

}  // namespace sched::trigger
