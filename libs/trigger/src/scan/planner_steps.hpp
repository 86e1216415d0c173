#pragma once

/// Scan steps 1b and 4: the planners that have their own types, as steps. Backfills run after
/// the due jobs (their next fires, bounded per scan: BackfillAdvancer); workflows run last,
/// after the follow-ups, so a step's retry exists before its run is judged (WorkflowPlanner,
/// docs/workflows.md), and they give the scan the earliest due time of any workflow.

#include "scan/scan_step.hpp"
#include "sched/trigger/backfill_planner.hpp"
#include "sched/trigger/workflow_planner.hpp"

namespace sched::trigger::impl {

class BackfillsStep final : public ScanStep {
  public:
    void Run(ScanContext& ctx) override;
    bool Wanted(const ProbedWork& work) const override { return work.backfills; }

  private:
    BackfillAdvancer backfills_;
};

class WorkflowsStep final : public ScanStep {
  public:
    explicit WorkflowsStep(const MasterConfig& config);
    void Run(ScanContext& ctx) override;
    /// Also after follow-ups: a step fire that ended advances its run. Run timeouts and the
    /// round-robin sweep of running runs wait for a full scan.
    bool Wanted(const ProbedWork& work) const override {
        return work.workflows_due || work.unstarted_runs || work.followups;
    }

  private:
    WorkflowPlanner workflows_;
};

}  // namespace sched::trigger::impl
