#pragma once

/// Whether a planned fire became a misfire before it could run: later than `threshold_ms` (the
/// master's misfire-threshold) because its node was stopped (SIGSTOP, a VM pause) past its time.
/// The job's misfire policy then decides as the master's would have: skip skips it,
/// fire-once-now runs only the latest late fire of the job (same shard) among `group` (the
/// fires claimed with it), fire-all runs it. Lateness counts from when the fire could first be
/// sent: its scheduled time, or its creation when the master planned it already due. Only
/// planned times are judged (manual, retry, misfire, backfill and workflow fires run whenever
/// they are sent), and not a fire that waited for a seat of its job's concurrency limit (reason
/// concurrency): it was judged when it was first claimed, and waiting is not being late.
/// Pure; the reason text when it is a misfire not to run, else nullopt.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sched/store/fire.hpp"
#include "sched/store/job.hpp"

namespace sched::trigger {

std::optional<std::string> MisfireVerdict(const std::vector<model::Fire>& group, const model::Fire& fire,
                                          const model::Job& job, std::int64_t now_ms, std::int64_t threshold_ms);

}  // namespace sched::trigger
