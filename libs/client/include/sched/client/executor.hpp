#pragma once

/// The client SDK: embed an Executor in a business service to run its job handlers.
///
///     auto options = sched::client::ExecutorOptions::FromYaml(config.Child("executor"));
///     sched::client::Executor executor(options);
///     executor.Handle("send-report", SendReport);   // Status SendReport(JobContext&)
///     executor.Start();                              // binds the port, starts heartbeats
///     ...                                            // until SIGTERM
///     executor.Stop();                               // finishes runs, delivers results, deregisters
///
/// What it does (docs/protocol.md):
/// - serves `POST /v1/run` (202 accepted; 404 unknown handler; 409 busy by block strategy or
///   stale epoch; 429 out of capacity; 401 not signed by the cluster; 400 naming the bad field;
///   503 while stopping) and its batch form `POST /v1/runs` (one answer per run, each as
///   /v1/run would answer it; sched/protocol/run_batch.hpp), `POST /v1/kill`, `GET /v1/beat`, `POST /v1/idle-beat`,
///   `GET /v1/log`, and with `metrics: true` an unsigned `GET /metrics` (Prometheus; docs/client-sdk.md);
/// - heartbeats `POST /api/v1/registry/heartbeat {app, address, handlers, capacity, running}`
///   to the web endpoints (failing over between them) and deregisters on Stop();
/// - admits runs on `io-threads` threads and runs handlers on `worker-threads` threads, per job
///   by its block strategy (serial, discard-later, cover-early), cancelling cooperatively on
///   kill, timeout and shutdown;
/// - ignores a duplicate (fire_id, attempt) (answering 202 again: the dispatch is idempotent)
///   and refuses a run whose epoch is older than the newest it has seen (fencing a stale
///   master);
/// - reports each result `{fire_id, attempt, epoch, status, code, message, started_ms,
///   finished_ms}` (status succeeded | failed | timeout | killed; code the canonical code name,
///   e.g. "ok", "internal") in batches to `POST /api/v1/callback`; while no web endpoint
///   answers, results are appended to a spool file and delivered later, once per
///   (fire_id, attempt), also after a restart;
/// - takes distributed locks for the service (Lock(), lock.hpp) through the same endpoints.
///
/// Calls from the nodes carry no token: each is signed with the app's signing key (HMAC-SHA256,
/// sched/protocol/request_signature.hpp, docs/protocol.md). The executor learns the keys (at
/// most a few: current, next or previous) and the cluster clock from each heartbeat answer, and
/// checks every incoming request's signature, key id and timestamp (within `signature-window`
/// of the cluster clock, so its own clock may be off) before anything else: 401 otherwise, and
/// 401 until the first heartbeat was answered. Its `token` (an executor token) goes only on its
/// own calls to the web endpoints (registry, callbacks, locks).

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sched/client/job_context.hpp"
#include "sched/client/lock.hpp"
#include "sched/common/config.hpp"
#include "sched/common/metrics.hpp"
#include "sched/common/status.hpp"
#include "sched/http/server_options.hpp"
#include "sched/http/tls_options.hpp"
#include "sched/protocol/span_exporter_options.hpp"

