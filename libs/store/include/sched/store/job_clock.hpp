#pragma once

/// The jobs planned past a moment: what the master counts when the database clock stepped back
/// (docs/architecture/master.md "Clock steps").

#include <cstdint>
#include <optional>

#include <soci/soci.h>

namespace sched::store {

/// Enabled jobs whose last planned time is later than `after_ms`, and the latest next_fire_time
/// among them: planned under a clock that has since stepped back, they fire nothing until then.
struct JobsPlannedPast {
    std::int64_t jobs = 0;
    std::optional<std::int64_t> silent_until_ms;
};

/// One aggregate over the job table (a full scan of it: run only when the clock stepped back).
JobsPlannedPast CountJobsPlannedPast(soci::session& s, std::int64_t after_ms);

}  // namespace sched::store
