#include "sched/trigger/slave.hpp"

namespace sched::trigger {

using namespace std::chrono_literals;

SlaveConfig SlaveConfig::FromYaml(const ConfigNode& node) {
    SlaveConfig c;
    c.enabled = node.Bool("enabled", c.enabled);
    c.capacity = static_cast<int>(node.Int("capacity", c.capacity, 1, 1'000'000));
    c.poll_interval = node.Duration("poll-interval", c.poll_interval, 10ms, std::chrono::minutes(1));
    c.dispatch_timeout = node.Duration("dispatch-timeout", c.dispatch_timeout, 10ms, std::chrono::minutes(1));
    c.executor_ttl = node.Duration("executor-ttl", c.executor_ttl, 100ms, std::chrono::hours(1));
    c.claim_ahead = node.Duration("claim-ahead", c.claim_ahead, Micros{0}, std::chrono::seconds(1));
    c.send_ahead = node.Bool("send-ahead", c.send_ahead);
    // A run's start_in_ms is at most protocol::kMaxStartInMs (10 s): claim-ahead (<= 1 s) plus
    // this must stay within it.
    c.burst_claim_ahead = node.Duration("burst-claim-ahead", c.burst_claim_ahead, Micros{0}, std::chrono::seconds(9));
    c.burst_claim_rate = static_cast<int>(node.Int("burst-claim-rate", c.burst_claim_rate, 1, 1'000'000));
    c.max_group = static_cast<int>(node.Int("max-group", c.max_group, 1, 10'000));
    c.group_fill = static_cast<int>(node.Int("group-fill", c.group_fill, 0, 10'000));
    // With claim-ahead (<= 1 s) a run's start_in_ms stays far within protocol::kMaxStartInMs.
    c.group_span = node.Duration("group-span", c.group_span, Micros{0}, std::chrono::seconds(1));
    c.record_window = node.Duration("record-window", c.record_window, Micros{0}, std::chrono::seconds(1));
    c.record_running_after =
        node.Duration("record-running-after", c.record_running_after, Micros{0}, std::chrono::seconds(10));
    c.max_calls_per_executor =
        static_cast<int>(node.Int("max-calls-per-executor", c.max_calls_per_executor, 1, 10'000));
    c.executor_refresh = node.Duration("executor-refresh", c.executor_refresh, 10ms, std::chrono::minutes(1));
    if (node.Has("executor-token")) {
        throw ConfigError(node.path().empty() ? "executor-token" : node.path() + ".executor-token",
                          "removed: slaves no longer send executors a token; they sign each call with the app's "
                          "signing key (docs/protocol.md). Delete the key; give services an executor token instead");
    }
    return c;
}

}  // namespace sched::trigger
