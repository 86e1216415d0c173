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

namespace {

template <typename T>
nlohmann::json OrNull(const std::optional<T>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json JobJson(const store::Job& job, const std::optional<store::Fire>& last_fire) {
    nlohmann::json j = {
        {"id", job.id},
        {"name", job.name},
        {"app", job.app},
        {"handler", job.handler},
        {"params", ParamsJson(job.params)},
        {"schedule_type", std::string(ScheduleTypeName(job.schedule_type))},
        {"schedule_expr", job.schedule_expr},
        {"time_zone", job.time_zone},
        {"misfire_policy", std::string(MisfirePolicyName(job.misfire_policy))},
        {"routing", std::string(RoutingName(job.routing))},
        {"block_strategy", std::string(BlockStrategyName(job.block_strategy))},
        {"concurrency_limit", job.concurrency_limit},
        {"timeout_ms", job.timeout_ms},
        {"retry_max", job.retry_max},
        {"retry_backoff_ms", job.retry_backoff_ms},
        {"pause_after_failures", job.pause_after_failures},
        {"jitter_ms", job.jitter_ms},
        {"dst_gap", job.dst_gap},
        {"dst_overlap", job.dst_overlap},
        {"shard_total", job.shard_total},
        {"at_least_once", job.at_least_once},
        {"enabled", job.enabled},
        {"description", job.description},
        {"next_fire_time", OrNull(job.next_fire_time)},
        {"last_fire_time", OrNull(job.last_fire_time)},
        {"version", job.version},
        {"created_at", job.created_at},
        {"updated_at", job.updated_at},
        {"paused", nullptr},
        // Calendar and bounds (docs/schedules.md).
        {"calendar", job.calendar.empty() ? nlohmann::json(nullptr) : nlohmann::json(job.calendar)},
        {"start_at", OrNull(job.start_at)},
        {"end_at", OrNull(job.end_at)},
        {"max_runs", OrNull(job.max_runs)},
        {"planned_runs", job.planned_runs},
        {"completed_at", OrNull(job.completed_at)},
        {"completed_reason", job.completed_at ? nlohmann::json(job.completed_reason) : nlohmann::json(nullptr)},
    };
    // Who paused it, when and why: shown while paused (a stale record of an edit-enabled job is not).
    if (job.paused && !job.enabled) {
        j["paused"] = {{"by", job.paused->by}, {"at", job.paused->at}, {"note", job.paused->note}};
    }
    if (last_fire) {
        j["last_fire"] = {{"id", last_fire->id},
                          {"status", store::FireStatusName(last_fire->status)},
                          {"kind", store::FireKindName(last_fire->kind)},
                          {"scheduled_time", last_fire->scheduled_time},
                          {"finished_at", OrNull(last_fire->finished_at)}};
    }
    return j;
}

nlohmann::json FireJson(const store::Fire& f) {
    std::optional<std::int64_t> lag;
    // due_at, not scheduled_time: a retry keeps its original scheduled_time and waits out its
    // backoff on purpose; that wait is not dispatch lag.
    // A fire claimed ahead (slave.claim-ahead) left at its due time: no lag, not a negative one.
    if (f.dispatched_at) lag = std::max<std::int64_t>(0, *f.dispatched_at - store::StoredDueAt(f));
    std::optional<std::int64_t> duration;
    if (f.finished_at) {
        if (f.started_at) {
            duration = *f.finished_at - *f.started_at;
        } else if (f.dispatched_at) {
            duration = *f.finished_at - *f.dispatched_at;
        }
    }
    return {
        {"id", f.id},
        {"job_id", f.job_id},
        {"scheduled_time", f.scheduled_time},
        {"due_at", f.due_at},
        {"kind", store::FireKindName(f.kind)},
        {"attempt", f.attempt},
        {"shard_index", f.shard_index},
        {"shard_total", f.shard_total},
        {"epoch", f.epoch},
        {"dispatch_epoch", OrNull(f.dispatch_epoch)},
        {"assigned_node", OrNull(f.assigned_node)},
        {"executor_address", OrNull(f.executor_address)},
        {"status", store::FireStatusName(f.status)},
        {"created_at", f.created_at},
        {"dispatched_at", OrNull(f.dispatched_at)},
        {"started_at", OrNull(f.started_at)},
        {"finished_at", OrNull(f.finished_at)},
        {"result_code", OrNull(f.result_code)},
        {"result_message", OrNull(f.result_message)},
        {"reason", f.reason ? nlohmann::json(store::FireReasonName(*f.reason)) : nlohmann::json(nullptr)},
        {"skipped_until", OrNull(f.skipped_until)},
        {"skipped_count", OrNull(f.skipped_count)},
        {"workflow_run_id", OrNull(f.workflow_run_id)},
        {"workflow_step", OrNull(f.workflow_step)},
        {"lag_ms", OrNull(lag)},
        {"duration_ms", OrNull(duration)},
    };
}

nlohmann::json TokenJson(const store::ApiToken& t) {
    return {{"id", t.id},
            {"name", t.name},
            {"role", store::RoleName(t.role)},
            {"created_at", t.created_at},
            {"last_used_at", OrNull(t.last_used_at)},
            {"revoked_at", OrNull(t.revoked_at)},
            {"apps", t.role == store::Role::kExecutor ? nlohmann::json(t.apps) : nlohmann::json(nullptr)}};
}

}  // namespace sched::web::impl
