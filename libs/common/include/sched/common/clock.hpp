#pragma once

/// Clocks are injected so that time-dependent logic is tested without sleeping.

#include <atomic>
#include <chrono>
#include <mutex>

namespace sched {

/// Thread-safe source of the two kinds of time the scheduler uses: monotonic (`Steady`) for
/// deadlines and lease self-demotion, wall (`System`) for display only. Scheduling decisions use
/// the database clock (see sched/db), never `System`.
class Clock {
  public:
    virtual ~Clock() = default;
    virtual std::chrono::steady_clock::time_point Steady() const = 0;
    virtual std::chrono::system_clock::time_point System() const = 0;
};

/// The real clocks.
class SystemClock final : public Clock {
  public:
    std::chrono::steady_clock::time_point Steady() const override { return std::chrono::steady_clock::now(); }
    std::chrono::system_clock::time_point System() const override { return std::chrono::system_clock::now(); }
    /// A process-wide instance.
    static const SystemClock& Instance();
};

/// A clock that moves only when told. Both readings advance together. Thread-safe.
class FakeClock final : public Clock {
  public:
    FakeClock();
    std::chrono::steady_clock::time_point Steady() const override;
    std::chrono::system_clock::time_point System() const override;
    void Advance(std::chrono::microseconds d);
    /// Moves only the wall clock (a clock jump or skew), leaving the monotonic one alone.
    void JumpSystem(std::chrono::microseconds d);

  private:
    mutable std::mutex mu_;
    std::chrono::steady_clock::time_point steady_;
    std::chrono::system_clock::time_point system_;
};

}  // namespace sched
