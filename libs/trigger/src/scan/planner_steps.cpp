#include "scan/planner_steps.hpp"

#include <algorithm>
#include <iterator>

namespace sched::trigger::impl {

namespace {

// Pushed after the scan commits, like the due jobs' (Master::Scan).
void AppendSpans(ScanReport& r, std::vector<PendingFireSpan> spans) {
    r.spans.insert(r.spans.end(), std::make_move_iterator(spans.begin()), std::make_move_iterator(spans.end()));
}

}  // namespace

void BackfillsStep::Run(ScanContext& ctx) {
    const auto live = [&ctx](const std::string& app) {
        return ctx.LiveExecutors(app);
    };
    auto progress = backfills_.Advance(ctx.s, ctx.dialect, ctx.epoch, ctx.now, ctx.assigner, live, ctx.shard);
    ctx.report.backfill_fires = progress.fires_created;
    ctx.report.backfills_completed = progress.completed;
    ctx.Notify(progress.assigned);
    AppendSpans(ctx.report, std::move(progress.spans));
}

WorkflowsStep::WorkflowsStep(const MasterConfig& config)
    : workflows_({.lookahead_ms = Ms(config.lookahead),
                  .batch = std::min(config.batch, 100),
                  .sweep_ms = Ms(config.running_sweep),
                  .misfire = {.threshold_ms = Ms(config.misfire_threshold),
                              .fire_all_cap = static_cast<std::size_t>(config.fire_all_cap)},
                  .max_runs_per_workflow = 100}) {}

void WorkflowsStep::Run(ScanContext& ctx) {
    const auto live = [&ctx](const std::string& app) {
        return ctx.LiveExecutors(app);
    };
    auto progress = workflows_.Advance(ctx.s, ctx.dialect, ctx.epoch, ctx.now, ctx.assigner, ctx.ended_runs, live);
    ScanReport& r = ctx.report;
    r.workflow_runs_created = progress.runs_created;
    r.workflow_runs_overlapped = progress.runs_overlapped;
    r.workflow_runs_ended = progress.runs_ended;
    r.workflow_runs_timed_out = progress.runs_timed_out;
    r.workflow_steps_started = progress.steps_started;
    r.workflow_steps_skipped = progress.steps_skipped;
    ctx.Notify(progress.assigned);
    AppendSpans(r, std::move(progress.spans));
    if (progress.earliest_due_ms && (!r.earliest_due_ms || *progress.earliest_due_ms < *r.earliest_due_ms)) {
        r.earliest_due_ms = progress.earliest_due_ms;
    }
}

}  // namespace sched::trigger::impl
