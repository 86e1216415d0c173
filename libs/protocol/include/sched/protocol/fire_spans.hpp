#pragma once

/// The spans of one fire attempt, exported over OTLP when the process installed a SpanExporter
/// (docs/architecture/logs-and-traces.md "Spans"):
///
///     fire            the attempt (root; its span id is the traceparent's span sent to the executor)
///     ├─ planned      the master inserted the fire row            (master)
///     ├─ claimed      a slave's group claim that won it            (slave)
///     ├─ sent         from the run's send to the executor's 202    (slave)
///     ├─ run          the handler's run, started -> outcome        (the SDK, child of the traceparent)
///     └─ ended        the end recorded                             (the node that records it)
///
/// Every id is derived from the fire (FireTrace, or the caller's trace of a manual trigger), so a
/// span pushed on the master and one pushed on a slave after a failover land in one trace with
/// the right parent, with no shared state. The root is pushed with the end (its start is the
/// fire row's creation), so a fire that never ends has children without their root.
///
/// Process-wide, like a logger: FireTracer::Install once at start-up; until then (and without a
/// configured endpoint) every call costs one atomic load. Thread-safe.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "sched/protocol/trace_context.hpp"

namespace sched::protocol {

struct Span;  // span_exporter.hpp: the hooks' callers need not include Asio

/// Where FireTracer puts its spans: the process's SpanExporter, or a test's collector.
/// Push must not block on the network and may be called from any thread.
class SpanSink {
  public:
    virtual ~SpanSink() = default;
    /// Takes `span`; false when it was dropped (counted by the sink).
    virtual bool Push(Span span) = 0;
};

/// What identifies a fire attempt's trace.
struct FireRef {
    std::int64_t fire_id = 0;
    std::int64_t job_id = 0;
    std::int64_t scheduled_ms = 0;
    std::int64_t attempt = 0;
    std::string_view app;
    /// A manual trigger's caller context (traceparent stored on the fire); nullopt: derived.
    std::optional<TraceContext> caller{};
};

/// The context a run of `fire` carries in its traceparent: FireTrace(...), or, under a caller's
/// trace, the caller's trace id with a span id derived from the fire and attempt.
TraceContext RunTrace(const FireRef& fire);

enum class FireStep { kPlanned, kClaimed, kSent, kRun, kEnded };
std::string_view FireStepName(FireStep step);
/// The span id of `step` under the run context `run`: the first 8 bytes of
/// SHA-256("sched-step/<trace id>/<run span id>/<step name>").
std::string FireStepSpanId(const TraceContext& run, FireStep step);

/// Nanoseconds since the Unix epoch, now (system clock).
std::int64_t NowUnixNanos();

class FireTracer {
  public:
    /// Spans go to `sink` (the process's SpanExporter) from now on, with `sched.node` = `node`.
    static void Install(std::shared_ptr<SpanSink> sink, std::string node);
    /// No more spans (the exporter itself is not stopped).
    static void Uninstall();
    /// Whether spans are exported (cheap: one atomic load).
    static bool On();

    /// A child span `step` of the fire's attempt, from `start_ns` to `end_ns`.
    static void Step(const FireRef& fire, FireStep step, std::int64_t start_ns, std::int64_t end_ns);
    /// `ended` (at `end_ns`, with `status`, an error unless "succeeded") and the attempt's root span
    /// (from `root_start_ns` to `end_ns`).
    static void Ended(const FireRef& fire, std::int64_t root_start_ns, std::int64_t end_ns, std::string_view status);
};

}  // namespace sched::protocol
