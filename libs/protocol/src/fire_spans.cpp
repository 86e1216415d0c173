#include "sched/protocol/fire_spans.hpp"

#include <atomic>
#include <chrono>
#include <mutex>

#include "sched/common/crypto.hpp"
#include "sched/protocol/span_exporter.hpp"

namespace sched::protocol {

namespace {

std::string SpanIdOf(const std::string& seed) {
    std::string id = crypto::Sha256Hex(seed).substr(0, 16);
    if (id.find_first_not_of('0') == std::string::npos) id.back() = '1';  // all zeros is invalid
    return id;
}

struct Installed {
    std::shared_ptr<SpanSink> exporter;
    std::string node;
};

// The installed tracer: `on` is read on every hook (the common case is off); the pointer is
// copied under the mutex only when it is set.
std::atomic<bool> on{false};
std::mutex mu;
std::shared_ptr<const Installed> installed;

std::shared_ptr<const Installed> Current() {
    if (!on.load(std::memory_order_acquire)) return nullptr;
    std::lock_guard lock(mu);
    return installed;
}

Span SpanOf(const Installed& t, const FireRef& fire, const TraceContext& run, std::string name) {
    Span s;
    s.trace_id = run.trace_id;
    s.name = std::move(name);
    s.attributes = {{"sched.fire_id", fire.fire_id},
                    {"sched.job_id", fire.job_id},
                    {"sched.app", std::string(fire.app)},
                    {"sched.attempt", fire.attempt},
                    {"sched.node", t.node}};
    return s;
}

}  // namespace

TraceContext RunTrace(const FireRef& fire) {
    if (!fire.caller) return FireTrace(fire.fire_id, fire.job_id, fire.scheduled_ms, fire.attempt);
    // Under the caller's trace, the attempt's span id still comes from the fire, so that every
    // node derives it alike and a retry is a sibling.
    TraceContext t;
    t.trace_id = fire.caller->trace_id;
    t.span_id = SpanIdOf("sched-run/" + t.trace_id + "/" + fire.caller->span_id + "/" + std::to_string(fire.fire_id) +
                         "/" + std::to_string(fire.attempt));
    t.sampled = fire.caller->sampled;
    return t;
}

std::string_view FireStepName(FireStep step) {
    switch (step) {
        case FireStep::kPlanned:
            return "planned";
        case FireStep::kClaimed:
            return "claimed";
        case FireStep::kSent:
            return "sent";
        case FireStep::kRun:
            return "run";
        case FireStep::kEnded:
            return "ended";
    }
    return "step";
}

std::string FireStepSpanId(const TraceContext& run, FireStep step) {
    return SpanIdOf("sched-step/" + run.trace_id + "/" + run.span_id + "/" + std::string(FireStepName(step)));
}

std::int64_t NowUnixNanos() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

void FireTracer::Install(std::shared_ptr<SpanSink> sink, std::string node) {
    std::lock_guard lock(mu);
    installed = std::make_shared<const Installed>(Installed{std::move(sink), std::move(node)});
    on.store(true, std::memory_order_release);
}

void FireTracer::Uninstall() {
    std::lock_guard lock(mu);
    on.store(false, std::memory_order_release);
    installed.reset();
}

bool FireTracer::On() {
    return on.load(std::memory_order_acquire);
}

void FireTracer::Step(const FireRef& fire, FireStep step, std::int64_t start_ns, std::int64_t end_ns) {
    const auto t = Current();
    if (!t) return;
    const TraceContext run = RunTrace(fire);
    Span s = SpanOf(*t, fire, run, std::string(FireStepName(step)));
    s.span_id = FireStepSpanId(run, step);
    s.parent_span_id = run.span_id;
    s.kind = step == FireStep::kSent ? SpanKind::kClient : SpanKind::kInternal;
    s.start_ns = start_ns;
    s.end_ns = std::max(start_ns, end_ns);
    t->exporter->Push(std::move(s));
}

void FireTracer::Ended(const FireRef& fire, std::int64_t root_start_ns, std::int64_t end_ns, std::string_view status) {
    const auto t = Current();
    if (!t) return;
    const TraceContext run = RunTrace(fire);
    const bool error = status != "succeeded";
    Span ended = SpanOf(*t, fire, run, std::string(FireStepName(FireStep::kEnded)));
    ended.span_id = FireStepSpanId(run, FireStep::kEnded);
    ended.parent_span_id = run.span_id;
    ended.start_ns = ended.end_ns = end_ns;
    ended.attributes.push_back({"sched.status", std::string(status)});
    ended.error = error;
    if (error) ended.status_message = std::string(status);
    Span root = SpanOf(*t, fire, run, "fire");
    root.span_id = run.span_id;
    if (fire.caller) root.parent_span_id = fire.caller->span_id;
    root.start_ns = std::min(root_start_ns, end_ns);
    root.end_ns = end_ns;
    root.attributes.push_back({"sched.status", std::string(status)});
    root.error = error;
    if (error) root.status_message = std::string(status);
    t->exporter->Push(std::move(ended));
    t->exporter->Push(std::move(root));
}

}  // namespace sched::protocol
