#include "sched/trigger/fire_trace.hpp"

namespace sched::trigger {

PendingFireSpan PendingFireSpan::Planned(const model::Fire& fire, std::string_view app, std::int64_t at_ms) {
    return {.fire_id = fire.id,
            .job_id = fire.job_id,
            .scheduled_ms = fire.scheduled_time,
            .attempt = fire.attempt,
            .app = std::string(app),
            .trace_parent = fire.trace_parent,
            .step = protocol::FireStep::kPlanned,
            .start_ms = at_ms,
            .end_ms = at_ms};
}

PendingFireSpan PendingFireSpan::Ended(const model::Fire& fire, std::string_view app, std::int64_t at_ms,
                                       model::FireStatus status) {
    // The whole life of the attempt's row: from its creation to its end.
    PendingFireSpan span = Planned(fire, app, at_ms);
    span.step = protocol::FireStep::kEnded;
    span.start_ms = fire.created_at;
    span.status = std::string(model::FireStatusName(status));
    return span;
}

void PushFireSpans(const std::vector<PendingFireSpan>& spans) {
    if (spans.empty() || !protocol::FireTracer::On()) return;
    for (const auto& p : spans) {
        const protocol::FireRef ref{
            .fire_id = p.fire_id,
            .job_id = p.job_id,
            .scheduled_ms = p.scheduled_ms,
            .attempt = p.attempt,
            .app = p.app,
            .caller = p.trace_parent ? protocol::ParseTraceParent(*p.trace_parent) : std::nullopt};
        if (p.step == protocol::FireStep::kEnded) {
            protocol::FireTracer::Ended(ref, p.start_ms * kNanosPerMs, p.end_ms * kNanosPerMs, p.status);
        } else {
            protocol::FireTracer::Step(ref, p.step, p.start_ms * kNanosPerMs, p.end_ms * kNanosPerMs);
        }
    }
}

void NoteWrittenFire(const model::Fire& fire, std::int64_t fire_id, std::string_view app, std::int64_t now_ms,
                     std::map<std::string, std::vector<protocol::NoticedFire>>& assigned,
                     std::vector<PendingFireSpan>& spans, bool fill) {
    if (fire.assigned_node) {
        assigned[*fire.assigned_node].push_back({.id = fire_id,
                                                 .due_at = model::StoredDueAt(fire),
                                                 .fill = fill,
                                                 .planned = fire.status == model::FireStatus::kDispatching});
    }
    // Collected, pushed after the commit (PushFireSpans): a transaction rolled back (a lost
    // lease, a database error) must not export the span of a fire id that was never committed.
    if (protocol::FireTracer::On()) {
        model::Fire planned = fire;
        planned.id = fire_id;
        spans.push_back(PendingFireSpan::Planned(planned, app, now_ms));
    }
}

}  // namespace sched::trigger
