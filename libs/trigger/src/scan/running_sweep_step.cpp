#include "scan/running_sweep_step.hpp"

#include <spdlog/spdlog.h>

#include "scan/jobs_of.hpp"
#include "sched/store/registry.hpp"

namespace sched::trigger::impl {

// XXL-JOB's "result lost" sweep does the same for an offline executor.
void RunningSweepStep::Run(ScanContext& ctx) {
    if (ctx.now < next_sweep_ms_) return;
    next_sweep_ms_ = ctx.now + Ms(config_.running_sweep);
    ScanReport& r = ctx.report;
    const auto fires = store::FireRepository::ListRunning(ctx.s, after_scheduled_, after_id_, config_.batch);
    if (static_cast<int>(fires.size()) < config_.batch) {
        after_scheduled_ = -1;  // the end was reached: start over next time
        after_id_ = 0;
    } else {
        after_scheduled_ = fires.back().scheduled_time;
        after_id_ = fires.back().id;
    }
    if (fires.empty()) return;
    const auto live = store::ExecutorRepository::LiveAddresses(ctx.s, ctx.dialect, Ms(config_.executor_ttl));
    const auto jobs = JobsOf(ctx.s, fires);
    for (const auto& fire : fires) {
        const std::int64_t since = fire.started_at.value_or(fire.dispatched_at.value_or(fire.due_at));
        const auto found = jobs.find(fire.job_id);
        const model::Job* job = found == jobs.end() ? nullptr : &found->second;  // null: deleted since
        if (job && job->timeout_ms > 0 && ctx.now > since + job->timeout_ms + Ms(config_.node_ttl)) {
            const int ended = store::FireRepository::Transition(
                ctx.s, fire.id, {model::FireStatus::kRunning}, model::FireStatus::kTimeout,
                {.finished_at = ctx.now,
                 .result_message = "no result within the timeout (" + std::to_string(job->timeout_ms) +
                                   " ms) and none recorded by slave " + fire.assigned_node.value_or("?") +
                                   "; the run may still be going on at " + fire.executor_address.value_or("?"),
                 .reason = model::FireReason::kNoResult,
                 .followup = true});
            r.running_timed_out += ended;
            if (ended == 1 && protocol::FireTracer::On()) {
                r.spans.push_back(PendingFireSpan::Ended(fire, job->app, ctx.now, model::FireStatus::kTimeout));
            }
            continue;
        }
        // An empty registry means nobody's heartbeat arrives: the registry path failed, not
        // every executor at once, so nothing is concluded from it.
        if (live.empty() || !fire.executor_address || live.contains(*fire.executor_address)) continue;
        if (ctx.now <= fire.dispatched_at.value_or(fire.due_at) + Ms(config_.executor_ttl)) continue;
        const int lost =
            store::FireRepository::Transition(ctx.s, fire.id, {model::FireStatus::kRunning}, model::FireStatus::kLost,
                                              {.finished_at = ctx.now,
                                               .result_message = "executor " + *fire.executor_address +
                                                                 " stopped heartbeating while the fire was running",
                                               .reason = model::FireReason::kExecutorGone,
                                               .followup = true});
        r.running_lost += lost;
        if (lost == 1 && job && protocol::FireTracer::On()) {
            r.spans.push_back(PendingFireSpan::Ended(fire, job->app, ctx.now, model::FireStatus::kLost));
        }
    }
    if (r.running_lost + r.running_timed_out > 0) {
        spdlog::warn("master sweep: {} running fires lost (executor gone), {} timed out without a result",
                     r.running_lost, r.running_timed_out);
    }
}

}  // namespace sched::trigger::impl
