#pragma once

// Which ended fires have nothing after them (docs/architecture/master.md "Follow-up flag"): the one
// rule the master's bulk clear and the result writes share.

#include <string>

#include "sched/common/job_vocabulary.hpp"
#include "sched/model/fire.hpp"
#include "sched/store/fire.hpp"

namespace sched::store::impl {

using model::FireStatus;

/// An end that needs the master only when the fire or its job says so (below): a success, a
/// skip or a kill is not retried.
inline bool MayEndWithoutFollowup(FireStatus to) {
    return to == FireStatus::kSucceeded || to == FireStatus::kSkipped || to == FireStatus::kKilled;
}

/// SQL over a `job_fire` row (unchanged by an end): true when such an end needs nothing from
/// the master. Not a workflow step (its run advances on the flag), not a fixed-delay job's fire
/// (its next time counts from the end). One primary-key lookup of the job.
inline std::string NothingFollowsSql() {
    return "kind <> 'workflow' AND NOT EXISTS (SELECT 1 FROM job WHERE job.id = job_fire.job_id AND "
           "job.schedule_type = '" +
           std::string(ScheduleTypeName(ScheduleType::kFixedDelay)) + "')";  // a name from the table, not input
}

/// NothingFollowsSql for a `job_fire` row aliased `f` LEFT JOINed with its job aliased `j` (no
/// row: the job is gone), without a lookup of its own: what a read of the fire and its job
/// learns for free about the follow-up the fire's end will raise.
inline std::string NothingFollowsJoinedSql() {
    return "f.kind <> 'workflow' AND (j.schedule_type IS NULL OR j.schedule_type <> '" +
           std::string(ScheduleTypeName(ScheduleType::kFixedDelay)) + "')";
}

}  // namespace sched::store::impl
