#pragma once

/// A stored fire as the spans of its attempt know it (sched/protocol/fire_spans.hpp).

#include <cstdint>
#include <string_view>

#include "sched/model/fire.hpp"
#include "sched/protocol/fire_spans.hpp"

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

}  // namespace sched::trigger
