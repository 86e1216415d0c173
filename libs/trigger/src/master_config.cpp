#include "sched/trigger/master_config.hpp"

#include <algorithm>

#include "sched/store/shard.hpp"

namespace sched::trigger {

MasterConfig MasterConfig::FromYaml(const ConfigNode& node) {
    MasterConfig c;
    using std::chrono::milliseconds;
    using std::chrono::seconds;
    c.shards = static_cast<int>(node.Int("shards", c.shards, 1, store::kMaxShards));
    c.scan_interval = node.Duration("scan-interval", c.scan_interval, milliseconds(1), seconds(10));
    c.scan_min_interval = node.Duration("scan-min-interval", c.scan_min_interval, Micros{0}, seconds(10));
    c.scan_idle_interval =
        node.Duration("scan-idle-interval", c.scan_idle_interval, Micros{0}, std::chrono::minutes(1));
    c.probe_interval = node.Duration("probe-interval", c.probe_interval, milliseconds(1), std::chrono::minutes(1));
    c.lookahead = node.Duration("lookahead", c.lookahead, Micros{0}, std::chrono::minutes(5));
    c.lookahead_refill =
        node.Duration("lookahead-refill", std::min(c.lookahead_refill, c.lookahead), Micros{0}, c.lookahead);
    c.burst_lookahead = node.Duration("burst-lookahead", c.burst_lookahead, Micros{0}, std::chrono::minutes(10));
    c.burst_plan_rate = static_cast<int>(node.Int("burst-plan-rate", c.burst_plan_rate, 1, 1000000));
    c.batch = static_cast<int>(node.Int("batch", c.batch, 1, 100000));
    c.misfire_threshold = node.Duration("misfire-threshold", c.misfire_threshold, Micros{0}, std::chrono::hours(24));
    c.fire_all_cap = static_cast<int>(node.Int("fire-all-cap", c.fire_all_cap, 1, 10000));
    c.max_fires_per_job = static_cast<int>(node.Int("max-fires-per-job", c.max_fires_per_job, 1, 100000));
    c.node_ttl = node.Duration("node-ttl", c.node_ttl, milliseconds(100), std::chrono::minutes(10));
    c.executor_ttl = node.Duration("executor-ttl", c.executor_ttl, milliseconds(100), std::chrono::hours(1));
    c.retry_backoff_cap =
        node.Duration("retry-backoff-cap", c.retry_backoff_cap, milliseconds(1), std::chrono::hours(24));
    c.running_sweep = node.Duration("running-sweep", c.running_sweep, milliseconds(100), std::chrono::hours(1));
    c.history_retention =
        node.Duration("history-retention", c.history_retention, seconds(1), std::chrono::hours(24 * 3650));
    c.history_max_per_job = static_cast<int>(node.Int("history-max-per-job", c.history_max_per_job, 1, 10000000));
    c.purge_interval = node.Duration("purge-interval", c.purge_interval, milliseconds(100), std::chrono::hours(1));
    c.purge_batch = static_cast<int>(node.Int("purge-batch", c.purge_batch, 1, 10000));
    c.alert_interval = node.Duration("alert-interval", c.alert_interval, milliseconds(100), std::chrono::hours(1));
    c.alert_batch = static_cast<int>(node.Int("alert-batch", c.alert_batch, 1, 10000));
    c.alert_lookback = node.Duration("alert-lookback", c.alert_lookback, Micros{0}, std::chrono::hours(24));
    c.alert_settle = node.Duration("alert-settle", c.alert_settle, Micros{0}, std::chrono::minutes(10));
    c.alert_timeout = node.Duration("alert-timeout", c.alert_timeout, milliseconds(100), seconds(60));
    c.alert_connect_timeout =
        node.Duration("alert-connect-timeout", c.alert_connect_timeout, milliseconds(10), seconds(60));
    c.alert_first_byte_timeout =
        node.Duration("alert-first-byte-timeout", c.alert_first_byte_timeout, milliseconds(10), seconds(60));
    c.alert_body_limit = static_cast<std::size_t>(
        node.Int("alert-body-limit", static_cast<std::int64_t>(c.alert_body_limit), 0, std::int64_t{1} << 20));
    c.alert_concurrency = static_cast<int>(node.Int("alert-concurrency", c.alert_concurrency, 1, 1000));
    c.alert_receiver_concurrency =
        static_cast<int>(node.Int("alert-receiver-concurrency", c.alert_receiver_concurrency, 1, c.alert_concurrency));
    c.alert_addresses = http::AddressPolicy::FromYaml(node.Child("alert-addresses"));
    c.alert_max_attempts = static_cast<int>(node.Int("alert-max-attempts", c.alert_max_attempts, 1, 100));
    c.alert_backoff = node.Duration("alert-backoff", c.alert_backoff, milliseconds(10), std::chrono::hours(1));
    c.alert_backoff_max =
        node.Duration("alert-backoff-max", c.alert_backoff_max, c.alert_backoff, std::chrono::hours(24));
    c.cluster_url = node.String("cluster-url", c.cluster_url);
    if (c.cluster_url.size() > 2048) throw ConfigError("scheduler.cluster-url", "at most 2048 characters");
    return c;
}

}  // namespace sched::trigger
