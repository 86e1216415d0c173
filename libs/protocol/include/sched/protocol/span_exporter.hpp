#pragma once

/// Spans sent to an OpenTelemetry collector over OTLP/HTTP with the JSON encoding
/// (`POST <otlp-endpoint>`, body an `ExportTraceServiceRequest`), off unless configured.
///
///     SpanExporter exporter(io.get_executor(), options, tls);   // options.enabled()
///     exporter.Start();
///     exporter.Push(span);      // any thread; never waits for the network
///     exporter.Stop();          // from a thread that is not running `io`: one last post
///
/// - `Push` appends to a bounded queue under a mutex and returns: a full queue drops the span
///   (counted, `Stats::dropped_queue_full`), so a slow or absent collector never holds up the
///   caller (the fire path only pushes).
/// - One coroutine on a strand of `io` posts batches of up to `batch-size` spans, as soon as a
///   batch is full or `flush-interval` after the last post. A post that fails (transport error,
///   429, 502, 503, 504) is retried `retries` times with the project's Backoff; any other answer
///   or the last failure drops the batch (counted, `Stats::dropped_export_failed`, and logged
///   at most once a minute with the number dropped since the last line).
///
/// Thread-safe.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "sched/common/duration.hpp"
#include "sched/common/net.hpp"
#include "sched/http/tls_options.hpp"
#include "sched/protocol/fire_spans.hpp"
#include "sched/protocol/span_exporter_options.hpp"

namespace sched::protocol {

/// OTLP's SpanKind values.
enum class SpanKind { kInternal = 1, kServer = 2, kClient = 3, kProducer = 4, kConsumer = 5 };

struct SpanAttribute {
    std::string key;
    std::variant<std::string, std::int64_t> value;
};

struct Span {
    std::string trace_id;        ///< 32 lower-case hex digits
    std::string span_id;         ///< 16 lower-case hex digits
    std::string parent_span_id;  ///< empty: a root span
    std::string trace_state;     ///< W3C tracestate of the context (OTLP `traceState`); empty: none
    std::string name;
    SpanKind kind = SpanKind::kInternal;
    std::int64_t start_ns = 0;  ///< Unix time in nanoseconds
    std::int64_t end_ns = 0;
    std::vector<SpanAttribute> attributes;
    bool error = false;          ///< status ERROR (else UNSET)
    std::string status_message;  ///< with error
};

/// The OTLP/JSON body of one post: one resource (`service.name` = `service_name`) with one
/// scope (`sched`) holding `spans`; ids as hex, times and integer attributes as decimal strings.
nlohmann::json ExportTraceServiceRequest(std::string_view service_name, const std::vector<Span>& spans);

struct SpanExporterStats {
    std::uint64_t exported = 0;               ///< spans a collector accepted
    std::uint64_t dropped_queue_full = 0;     ///< spans pushed while the queue was full
    std::uint64_t dropped_export_failed = 0;  ///< spans of batches dropped after their last retry
    std::uint64_t failed_posts = 0;           ///< posts that failed (each retry counts)
};

namespace impl {
struct SpanExporterState;
}

class SpanExporter final : public SpanSink {
  public:
    /// `tls` is the process's `http-client.tls` (for https:// endpoints).
    SpanExporter(const net::any_io_executor& io, SpanExporterOptions options, const http::ClientTlsOptions& tls = {});
    /// Stops the loop (without the last post of Stop) if it still runs.
    ~SpanExporter() override;
    SpanExporter(const SpanExporter&) = delete;
    SpanExporter& operator=(const SpanExporter&) = delete;

    /// Starts the posting coroutine. Call once.
    void Start();
    /// Queues `span`; false when the queue is full (counted) or the exporter stopped.
    bool Push(Span span) override;
    /// Posts what is queued once more (no retry), then ends the loop; waits at most `timeout`
    /// plus one second. Must not be called from a thread running `io`. Idempotent.
    void Stop();

    SpanExporterStats Stats() const;
    const SpanExporterOptions& options() const;

  private:
    std::shared_ptr<impl::SpanExporterState> state_;
};

}  // namespace sched::protocol
