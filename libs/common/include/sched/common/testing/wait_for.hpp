#pragma once

/// Test toolbox (target sched::common_testing: the tests and apps/scheduler-bench, never
/// installed): bounded polling, the one way tests wait for something another thread or process
/// does (never a fixed sleep that hopes the thing happened).

#include <chrono>
#include <functional>

namespace sched::testing {

/// Polls `condition` every `interval` until it holds or `timeout` passes; returns its last value
/// (evaluated once more at the deadline). Process tests that poll over HTTP pass a longer
/// interval so the polling does not load the process under test.
bool WaitFor(const std::function<bool()>& condition,
             std::chrono::steady_clock::duration timeout = std::chrono::seconds(10),
             std::chrono::steady_clock::duration interval = std::chrono::milliseconds(5));

}  // namespace sched::testing
