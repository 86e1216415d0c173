#include "sched/common/testing/wait_for.hpp"

#include <thread>

namespace sched::testing {

bool WaitFor(const std::function<bool()>& condition, std::chrono::steady_clock::duration timeout,
             std::chrono::steady_clock::duration interval) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (condition()) return true;
        if (std::chrono::steady_clock::now() >= end) return condition();
        std::this_thread::sleep_for(interval);
    }
}

}  // namespace sched::testing
