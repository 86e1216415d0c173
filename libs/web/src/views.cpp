#include "impl/views.hpp"

#include <algorithm>

#include "sched/http/message.hpp"

namespace sched::web::impl {

// The text is bounded by the column (64 KiB) and the parse by depth.
nlohmann::json ParamsJson(const std::string& text) {
    if (text.empty()) return text;
    auto parsed = http::ParseJson(text);
    if (!parsed.ok()) return text;
    return std::move(*parsed);
}

api::JobView JobViewOf(const model::Job& job, const std::optional<model::Fire>& last_fire) {
    api::JobView v;
    v.id = job.id;
    v.name = job.name;
    v.app = job.app;
    v.handler = job.handler;
    v.params = ParamsJson(job.params);
    v.schedule_type = ScheduleTypeName(job.schedule_type);
    v.schedule_expr = job.schedule_expr;
    v.time_zone = job.time_zone;
    v.misfire_policy = MisfirePolicyName(job.misfire_policy);
    v.routing = RoutingName(job.routing);
    v.block_strategy = BlockStrategyName(job.block_strategy);
    v.concurrency_limit = job.concurrency_limit;
    v.timeout_ms = job.timeout_ms;
    v.retry_max = job.retry_max;
    v.retry_backoff_ms = job.retry_backoff_ms;
    v.pause_after_failures = job.pause_after_failures;
    v.jitter_ms = job.jitter_ms;
    v.dst_gap = job.dst_gap;
    v.dst_overlap = job.dst_overlap;
    v.shard_total = job.shard_total;
    v.at_least_once = job.at_least_once;
    v.enabled = job.enabled;
    v.description = job.description;
    v.next_fire_time = job.next_fire_time;
    v.last_fire_time = job.last_fire_time;
    v.version = job.version;
    v.created_at = job.created_at;
    v.updated_at = job.updated_at;
    // Who paused it, when and why: shown while paused (a stale record of an edit-enabled job is not).
    if (job.paused && !job.enabled) v.paused = api::JobPauseView{job.paused->by, job.paused->at, job.paused->note};
    // Calendar and bounds (docs/schedules.md).
    if (!job.calendar.empty()) v.calendar = job.calendar;
    if (!job.concurrency_key.empty()) v.concurrency_key = job.concurrency_key;
    v.managed_by = job.managed_by;
    v.start_at = job.start_at;
    v.end_at = job.end_at;
    v.max_runs = job.max_runs;
    v.planned_runs = job.planned_runs;
    v.completed_at = job.completed_at;
    if (job.completed_at) v.completed_reason = job.completed_reason;
    if (last_fire) {
        v.last_fire = api::LastFireView{.id = last_fire->id,
                                        .status = std::string(model::FireStatusName(last_fire->status)),
                                        .kind = std::string(model::FireKindName(last_fire->kind)),
                                        .scheduled_time = last_fire->scheduled_time,
                                        .finished_at = last_fire->finished_at};
    }
    return v;
}

nlohmann::json JobJson(const model::Job& job, const std::optional<model::Fire>& last_fire) {
    return api::ToJson(JobViewOf(job, last_fire));
}

api::FireView FireViewOf(const model::Fire& f) {
    api::FireView v;
    v.id = f.id;
    v.job_id = f.job_id;
    v.scheduled_time = f.scheduled_time;
    v.due_at = f.due_at;
    v.kind = model::FireKindName(f.kind);
    v.attempt = f.attempt;
    v.shard_index = f.shard_index;
    v.shard_total = f.shard_total;
    v.epoch = f.epoch;
    v.dispatch_epoch = f.dispatch_epoch;
    v.assigned_node = f.assigned_node;
    v.executor_address = f.executor_address;
    v.status = model::FireStatusName(f.status);
    v.created_at = f.created_at;
    v.dispatched_at = f.dispatched_at;
    v.started_at = f.started_at;
    v.finished_at = f.finished_at;
    if (f.result_code) v.result_code = *f.result_code;
    v.result_message = f.result_message;
    if (f.reason) v.reason = model::FireReasonName(*f.reason);
    v.skipped_until = f.skipped_until;
    v.skipped_count = f.skipped_count;
    v.workflow_run_id = f.workflow_run_id;
    v.workflow_step = f.workflow_step;
    // due_at, not scheduled_time: a retry keeps its original scheduled_time and waits out its
    // backoff on purpose; that wait is not dispatch lag.
    // A fire claimed ahead (slave.claim-ahead) left at its due time: no lag, not a negative one.
    if (f.dispatched_at) v.lag_ms = std::max<std::int64_t>(0, *f.dispatched_at - model::StoredDueAt(f));
    if (f.finished_at) {
        if (f.started_at) {
            v.duration_ms = *f.finished_at - *f.started_at;
        } else if (f.dispatched_at) {
            v.duration_ms = *f.finished_at - *f.dispatched_at;
        }
    }
    return v;
}

nlohmann::json FireJson(const model::Fire& fire) {
    return api::ToJson(FireViewOf(fire));
}

api::TokenView TokenViewOf(const store::ApiToken& t) {
    api::TokenView v;
    v.id = t.id;
    v.name = t.name;
    v.role = store::RoleName(t.role);
    v.created_at = t.created_at;
    v.last_used_at = t.last_used_at;
    v.revoked_at = t.revoked_at;
    if (t.role == store::Role::kExecutor) v.apps = t.apps;
    v.created_by = t.created_by;
    return v;
}

nlohmann::json TokenJson(const store::ApiToken& token) {
    return api::ToJson(TokenViewOf(token));
}

}  // namespace sched::web::impl
