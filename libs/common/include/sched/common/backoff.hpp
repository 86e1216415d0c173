#pragma once

/// Capped exponential backoff with jitter: the project's one retry-timing rule. Every retry
/// loop (lock waits, HTTP retries, claims, result delivery, alert delivery, fire retries) takes
/// its delays from here, with its own first delay, cap and jitter.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>

#include "sched/common/duration.hpp"

namespace sched {

/// How a delay is spread around its base value `d`.
enum class BackoffJitter {
    kNone,         ///< exactly d
    kSpread,       ///< d * U[0.5, 1.5), at least one tick (1 µs for Micros): waiters that collided once spread out
    kUpperHalf,    ///< U[d/2, d] in whole units of d's duration type: spread, never bunched at zero
    kQuarterMore,  ///< U[d, d + d/4] in whole milliseconds: never shorter than d (reconnects)
};

/// min(initial * 2^(attempt - 1), max) for attempt >= 1 (initial, capped, for attempt < 1).
/// Doubling stops at `max`, so no attempt count can overflow.
template <typename Duration>
Duration CappedExponential(Duration initial, int attempt, Duration max) {
    Duration d = initial;
    for (int i = 1; i < attempt && d < max; ++i) d = d > max / 2 ? max : d * 2;
    return std::min(d, max);
}

/// `base` spread by `jitter` with `rng`.
template <typename Duration>
Duration Jittered(Duration base, BackoffJitter jitter, std::mt19937_64& rng) {
    switch (jitter) {
        case BackoffJitter::kNone:
            return base;
        case BackoffJitter::kSpread: {
            std::uniform_real_distribution<double> factor(0.5, 1.5);
            const auto d =
                Duration(static_cast<typename Duration::rep>(static_cast<double>(base.count()) * factor(rng)));
            return std::max(d, Duration(1));
        }
        case BackoffJitter::kUpperHalf: {
            std::uniform_int_distribution<typename Duration::rep> pick(base.count() / 2, base.count());
            return Duration(pick(rng));
        }
        case BackoffJitter::kQuarterMore: {
            const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(base).count();
            std::uniform_int_distribution<std::int64_t> extra(0, ms / 4);
            return base + std::chrono::duration_cast<Duration>(std::chrono::milliseconds(extra(rng)));
        }
    }
    return base;
}

/// The delays of one retry loop: Next() returns `initial` (jittered), then twice that, and so on
/// up to `max` (raised to `initial` if smaller); Reset() starts again at `initial`. Not
/// thread-safe: one per loop. The jitter's random source is per thread.
class Backoff {
  public:
    Backoff(Micros initial, Micros max, BackoffJitter jitter = BackoffJitter::kNone)
        : initial_(initial), max_(std::max(initial, max)), next_(initial), jitter_(jitter) {}

    /// The next delay; the base then doubles (up to max).
    Micros Next();
    /// The base (un-jittered) delay the next Next() is drawn from.
    Micros base() const { return next_; }
    void Reset() { next_ = initial_; }

  private:
    Micros initial_;
    Micros max_;
    Micros next_;
    BackoffJitter jitter_;
};

}  // namespace sched
