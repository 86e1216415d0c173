#pragma once

/// Scan step 3: what follows the fires that ended. Every final transition raises the fire's
/// follow-up flag, except the ends after which nothing can follow (see the store's follow-up
/// rule); this step first clears, in one statement, the flags of ended fires with nothing to
/// follow, then takes up to `batch` flagged fires:
///   - a retry row when attempts remain (failed and timeout while the try is below retry_max;
///     lost only for at-least-once jobs, and for those at least once), same scheduled time,
///     attempt + 1, due after exponential backoff with jitter (RetryDelayMs), assigned to a
///     live slave; a workflow step's retry stays a step fire of its run;
///   - a fixed-delay job's next time, from the run's finish;
///   - the runs of ended workflow step fires, for the workflows step that follows.
/// Retry and fixed-delay logic live here only: whoever reported the end, the fenced master
/// decides what follows.

#include <random>

#include "scan/scan_step.hpp"
#include "scan/schedule_cache.hpp"

namespace sched::trigger::impl {

class FollowupsStep final : public ScanStep {
  public:
    FollowupsStep(const MasterConfig& config, ScheduleCache& schedules) : config_(config), schedules_(schedules) {}
    void Run(ScanContext& ctx) override;
    bool Wanted(const ProbedWork& work) const override { return work.followups; }

  private:
    const MasterConfig& config_;
    ScheduleCache& schedules_;
    std::mt19937_64 rng_{std::random_device{}()};
};

/// The try a fire is: its attempt, except for a workflow step's fire, whose attempt is 1000 x
/// the run's generation + the try (docs/workflows.md "Step fires").
int TryOf(const model::Fire& fire);
/// Whether an ended fire of `job` gets a retry row.
bool ShouldRetry(const model::Fire& fire, const model::Job& job);

}  // namespace sched::trigger::impl
