#pragma once

// The executor's Prometheus series (docs/client-sdk.md "Metrics"), in the executor's own
// MetricsRegistry: what runs by handler and outcome, how long they took, what was refused, and
// how results and heartbeats reach the web endpoints. Counts the executor already keeps
// (ExecutorStats, the HTTP server's stats) are read at render time, never counted twice.

#include <functional>
#include <string>
#include <vector>

#include "sched/client/executor.hpp"
#include "sched/common/metrics.hpp"
#include "sched/http/server.hpp"

namespace sched::client::impl {

class ExecutorMetrics {
  public:
    /// Registers every series; each handler's runs and durations start at 0 for every outcome.
    /// `stats` and `server` are called at every render and must stay callable while the
    /// registry renders.
    ExecutorMetrics(MetricsRegistry& registry, const std::string& app, const std::vector<std::string>& handlers,
                    std::function<ExecutorStats()> stats, std::function<http::ServerStats()> server);

    /// A run of `handler` ended with `status` (succeeded, failed, timeout, killed), started
    /// or not. `seconds` is the handler's own time, negative for a run that never started.
    /// Thread-safe.
    void RunEnded(const std::string& handler, const std::string& status, double seconds);
    /// A run's handler started `seconds` after the run was handed to the workers. Thread-safe.
    void RunStarted(double seconds);

  private:
    Family<CounterChild>& runs_;
    Family<HistogramChild>& duration_;
    HistogramChild& start_delay_;
};

}  // namespace sched::client::impl
