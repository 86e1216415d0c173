#include "sched/protocol/span_exporter.hpp"

#include <deque>
#include <future>
#include <mutex>

#include <spdlog/spdlog.h>

#include "sched/common/backoff.hpp"
#include "sched/http/client.hpp"
#include "sched/http/url.hpp"

namespace sched::protocol {

using namespace std::chrono_literals;

namespace {

nlohmann::json AttributeJson(const SpanAttribute& a) {
    nlohmann::json value;
    if (const auto* s = std::get_if<std::string>(&a.value)) {
        value["stringValue"] = *s;
    } else {
        // OTLP/JSON follows the protobuf JSON mapping: a 64-bit integer is a decimal string.
        value["intValue"] = std::to_string(std::get<std::int64_t>(a.value));
    }
    return {{"key", a.key}, {"value", std::move(value)}};
}

nlohmann::json SpanJson(const Span& span) {
    nlohmann::json j = {{"traceId", span.trace_id},
                        {"spanId", span.span_id},
                        {"name", span.name},
                        {"kind", static_cast<int>(span.kind)},
                        {"startTimeUnixNano", std::to_string(span.start_ns)},
                        {"endTimeUnixNano", std::to_string(span.end_ns)}};
    if (!span.parent_span_id.empty()) j["parentSpanId"] = span.parent_span_id;
    if (!span.trace_state.empty()) j["traceState"] = span.trace_state;
    auto attributes = nlohmann::json::array();
    for (const auto& a : span.attributes) attributes.push_back(AttributeJson(a));
    j["attributes"] = std::move(attributes);
    if (span.error) j["status"] = {{"code", 2}, {"message", span.status_message}};
    return j;
}

// OTLP/HTTP's retryable answers; any other refusal would be refused again.
bool Retryable(int status) {
    return status == 429 || status == 502 || status == 503 || status == 504;
}

constexpr auto kDropLogWindow = std::chrono::minutes(1);

}  // namespace

nlohmann::json ExportTraceServiceRequest(std::string_view service_name, const std::vector<Span>& spans) {
    auto out = nlohmann::json::array();
    for (const auto& span : spans) out.push_back(SpanJson(span));
    nlohmann::json resource = {
        {"attributes", nlohmann::json::array({AttributeJson({"service.name", std::string(service_name)})})}};
    nlohmann::json scope = {{"scope", {{"name", "sched"}}}, {"spans", std::move(out)}};
    return {{"resourceSpans", nlohmann::json::array({{{"resource", std::move(resource)},
                                                      {"scopeSpans", nlohmann::json::array({std::move(scope)})}}})}};
}

SpanExporterOptions SpanExporterOptions::FromYaml(const ConfigNode& node, const std::string& service_name) {
    SpanExporterOptions o;
    o.endpoint = node.String("otlp-endpoint", "");
    if (!o.endpoint.empty()) {
        auto url = http::Url::Parse(o.endpoint);
        if (!url.ok()) throw ConfigError(node.path() + ".otlp-endpoint", url.status().message());
    }
    o.service_name = node.String("service-name", "");
    if (o.service_name.empty()) o.service_name = service_name;
    o.batch_size = static_cast<std::size_t>(node.Int("batch-size", static_cast<std::int64_t>(o.batch_size), 1, 10000));
    o.flush_interval = node.Duration("flush-interval", o.flush_interval, 10ms, std::chrono::minutes(1));
    o.queue_limit =
        static_cast<std::size_t>(node.Int("queue-limit", static_cast<std::int64_t>(o.queue_limit), 1, 1'000'000));
    o.retries = static_cast<int>(node.Int("retries", o.retries, 0, 20));
    o.timeout = node.Duration("timeout", o.timeout, 100ms, std::chrono::minutes(1));
    if (o.batch_size > o.queue_limit) {
        throw ConfigError(node.path() + ".batch-size",
                          "must not exceed queue-limit (" + std::to_string(o.queue_limit) + ")");
    }
    node.RejectUnknownKeys();
    return o;
}

namespace impl {

struct SpanExporterState {
    SpanExporterState(const net::any_io_executor& io, SpanExporterOptions o, const http::ClientTlsOptions& tls)
        : options(std::move(o)),
          strand(net::make_strand(io)),
          wake(strand),
          pause(strand),
          client(io, http::ClientOptions{.connect_timeout = std::min<Micros>(options.timeout, 2s),
                                         .request_timeout = options.timeout,
                                         .max_idle_per_host = 2,
                                         .body_limit = std::size_t{64} * 1024,
                                         .user_agent = "sched-otlp",
                                         .tls = tls}) {}

    const SpanExporterOptions options;
    net::strand<net::any_io_executor> strand;
    net::steady_timer wake;   // the flush interval, cut short by a full batch or Stop
    net::steady_timer pause;  // the backoff between attempts of one post
    http::HttpClient client;

    std::mutex mu;
    std::deque<Span> queue;
    bool stopping = false;
    bool wake_posted = false;
    bool started = false;

    std::atomic<std::uint64_t> exported{0};
    std::atomic<std::uint64_t> dropped_queue_full{0};
    std::atomic<std::uint64_t> dropped_export_failed{0};
    std::atomic<std::uint64_t> failed_posts{0};

    // Lines about drops, at most one per window (on the strand, or under mu for the queue).
    std::chrono::steady_clock::time_point last_drop_log{};
    std::uint64_t unlogged_drops = 0;
    std::atomic<std::int64_t> last_full_log_ns{0};

    std::promise<void> done;