namespace sched::client {

/// Configuration, from YAML or code. YAML keys (the section a service chooses, e.g.
/// `executor:`), with defaults:
///
///     app: ""                        # required: the application name jobs are routed to
///     advertised-address: ""         # host:port the scheduler calls; "" = the bound listen
///                                    #   address (a wildcard host becomes this machine's name)
///     web-endpoints: []              # required: web module base URLs ("http://web-1:8080");
///                                    #   tried in order, the last one that answered first
///     token: ""                      # required: an executor token for the SDK's own calls (registry,
///                                    #   callbacks, locks); never sent by nodes; SCHED_TOKEN overrides
///     signature-window: 30s          # how far a signed call's timestamp may be from the cluster clock
///     heartbeat-interval: 10s        # between heartbeats (retried after min(interval, 2s) on failure)
///     worker-threads: 8              # threads running handlers
///     io-threads: 2                  # threads serving the nodes' calls (admission of runs);
///                                    #   each connection is served on one, so the batches of
///                                    #   several nodes due at the same time are admitted at once
///     capacity: 64                   # accepted, unfinished runs (running + queued); more get 429
///     spool-dir: "data/client-spool" # undelivered results survive restarts here (one executor per dir)
///     callback-batch-size: 100       # results per callback request
///     callback-flush-interval: 100ms # how long a result may wait to share a batch
///     callback-max-backoff: 10s      # retry backoff cap while no web endpoint answers
///     web-timeout: 5s                # timeout of each call to a web endpoint
///     shutdown-grace: 30s            # on Stop(), running handlers get this long before cancellation
///     log-retained-fires: 1000       # fires whose log lines GET /v1/log keeps
///     log-max-lines: 1000            # lines kept per fire
///     log-tail-bytes: 65536          # the last bytes of each fire's log sent with its result
///                                    #   when its handler wrote a line, kept by the cluster
///                                    #   after this process forgot them
///                                    #   (0..131072; 0: none)
///     dedupe-window: 100000          # recent (fire_id, attempt) pairs remembered
///     metrics: false                 # serve GET /metrics (Prometheus text) on the SDK's port
///     metrics-token: ""              # when set, GET /metrics needs `Authorization: Bearer <it>`;
///                                    #   SCHED_METRICS_TOKEN overrides it
///     http:                          # the SDK's HTTP server: sched::http::ServerOptions keys,
///       listen: "0.0.0.0:9999"       #   with these two defaults changed
///       access-log: errors
///       tls: {}                      #   cert-file/key-file: serve the nodes over HTTPS (then
///                                    #   the cluster's http-client.tls.peer-scheme: https)
///     http-client:
///       tls: {}                      # https web-endpoints: ca-file, cert-file, key-file,
///                                    #   min-version (sched::http::ClientTlsOptions)
///     telemetry:                     # each run's span over OTLP/HTTP (JSON), child of the
///       otlp-endpoint: ""            #   traceparent the node sent; empty: off; the other keys
///                                    #   (service-name: <app>, batch-size, flush-interval,
///                                    #   queue-limit, retries, timeout) in
///                                    #   sched/protocol/span_exporter_options.hpp
struct ExecutorOptions {
    std::string app;
    std::string advertised_address;
    std::vector<std::string> web_endpoints;
    std::string token;
    std::chrono::microseconds heartbeat_interval = std::chrono::seconds(10);
    int worker_threads = 8;
    int io_threads = 2;
    int capacity = 64;
    std::filesystem::path spool_dir = "data/client-spool";
    int callback_batch_size = 100;
    std::chrono::microseconds callback_flush_interval = std::chrono::milliseconds(100);
    std::chrono::microseconds callback_max_backoff = std::chrono::seconds(10);
    std::chrono::microseconds web_timeout = std::chrono::seconds(5);
    std::chrono::microseconds shutdown_grace = std::chrono::seconds(30);
    int log_retained_fires = 1000;
    int log_max_lines = 1000;
    int log_tail_bytes = 64 * 1024;
    /// log-tail-bytes' largest value: half what the cluster stores (256 KiB), so that one result
    /// stays under the web module's 1 MiB body limit however JSON escapes its log.
    static constexpr int kMaxLogTailBytes = 128 * 1024;
    int dedupe_window = 100000;
    std::chrono::microseconds signature_window = std::chrono::seconds(30);
    bool metrics = false;
    std::string metrics_token;
    http::ServerOptions http = DefaultServerOptions();
    /// `http-client.tls`: calls to https:// web endpoints (registry, callbacks, locks).
    http::ClientTlsOptions web_tls;
    /// `telemetry`: the runs' spans (off unless otlp-endpoint is set); https endpoints use web_tls.
    protocol::SpanExporterOptions telemetry;

    /// The server defaults for an executor: listen 0.0.0.0:9999, access log for errors only.
    static http::ServerOptions DefaultServerOptions();

    /// Reads the keys above from `node`, applies SCHED_TOKEN, then Validate(). Throws
    /// ConfigError naming the key ("executor.token: required ...").
    static ExecutorOptions FromYaml(const ConfigNode& node);

