#include "sched/client/executor.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <thread>

#include <spdlog/spdlog.h>

#include "impl/runtime.hpp"

namespace sched::client {
namespace impl {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr auto kStopPoll = milliseconds(10);

bool ValidHandlerName(const std::string& name) {
    if (name.empty() || name.size() > 128) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    });
}

}  // namespace

Runtime::Runtime(ExecutorOptions options)
    : options_(std::move(options)),
      strand_(net::make_strand(io_.get_executor())),
      registry_(static_cast<std::size_t>(options_.capacity), static_cast<std::size_t>(options_.dedupe_window)),
      logs_(static_cast<std::size_t>(options_.log_retained_fires), static_cast<std::size_t>(options_.log_max_lines),
            static_cast<std::size_t>(options_.log_tail_bytes)),
      outbox_(static_cast<std::size_t>(options_.callback_batch_size), kCallbackBatchBytes),
      heartbeat_timer_(strand_),
      callback_timer_(strand_) {
    options_.Validate();
    if (!options_.metrics_token.empty()) metrics_auth_ = http::BearerTokenAuth(options_.metrics_token);
    for (const auto& e : options_.web_endpoints) endpoints_.push_back(*http::Url::Parse(e));
}

Runtime::~Runtime() {
    Stop();
}

void Runtime::Handle(std::string name, Handler handler) {
    if (started_) throw std::logic_error("Executor::Handle(\"" + name + "\") after Start()");
    if (!ValidHandlerName(name)) throw std::logic_error("Executor::Handle: bad handler name \"" + name + "\"");
    if (!handler) throw std::logic_error("Executor::Handle(\"" + name + "\"): empty handler");
    if (!handlers_.emplace(name, std::move(handler)).second) {
        throw std::logic_error("Executor::Handle: handler \"" + name + "\" registered twice");
    }
}

std::vector<std::string> Runtime::HandlerNames() const {
    std::vector<std::string> names;
    for (const auto& [name, fn] : handlers_) names.push_back(name);
    return names;
}

void Runtime::Start() {
    if (started_) throw std::logic_error("Executor::Start() called twice");
    if (handlers_.empty()) throw std::logic_error("Executor::Start() without handlers: call Handle() first");
    spool_ = std::make_unique<ResultSpool>(options_.spool_dir);
    counters_.spool_pending = spool_->pending();
    metrics_ = std::make_unique<ExecutorMetrics>(
        metrics_registry_, options_.app, HandlerNames(), [this] { return Stats(); },
        [this] { return server_ ? server_->Stats() : http::ServerStats{}; });

    // Every route nodes call is verified before its handler runs; no bearer token is accepted.
    server_ = std::make_unique<http::Server>(io_.get_executor(), options_.http, Routes(),
                                             [this](const http::Request& req) { return VerifyRequest(req); });
    server_->Start();
    if (!options_.advertised_address.empty()) {
        address_ = options_.advertised_address;
    } else {
        const auto host = http::HostPort::Parse(options_.http.listen)->host;
        address_ = http::HostPort{host, server_->port()}.Reachable(http::LocalHostname()).ToString();
    }
    http::ClientOptions client_options;
    client_options.connect_timeout = std::min(options_.web_timeout, client_options.connect_timeout);
    client_options.user_agent = "sched-client/" + options_.app;
    client_options.tls = options_.web_tls;
    client_ = std::make_unique<http::HttpClient>(io_.get_executor(), client_options);
    if (options_.telemetry.enabled()) {
        spans_ = std::make_unique<protocol::SpanExporter>(io_.get_executor(), options_.telemetry, options_.web_tls);
        spans_->Start();
        const protocol::SpanExporter* spans = spans_.get();
        metrics_registry_.Observed(
            "sched_trace_spans_dropped_total",
            "Spans not exported: queue_full (pushed while the queue was full), export_failed (a batch dropped after "
            "its last retry).",
            MetricsRegistry::Kind::kCounter, {"reason"}, [spans] {
                const auto s = spans->Stats();
                return std::vector<ObservedSample>{{{"queue_full"}, static_cast<double>(s.dropped_queue_full)},
                                                   {{"export_failed"}, static_cast<double>(s.dropped_export_failed)}};
            });
    }
    workers_ = std::make_unique<net::thread_pool>(static_cast<std::size_t>(options_.worker_threads));

    started_ = true;
    accepting_ = true;
    work_.emplace(io_.get_executor());
    // More than one thread runs io_: the server serves each connection on its own strand, and
    // a node sends each due time's runs on its own connection, so the batches of several nodes
    // due at once are admitted side by side instead of one after another (three connections
    // of 333-run batches: ~36,000 runs/s on two threads, ~20,000 on one; docs/benchmarks.md).
    // The heartbeat and callback loops and the run timers keep `strand_`; the route handlers
    // touch only locked or atomic state.
    io_threads_.reserve(static_cast<std::size_t>(options_.io_threads));
    for (int i = 0; i < options_.io_threads; ++i) io_threads_.emplace_back([this] { io_.run(); });
    heartbeat_done_ = net::co_spawn(strand_, HeartbeatLoop(), net::use_future);
    callback_done_ = net::co_spawn(strand_, CallbackLoop(), net::use_future);
    spdlog::info("executor {}: serving {} handler(s) at {}, web endpoints: {}", options_.app, handlers_.size(),
                 address_, fmt::join(options_.web_endpoints, ", "));
}

