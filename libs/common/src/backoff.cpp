#include "sched/common/backoff.hpp"

namespace sched {

Micros Backoff::Next() {
    // Per thread: retry loops run on many threads and must not contend on (or share) one engine.
    thread_local std::mt19937_64 rng{std::random_device{}()};
    const Micros d = Jittered(next_, jitter_, rng);
    next_ = CappedExponential(next_, 2, max_);
    return d;
}

}  // namespace sched
