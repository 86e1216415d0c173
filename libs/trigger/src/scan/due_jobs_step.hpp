#pragma once

/// Scan step 1: the due jobs (enabled, next_fire_time <= now + lookahead; index-served, at most
/// `batch`, in next_fire_time order). Every due job is planned in memory first (PlanJobFires:
/// misfire policy and lookahead; with a calendar or bounds, PlanBoundedJobFires), then one
/// UPDATE advances the batch's schedules by CAS on each job's version (JobRepository::AdvanceMany),
/// the ledger rows of the times that got no fire of their own (misfire, calendar) go in with the
/// advance that passed them, and the fires of the jobs whose CAS won go in with multi-row
/// insert-if-absent statements (FireRepository::InsertManyIfAbsent), each assigned to a live
/// slave by capacity; sharding-broadcast makes one fire per live executor instance. A job whose
/// stored schedule no longer parses is parked (next_fire_time NULL).

#include <cstdint>
#include <optional>
#include <vector>

#include "scan/scan_step.hpp"
#include "scan/schedule_cache.hpp"
#include "sched/trigger/calendar_cache.hpp"
#include "sched/trigger/calendar_planner.hpp"
#include "sched/trigger/fire_planner.hpp"

namespace sched::trigger::impl {

class DueJobsStep final : public ScanStep {
  public:
    /// `schedules` is shared with the other steps that compute fire times.
    DueJobsStep(const MasterConfig& config, ScheduleCache& schedules) : config_(config), schedules_(schedules) {}
    void Run(ScanContext& ctx) override;

    /// A database clock that moved back by more than this between two scans has stepped back.
    static constexpr std::int64_t kClockStepMs = 1000;

  private:
    /// When the database clock stepped back since the previous scan, the jobs planned under the
    /// old clock fire nothing until their next_fire_time: logged once per step, with how many
    /// and until when (nothing is re-planned: a time already fired must not fire again).
    void WarnIfTheClockSteppedBack(ScanContext& ctx);
    /// What planning a job with a calendar or bounds adds to its JobPlan.
    struct BoundedExtras {
        std::vector<SkippedTimes> excluded;
        std::optional<JobEnd> end;
        bool bounded = false;  // the job has bounds or a calendar: its runs and end are recorded
    };
    JobPlan PlanBounded(const model::Job& job, const cron::Schedule& schedule, std::int64_t now,
                        const PlanOptions& options, BoundedExtras& extras);
    /// The misfire ledger rows of the jobs that advanced.
    void RecordMisfires(ScanContext& ctx, const std::vector<model::Job>& due, const std::vector<bool>& advanced,
                        const std::vector<JobPlan>& plans);
    /// The calendar ledger rows and the run counts and ends of the bounded jobs that advanced.
    void RecordBounded(ScanContext& ctx, const std::vector<model::Job>& due, const std::vector<bool>& advanced,
                       const std::vector<JobPlan>& plans, const std::vector<BoundedExtras>& extras);

    /// The jobs of a burst beyond the lookahead to plan in this scan (MasterConfig::burst_lookahead),
    /// at most `room`.
    std::vector<model::Job> BurstJobs(ScanContext& ctx, int room);

    const MasterConfig& config_;
    ScheduleCache& schedules_;
    /// The burst being planned: its due time, how many jobs it had (counted once per due time)
    /// and how many are left to plan.
    struct Burst {
        std::int64_t at = 0;
        int jobs = 0;
        int left = 0;
    };
    std::optional<Burst> burst_;
    CalendarCache calendars_;
    std::optional<std::int64_t> last_now_;  ///< the previous scan's database clock
};

}  // namespace sched::trigger::impl
