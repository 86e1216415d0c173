#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include <soci/soci.h>

#include "sched/store/fire.hpp"
#include "sched/store/job.hpp"

namespace sched::trigger::impl {

/// The jobs of `fires` that still exist, by id, each read once and together
/// (JobRepository::FindMany: one statement per 500 jobs): a step looks at up to `batch` fires,
/// and a lookup per job would be up to `batch` round trips inside the scan's transaction.
inline std::map<std::int64_t, model::Job> JobsOf(soci::session& s, const std::vector<model::Fire>& fires) {
    std::set<std::int64_t> ids;
    for (const auto& fire : fires) ids.insert(fire.job_id);
    std::map<std::int64_t, model::Job> jobs;
    for (auto& job : store::JobRepository::FindMany(s, std::vector<std::int64_t>(ids.begin(), ids.end()))) {
        const std::int64_t id = job.id;
        jobs.emplace(id, std::move(job));
    }
    return jobs;
}

}  // namespace sched::trigger::impl
