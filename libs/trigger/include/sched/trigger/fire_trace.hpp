#pragma once

/// A stored fire as the spans of its attempt know it (sched/protocol/fire_spans.hpp).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sched/model/fire.hpp"
#include "sched/protocol/fire_spans.hpp"
#include "sched/protocol/fires_notice.hpp"

namespace sched::trigger {

inline constexpr std::int64_t kNanosPerMs = 1'000'000;

/// The trace reference of `fire`, of a job of `app` (the view must outlive the result): under
/// the caller's trace when a manual trigger stored one (checked by the API when it was stored).
inline protocol::FireRef FireRefOf(const model::Fire& fire, std::string_view app) {
    return {.fire_id = fire.id,
            .job_id = fire.job_id,
            .scheduled_ms = fire.scheduled_time,
            .attempt = fire.attempt,
            .app = app,
            .caller = fire.trace_parent ? protocol::ParseTraceParent(*fire.trace_parent) : std::nullopt};
}

/// A span of a fire written inside a transaction, pushed only once that transaction committed
/// (PushFireSpans), so that no exported span names a fire row that was rolled back. Owns its
/// strings: it outlives the rows it was made from.
struct PendingFireSpan {
    std::int64_t fire_id = 0;
    std::int64_t job_id = 0;
    std::int64_t scheduled_ms = 0;
    std::int64_t attempt = 0;
    std::string app;
    std::optional<std::string> trace_parent;  ///< a manual trigger's caller context
    /// kPlanned: a point at `end_ms`; kEnded: `ended` at `end_ms` and the attempt's root from
    /// `start_ms` (the fire row's creation) with `status`.
    protocol::FireStep step = protocol::FireStep::kPlanned;
    std::int64_t start_ms = 0;
    std::int64_t end_ms = 0;
    std::string status;

    /// `planned` of `fire` (its id already stored), a point at `at_ms`.
    static PendingFireSpan Planned(const model::Fire& fire, std::string_view app, std::int64_t at_ms);
    /// `ended` (and the root) of `fire`, ended `status` at `at_ms`.
    static PendingFireSpan Ended(const model::Fire& fire, std::string_view app, std::int64_t at_ms,
                                 model::FireStatus status);
};

/// Pushes each span to the installed FireTracer (nothing when none is installed).
void PushFireSpans(const std::vector<PendingFireSpan>& spans);

/// Takes note of `fire`, just written as `fire_id` for a job of `app`: noticed under its
/// assigned node in `assigned` (with `fill`, see NoticedFire), and its `planned` span at
/// `now_ms` collected in `spans` when a tracer is installed, pushed once the write committed.
void NoteWrittenFire(const model::Fire& fire, std::int64_t fire_id, std::string_view app, std::int64_t now_ms,
                     std::map<std::string, std::vector<protocol::NoticedFire>>& assigned,
                     std::vector<PendingFireSpan>& spans, bool fill = false);

}  // namespace sched::trigger