    void LogQueueFull() {
        const std::int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
        std::int64_t last = last_full_log_ns.load();
        const std::int64_t window = std::chrono::duration_cast<std::chrono::nanoseconds>(kDropLogWindow).count();
        if (last != 0 && now - last < window) return;
        if (!last_full_log_ns.compare_exchange_strong(last, now)) return;
        spdlog::warn("OTLP span queue full ({} spans): spans are dropped ({} so far)", options.queue_limit,
                     dropped_queue_full.load());
    }

    void LogExportDrop(std::size_t n, const std::string& why) {
        unlogged_drops += n;
        const auto now = std::chrono::steady_clock::now();
        if (last_drop_log.time_since_epoch().count() != 0 && now - last_drop_log < kDropLogWindow) return;
        last_drop_log = now;
        spdlog::warn("OTLP export to {} failed ({}): {} span(s) dropped since the last such line", options.endpoint,
                     why, unlogged_drops);
        unlogged_drops = 0;
    }

    // Up to batch_size spans from the queue's front.
    std::vector<Span> Take() {
        std::lock_guard lock(mu);
        const std::size_t n = std::min(queue.size(), options.batch_size);
        std::vector<Span> batch(std::make_move_iterator(queue.begin()),
                                std::make_move_iterator(queue.begin() + static_cast<std::ptrdiff_t>(n)));
        queue.erase(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(n));
        return batch;
    }

    bool Stopping() {
        std::lock_guard lock(mu);
        return stopping;
    }

    net::awaitable<void> Post(std::vector<Span> batch, bool last) {
        const nlohmann::json body = ExportTraceServiceRequest(options.service_name, batch);
        Backoff backoff(options.retry_backoff, 5s, BackoffJitter::kSpread);
        std::string why;
        http::CallOptions call;  // a named local: g++ 12 and braced temporaries in co_await (build.md)
        call.timeout = options.timeout;
        for (int attempt = 0;; ++attempt) {
            auto r = co_await client.PostJson(options.endpoint, body, call);
            if (r.ok() && r->ok()) {
                exported += batch.size();
                co_return;
            }
            ++failed_posts;
            const bool retryable = !r.ok() || Retryable(r->status);
            why = r.ok() ? "HTTP " + std::to_string(r->status) : r.status().ToString();
            // Stopping, the post is tried once: shutdown waits for no backoff.
            if (!retryable || attempt >= options.retries || last || Stopping()) break;
            pause.expires_after(backoff.Next());
            try {
                co_await pause.async_wait(net::use_awaitable);
            } catch (const boost::system::system_error&) {
            }
        }
        dropped_export_failed += batch.size();
        LogExportDrop(batch.size(), why);
    }

    net::awaitable<void> Loop() {
        for (;;) {
            bool wait = false;
            bool stop = false;
            {
                std::lock_guard lock(mu);
                stop = stopping;
                wake_posted = false;
                wait = !stop && queue.size() < options.batch_size;
            }
            if (wait) {
                wake.expires_after(options.flush_interval);
                try {
                    co_await wake.async_wait(net::use_awaitable);
                } catch (const boost::system::system_error&) {
                }
                stop = Stopping();
            }
            // Stopping: what is queued is posted once, batch by batch, then the loop ends.
            for (auto batch = Take(); !batch.empty(); batch = stop ? Take() : std::vector<Span>{}) {
                co_await Post(std::move(batch), stop);
            }
            if (stop) break;
        }
        client.CloseIdle();
        done.set_value();
    }
};

// Cuts the loop's wait short; the handler holds the state, which may outlive the exporter.
void Wake(const std::shared_ptr<SpanExporterState>& state) {
    net::post(state->strand, [state] { state->wake.cancel(); });
}

}  // namespace impl

SpanExporter::SpanExporter(const net::any_io_executor& io, SpanExporterOptions options,
                           const http::ClientTlsOptions& tls)
    : state_(std::make_shared<impl::SpanExporterState>(io, std::move(options), tls)) {}

SpanExporter::~SpanExporter() {
    std::lock_guard lock(state_->mu);
    state_->stopping = true;
    state_->queue.clear();
}

void SpanExporter::Start() {
    auto state = state_;
    {
        std::lock_guard lock(state->mu);
        if (state->started) return;
        state->started = true;
    }
    net::co_spawn(
        state->strand, [state]() -> net::awaitable<void> { co_await state->Loop(); }, net::detached);
}

bool SpanExporter::Push(Span span) {
    auto& s = *state_;
    bool wake = false;
    {
        std::lock_guard lock(s.mu);
        if (s.stopping) return false;  // shutting down: not a drop an operator should see
        if (s.queue.size() >= s.options.queue_limit) {
            ++s.dropped_queue_full;
            s.LogQueueFull();
            return false;
        }
        s.queue.push_back(std::move(span));
        // One wake-up per full batch: the loop posts without waiting while a batch is queued.
        if (s.queue.size() >= s.options.batch_size && !s.wake_posted) wake = s.wake_posted = true;
    }
    if (wake) impl::Wake(state_);
    return true;
}

void SpanExporter::Stop() {
    {
        std::lock_guard lock(state_->mu);
        if (state_->stopping) return;
        state_->stopping = true;
        if (!state_->started) return;
    }
    impl::Wake(state_);
    auto done = state_->done.get_future();
    done.wait_for(state_->options.timeout + 1s);
}

SpanExporterStats SpanExporter::Stats() const {
    return {.exported = state_->exported.load(),
            .dropped_queue_full = state_->dropped_queue_full.load(),
            .dropped_export_failed = state_->dropped_export_failed.load(),
            .failed_posts = state_->failed_posts.load()};
}

const SpanExporterOptions& SpanExporter::options() const {
    return state_->options;
}

}  // namespace sched::protocol
