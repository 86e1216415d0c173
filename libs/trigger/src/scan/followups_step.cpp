#include "scan/followups_step.hpp"

#include <algorithm>

#include "scan/jobs_of.hpp"
#include "sched/trigger/backoff.hpp"

namespace sched::trigger::impl {

// Other fires stay below 1000 (retry_max is at most 100), so the remainder is their attempt.
int TryOf(const model::Fire& fire) {
    return fire.attempt % 1000;
}

bool ShouldRetry(const model::Fire& fire, const model::Job& job) {
    switch (fire.status) {
        case model::FireStatus::kFailed:
        case model::FireStatus::kTimeout:
            return TryOf(fire) < job.retry_max;
        // A lost fire may have run: only jobs that accept a second run (at-least-once) retry it,
        // and those always at least once, whatever retry_max says: `at_least_once` with the
        // default retry_max 0 would otherwise promise a run it never makes.
        case model::FireStatus::kLost:
            return job.at_least_once && TryOf(fire) < std::max(job.retry_max, 1);
        default:
            return false;
    }
}

void FollowupsStep::Run(ScanContext& ctx) {
    ScanReport& r = ctx.report;
    r.followups += store::FireRepository::ClearTrivialFollowups(ctx.s, ctx.shard);
    const auto followups = store::FireRepository::ListFollowups(ctx.s, config_.batch, ctx.shard);
    std::vector<std::int64_t> followup_ids;
    followup_ids.reserve(followups.size());
    for (const auto& fire : followups) followup_ids.push_back(fire.id);
    store::FireRepository::ClearFollowups(ctx.s, followup_ids);
    // Fires of one job often end together (shards, a burst): the batch's jobs are read together,
    // each once. A row can be stale only by this loop's own fixed-delay advance, whose CAS (from
    // NULL) then simply loses for the job's second fire, as a fresh read would skip it.
    const auto jobs = JobsOf(ctx.s, followups);
    for (const auto& fire : followups) {
        ++r.followups;
        if (fire.workflow_run_id) ctx.ended_runs.insert(*fire.workflow_run_id);
        const auto found = jobs.find(fire.job_id);
        if (found == jobs.end()) continue;  // deleted since
        const model::Job& job = found->second;
        if (ShouldRetry(fire, job)) {
            model::Fire retry;
            retry.job_id = fire.job_id;
            retry.scheduled_time = fire.scheduled_time;
            // A workflow step's retry stays a step fire (its run reads it by kind).
            retry.kind = fire.kind == model::FireKind::kWorkflow ? model::FireKind::kWorkflow : model::FireKind::kRetry;
            retry.attempt = fire.attempt + 1;
            retry.shard_index = fire.shard_index;
            retry.shard_total = fire.shard_total;
            retry.workflow_run_id = fire.workflow_run_id;
            retry.workflow_step = fire.workflow_step;
            // A manual trigger's caller context goes on with its retries: every attempt lands in
            // the caller's trace, as the first one did.
            retry.trace_parent = fire.trace_parent;
            retry.trace_state = fire.trace_state;
            retry.epoch = ctx.epoch;
            retry.due_at =
                ctx.now + RetryDelayMs(job.retry_backoff_ms, TryOf(retry), Ms(config_.retry_backoff_cap), rng_);
            retry.assigned_node = ctx.assigner.Next();
            if (auto id = store::FireRepository::InsertIfAbsent(ctx.s, ctx.dialect, retry)) {
                ++r.retries;
                ctx.Notify(*id, retry);
                if (protocol::FireTracer::On()) {
                    retry.id = *id;
                    r.spans.push_back(PendingFireSpan::Planned(retry, job.app, ctx.now));
                }
            }
            continue;
        }
        if (job.schedule_type == ScheduleType::kFixedDelay && job.enabled && !job.next_fire_time &&
            fire.kind != model::FireKind::kManual) {
            const auto& cached = schedules_.For(job);
            if (cached.schedule) {
                const std::int64_t finished = fire.finished_at.value_or(ctx.now);
                (void)store::JobRepository::AdvanceSchedule(ctx.s, job.id, job.version, std::nullopt,
                                                            cached.schedule->NextFireTime(finished, finished),
                                                            std::nullopt);
            }
        }
    }
}

}  // namespace sched::trigger::impl
