#pragma once

/// The options of sched::protocol::SpanExporter (span_exporter.hpp), a plain struct so that the
/// option structs of other components (the trigger node's, the SDK's ExecutorOptions) hold it
/// without including Asio; installed with the SDK.
///
/// YAML (`telemetry:` of the trigger node, the standalone and the SDK's executor section):
///
///     otlp-endpoint: ""       # e.g. http://127.0.0.1:4318/v1/traces (https:// uses the
///                             # process's http-client.tls); empty: no spans are exported
///     service-name: ""        # resource attribute service.name; "": the app's name
///     batch-size: 512         # spans per post (1..10000)
///     flush-interval: 1s      # longest wait before queued spans are posted
///     queue-limit: 8192       # spans held at most; more are dropped and counted
///     retries: 3              # extra attempts of a failed post, then the batch is dropped
///     timeout: 5s             # bound of one post

#include <cstddef>
#include <string>

#include "sched/common/config.hpp"
#include "sched/common/duration.hpp"

namespace sched::protocol {

struct SpanExporterOptions {
    std::string endpoint;
    std::string service_name;
    std::size_t batch_size = 512;
    Micros flush_interval = std::chrono::seconds(1);
    std::size_t queue_limit = 8192;
    int retries = 3;
    Micros timeout = std::chrono::seconds(5);
    /// The first retry's delay (doubling, spread, up to 5 s); not a YAML key.
    Micros retry_backoff = std::chrono::milliseconds(200);

    bool enabled() const { return !endpoint.empty(); }

    /// Reads the keys above from `node` (a `telemetry:` section); `service_name` is the default
    /// of service-name. Throws ConfigError naming the key (a bad URL, a value out of range,
    /// batch-size above queue-limit).
    static SpanExporterOptions FromYaml(const ConfigNode& node, const std::string& service_name);
};

}  // namespace sched::protocol
