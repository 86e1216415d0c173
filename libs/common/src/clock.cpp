#include "sched/common/clock.hpp"

namespace sched {

const SystemClock& SystemClock::Instance() {
    static const SystemClock clock;
    return clock;
}

// Starts at fixed, recognisable instants so that test failures print the same numbers every run.
FakeClock::FakeClock()
    : steady_(std::chrono::steady_clock::time_point{} + std::chrono::hours(1)),
      system_(std::chrono::system_clock::time_point{} + std::chrono::seconds(1'700'000'000)) {}

std::chrono::steady_clock::time_point FakeClock::Steady() const {
    std::lock_guard lock(mu_);
    return steady_;
}

std::chrono::system_clock::time_point FakeClock::System() const {
    std::lock_guard lock(mu_);
    return system_;
}

void FakeClock::Advance(std::chrono::microseconds d) {
    std::lock_guard lock(mu_);
    steady_ += d;
    system_ += d;
}

void FakeClock::JumpSystem(std::chrono::microseconds d) {
    std::lock_guard lock(mu_);
    system_ += d;
}

}  // namespace sched
