#include "sched/store/job_clock.hpp"

namespace sched::store {

JobsPlannedPast CountJobsPlannedPast(soci::session& s, std::int64_t after_ms) {
    long long jobs = 0;
    long long until = 0;
    soci::indicator until_ind = soci::i_null;
    s << "SELECT COUNT(*), MAX(next_fire_time) FROM job WHERE enabled = 1 AND next_fire_time IS NOT NULL "
         "AND last_fire_time > :after",
        soci::use(after_ms, "after"), soci::into(jobs), soci::into(until, until_ind);
    JobsPlannedPast out;
    out.jobs = jobs;
    if (until_ind == soci::i_ok) out.silent_until_ms = until;
    return out;
}

}  // namespace sched::store