    /// Checks required keys and ranges; `section` prefixes key names in errors. Throws ConfigError.
    void Validate(const std::string& section = "executor") const;
};

/// Counters since Start(). Fields are read one by one (not a consistent snapshot).
struct ExecutorStats {
    std::uint64_t accepted = 0;
    std::uint64_t duplicates = 0;
    std::uint64_t refused_stale_epoch = 0;
    std::uint64_t refused_busy = 0;
    std::uint64_t refused_capacity = 0;
    std::uint64_t succeeded = 0;
    std::uint64_t failed = 0;
    std::uint64_t timed_out = 0;
    std::uint64_t killed = 0;
    std::uint64_t results_delivered = 0;  ///< acknowledged by a web endpoint
    std::uint64_t results_spooled = 0;    ///< written to the spool file (some may be delivered since)
    std::uint64_t results_queued = 0;     ///< finished, in memory, neither delivered nor spooled yet
    std::uint64_t callback_failures = 0;  ///< result batches no web endpoint accepted (retried later)
    std::uint64_t spool_pending = 0;      ///< in the spool file, not yet delivered
    std::uint64_t in_flight = 0;          ///< accepted runs not finished (running + queued)
    std::uint64_t heartbeats_sent = 0;    ///< acknowledged heartbeats
    std::uint64_t heartbeats_failed = 0;  ///< heartbeats no endpoint acknowledged
    std::uint64_t refused_unsigned = 0;   ///< requests refused 401: not signed by the cluster (logged 1/s)
    std::uint64_t signing_keys = 0;       ///< signing keys held (from the last heartbeat answer)
    std::int64_t clock_offset_ms = 0;     ///< cluster clock minus this host's clock, as last measured
};

/// A job handler. Returns OK for success or an error Status (its message is reported). An
/// exception it throws is reported as a failure with the exception's message.
using Handler = std::function<Status(JobContext&)>;

namespace impl {
class Runtime;
}

/// Thread-safety: Handle() before Start(), from one thread. Start() once. Stop() and Stats()
/// from any thread. Handlers run concurrently on the worker threads.
class Executor {
  public:
    /// Throws ConfigError when `options` are invalid (see ExecutorOptions::Validate).
    explicit Executor(ExecutorOptions options);
    /// Stop()s if running.
    ~Executor();
    Executor(const Executor&) = delete;
    Executor& operator=(const Executor&) = delete;

    /// Registers `handler` under `name` ([A-Za-z0-9._-]+). Throws std::logic_error after
    /// Start(), for a duplicate or malformed name, or an empty handler.
    Executor& Handle(std::string name, Handler handler);

    /// Opens the spool, binds the HTTP port and starts heartbeats and callbacks. Throws
    /// std::logic_error without handlers or when called twice, std::runtime_error when the port
    /// cannot be bound or the spool directory cannot be used (e.g. another executor holds it).
    void Start();

    /// Graceful stop, blocking until done: refuse new runs (503), stop heartbeats, deregister,
    /// let running handlers finish for `shutdown-grace`, then cancel them (reported `killed`)
    /// and wait for them to return, deliver or spool every result, close the server.
    /// Idempotent. A handler that ignores cancellation delays Stop() until it returns.
    void Stop();

    /// Acquires the distributed lock `key` (1..128 characters of [A-Za-z0-9._:-]) for `lease`,
    /// waiting up to `wait` while another owner holds it, through the lock API of the web
    /// endpoints (lock.hpp). The guard's watchdog extends the lease every lease / 3 until the
    /// guard is destroyed or released. Errors: kInvalidArgument (key, lease), kAborted (still
    /// held by another owner after `wait`; the message names the holder's epoch),
    /// kUnavailable (no endpoint answered within web-timeout + wait), kResourceExhausted (the
    /// server has too many waiting acquires), kUnauthenticated / kPermissionDenied (token).
    /// Blocks the calling thread; works before Start() and after Stop(). Thread-safe.
    Result<LockGuard> Lock(std::string_view key, std::chrono::milliseconds lease,
                           std::chrono::milliseconds wait = std::chrono::milliseconds(0));

    /// The bound port (after Start()).
    std::uint16_t port() const;
    /// host:port the scheduler is told to call (after Start()).
    std::string address() const;
    ExecutorStats Stats() const;

    /// The executor's metrics registry: the `sched_client_*` series, process metrics, and
    /// whatever the service registers in it itself. `GET /metrics` serves it when the options
    /// say `metrics: true`; it is kept either way. Lives as long as the Executor.
    MetricsRegistry& metrics();

  private:
    std::unique_ptr<impl::Runtime> runtime_;
};

}  // namespace sched::client