void Runtime::Stop() {
    std::lock_guard lock(stop_mu_);
    if (!started_ || stopped_) return;
    stopped_ = true;
    spdlog::info("executor {}: stopping", options_.app);
    accepting_ = false;

    heartbeat_stop_ = true;
    net::post(strand_, [this] { heartbeat_timer_.cancel(); });
    heartbeat_done_.wait();
    if (!net::co_spawn(strand_, Deregister(), net::use_future).get()) {
        spdlog::warn("executor {}: no web endpoint acknowledged deregistration", options_.app);
    }

    const auto grace_end = Clock::now() + options_.shutdown_grace;
    while (registry_.InFlight() > 0 && Clock::now() < grace_end) std::this_thread::sleep_for(kStopPoll);
    if (registry_.InFlight() > 0) {
        spdlog::warn("executor {}: cancelling {} run(s) still in flight after the shutdown grace", options_.app,
                     registry_.InFlight());
        for (const auto& run : registry_.CancelAll(CancelReason::kShutdown)) {
            ReportNeverStarted(run, "executor shutting down");
        }
        auto next_warning = Clock::now() + std::chrono::seconds(5);
        while (registry_.InFlight() > 0) {
            if (Clock::now() >= next_warning) {
                spdlog::warn("executor {}: waiting for handlers that ignore cancellation (fires {})", options_.app,
                             fmt::join(registry_.RunningFires(), ", "));
                next_warning += std::chrono::seconds(5);
            }
            std::this_thread::sleep_for(kStopPoll);
        }
    }
    workers_->join();

    callback_stop_ = true;
    net::post(strand_, [this] { callback_timer_.cancel(); });
    callback_done_.wait();

    if (spans_) spans_->Stop();  // the last runs' spans, while the I/O threads run
    net::co_spawn(io_, server_->Shutdown(), net::use_future).get();
    client_->CloseIdle();
    work_.reset();
    io_.stop();
    for (auto& t : io_threads_) t.join();
    spool_.reset();
    spdlog::info("executor {}: stopped", options_.app);
}

Result<LockGuard> Runtime::Lock(std::string_view key, milliseconds lease, milliseconds wait) {
    std::shared_ptr<LockService> locks;
    {
        std::lock_guard lock(locks_mu_);
        // Its own I/O thread: locks work before Start() and after Stop(), and a guard may
        // outlive the executor.
        if (!locks_)
            locks_ = std::make_shared<LockService>(endpoints_, options_.token, options_.web_timeout, options_.app,
                                                   options_.web_tls);
        locks = locks_;
    }
    return locks->Lock(key, lease, wait);
}

ExecutorStats Runtime::Stats() const {
    ExecutorStats s;
    s.accepted = counters_.accepted;
    s.duplicates = counters_.duplicates;
    s.refused_stale_epoch = counters_.stale;
    s.refused_busy = counters_.busy;
    s.refused_capacity = counters_.capacity;
    s.succeeded = counters_.succeeded;
    s.failed = counters_.failed;
    s.timed_out = counters_.timed_out;
    s.killed = counters_.killed;
    s.results_delivered = counters_.delivered;
    s.results_spooled = counters_.spooled;
    s.spool_pending = counters_.spool_pending;
    s.in_flight = registry_.InFlight();
    s.heartbeats_sent = counters_.heartbeats_ok;
    s.heartbeats_failed = counters_.heartbeats_failed;
    s.callback_failures = counters_.callback_failures;
    s.results_queued = outbox_.size();
    s.refused_unsigned = counters_.refused_unsigned;
    std::lock_guard lock(signing_mu_);
    s.signing_keys = signing_keys_.size();
    s.clock_offset_ms = clock_offset_ms_;
    return s;
}

}  // namespace impl

Executor::Executor(ExecutorOptions options) : runtime_(std::make_unique<impl::Runtime>(std::move(options))) {}
Executor::~Executor() = default;
Executor& Executor::Handle(std::string name, Handler handler) {
    runtime_->Handle(std::move(name), std::move(handler));
    return *this;
}
void Executor::Start() {
    runtime_->Start();
}
void Executor::Stop() {
    runtime_->Stop();
}
std::uint16_t Executor::port() const {
    return runtime_->port();
}
std::string Executor::address() const {
    return runtime_->address();
}
ExecutorStats Executor::Stats() const {
    return runtime_->Stats();
}
MetricsRegistry& Executor::metrics() {
    return runtime_->metrics();
}
Result<LockGuard> Executor::Lock(std::string_view key, std::chrono::milliseconds lease,
                                 std::chrono::milliseconds wait) {
    return runtime_->Lock(key, lease, wait);
}

}  // namespace sched::client
