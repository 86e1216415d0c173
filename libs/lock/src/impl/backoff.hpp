#pragma once

#include <algorithm>
#include <chrono>
#include <random>

#include "sched/common/duration.hpp"

namespace sched::lock::impl {

/// Exponential back-off with multiplicative jitter in [0.5, 1.5): waiters that collided once
/// spread out instead of colliding again on the next round.
class Backoff {
  public:
    Backoff(Micros initial, Micros max) : initial_(initial), max_(std::max(initial, max)), next_(initial) {}

    Micros Next() {
        std::uniform_real_distribution<double> factor(0.5, 1.5);
        const auto d = Micros(static_cast<Micros::rep>(static_cast<double>(next_.count()) * factor(Rng())));
        next_ = std::min(next_ * 2, max_);
        return std::max(d, Micros(1));
    }
    void Reset() { next_ = initial_; }

  private:
    static std::mt19937_64& Rng() {
        thread_local std::mt19937_64 rng{std::random_device{}()};
        return rng;
    }

    Micros initial_;
    Micros max_;
    Micros next_;
};

}  // namespace sched::lock::impl
