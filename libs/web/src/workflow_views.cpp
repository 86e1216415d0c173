// Workflow bodies and answers (impl/workflows.hpp).

#include <string>

#include "impl/context.hpp"
#include "impl/job_input.hpp"
#include "impl/views.hpp"
#include "impl/workflows.hpp"
#include "sched/common/job_vocabulary.hpp"
#include "sched/http/json.hpp"

namespace sched::web::impl {

namespace {

namespace k = wf_key;

http::ApiError Invalid(std::string field, std::string message) {
    return http::ApiError{Code::kInvalidArgument, std::move(message), std::move(field)};
}

template <typename T>
nlohmann::json OrNull(const std::optional<T>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// The first key of `item` (an object) not in `allowed`, reported as "<prefix>.<key>".
void RejectUnknownKeys(const nlohmann::json& item, std::initializer_list<std::string_view> allowed,
                       const std::string& prefix, http::JsonFields& f) {
    for (auto it = item.begin(); it != item.end() && f.ok(); ++it) {
        bool known = false;
        for (auto a : allowed) known = known || a == it.key();
        if (!known) f.Fail(prefix + "." + it.key(), "unknown field");
    }
}

// `steps` or `edges`: an array of objects, bounded before its items are read. nullptr when absent
// or null (the caller keeps what it has), or after a failure recorded in `f`.
const nlohmann::json* BoundedArray(const nlohmann::json& body, const char* key, std::size_t max, http::JsonFields& f) {
    if (!f.ok() || !body.is_object() || !body.contains(key) || body[key].is_null()) return nullptr;
    const auto& value = body[key];
    if (!value.is_array() || value.size() > max) {
        f.Fail(key, "expected an array of at most " + std::to_string(max) + " objects");
        return nullptr;
    }
    for (std::size_t i = 0; i < value.size(); ++i) {
        if (!value[i].is_object()) {
            f.Fail(std::string(key) + "[" + std::to_string(i) + "]", "expected an object");
            return nullptr;
        }
    }
    return &value;
}

nlohmann::json DefinitionStepsJson(const std::vector<store::WorkflowStep>& steps) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& s : steps) out.push_back({{k::kName, s.name}, {k::kJobId, s.job_id}});
    return out;
}

nlohmann::json EdgesJson(const std::vector<store::WorkflowEdge>& edges) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& e : edges) {
        out.push_back({{k::kParent, e.parent},
                       {k::kChild, e.child},
                       {k::kCondition, std::string(store::kEdgeConditionNames.Name(e.condition))}});
    }
    return out;
}

}  // namespace

std::optional<http::ApiError> ReadWorkflowInput(const nlohmann::json& body, const store::Workflow* current,
                                                WorkflowInput& out) {
    const bool create = current == nullptr;
    store::Workflow w = create ? store::Workflow{} : *current;
    http::JsonFields f(body);
    w.name = create ? f.String(k::kName) : f.String(k::kName, w.name);
    w.description = f.String(k::kDescription, w.description);
    std::string schedule_type(ScheduleTypeName(w.schedule_type));
    std::string misfire_policy(MisfirePolicyName(w.misfire_policy));
    schedule_type = f.String(k::kScheduleType, schedule_type);
    w.schedule_expr = f.String(k::kScheduleExpr, w.schedule_expr);
    w.time_zone = f.String(k::kTimeZone, w.time_zone);
    misfire_policy = f.String(k::kMisfirePolicy, misfire_policy);
    w.max_concurrent_runs = static_cast<int>(
        f.Int(k::kMaxConcurrentRuns, w.max_concurrent_runs, {.min = 1, .max = store::kMaxConcurrentRuns}));
    w.run_timeout_ms = f.Int(k::kRunTimeoutMs, w.run_timeout_ms, {.min = 0, .max = store::kMaxRunTimeoutMs});
    w.paused = f.Bool(k::kPaused, w.paused);
    if (create) {
        if (f.ok() && body.contains(k::kVersion)) f.Fail(k::kVersion, "set by the server; leave it out when creating");
    } else {
        out.version = f.Int(k::kVersion, {.min = 1});
    }
    if (const auto* steps = BoundedArray(body, k::kSteps, store::kMaxWorkflowSteps, f)) {
        w.steps.clear();
        for (std::size_t i = 0; i < steps->size() && f.ok(); ++i) {
            const std::string prefix = std::string(k::kSteps) + "[" + std::to_string(i) + "]";
            http::JsonFields item((*steps)[i], prefix);
            store::WorkflowStep step;
            step.name = item.String(k::kName);
            step.job_id = item.Int(k::kJobId, {.min = 1});
            if (item.error()) return *item.error();
            RejectUnknownKeys((*steps)[i], {k::kName, k::kJobId}, prefix, f);
            w.steps.push_back(std::move(step));
        }
    } else if (create && f.ok()) {
        f.Fail(k::kSteps, "required: an array of 1 to " + std::to_string(store::kMaxWorkflowSteps) + " steps");
    }
    if (const auto* edges = BoundedArray(body, k::kEdges, store::kMaxWorkflowEdges, f)) {
        w.edges.clear();
        for (std::size_t i = 0; i < edges->size() && f.ok(); ++i) {
            const std::string prefix = std::string(k::kEdges) + "[" + std::to_string(i) + "]";
            http::JsonFields item((*edges)[i], prefix);
            store::WorkflowEdge edge;
            edge.parent = item.String(k::kParent);
            edge.child = item.String(k::kChild);
            const std::string condition = item.String(
                k::kCondition, std::string(store::kEdgeConditionNames.Name(store::EdgeCondition::kOnSuccess)));
            if (item.error()) return *item.error();
            auto parsed = store::kEdgeConditionNames.Parse(condition);
            if (!parsed) {
                return Invalid(prefix + "." + k::kCondition,
                               prefix + "." + k::kCondition + ": expected on-success, on-failure or always");
            }
            edge.condition = *parsed;
            RejectUnknownKeys((*edges)[i], {k::kParent, k::kChild, k::kCondition}, prefix, f);
            w.edges.push_back(std::move(edge));
        }
    }
    if (f.error()) return *f.error();

    if (auto type = ParseScheduleType(schedule_type); type.ok()) {
        w.schedule_type = *type;
    } else {
        return Invalid(k::kScheduleType, std::string(k::kScheduleType) + ": " + type.status().message());
    }
    if (auto policy = ParseMisfirePolicy(misfire_policy); policy.ok()) {
        w.misfire_policy = *policy;
    } else {
        return Invalid(k::kMisfirePolicy, std::string(k::kMisfirePolicy) + ": " + policy.status().message());
    }
    if (w.time_zone.empty()) w.time_zone = "UTC";
    // The columns' sizes, before the cron library looks at the text.
    for (const auto& [key, value, max] :
         {std::tuple<const char*, const std::string&, std::size_t>{k::kScheduleExpr, w.schedule_expr, kMaxExpr},
          {k::kTimeZone, w.time_zone, kMaxZone}}) {
        if (CodePoints(value) > max) {
            return Invalid(key, std::string(key) + ": at most " + std::to_string(max) + " characters");
        }
    }
    std::string field;
    auto schedule = cron::Schedule::Make(w.schedule_type, w.schedule_expr, w.time_zone, &field);
    if (!schedule.ok()) return Invalid(field.empty() ? k::kScheduleExpr : field, schedule.status().message());
    w.schedule_expr = schedule->expression();
    if (Status valid = store::ValidateWorkflow(w); !valid.ok()) {
        return Invalid(store::WorkflowErrorField(valid), valid.message());
    }
    out.schedule_changed = create || w.schedule_type != current->schedule_type ||
                           w.schedule_expr != current->schedule_expr || w.time_zone != current->time_zone ||
                           w.paused != current->paused;
    out.schedule = *schedule;
    out.workflow = std::move(w);
    return std::nullopt;
}

nlohmann::json WorkflowJson(const store::Workflow& w) {
    return {{k::kId, w.id},
            {k::kName, w.name},
            {k::kDescription, w.description},
            {k::kScheduleType, std::string(ScheduleTypeName(w.schedule_type))},
            {k::kScheduleExpr, w.schedule_expr},
            {k::kTimeZone, w.time_zone},
            {k::kMisfirePolicy, std::string(MisfirePolicyName(w.misfire_policy))},
            {k::kMaxConcurrentRuns, w.max_concurrent_runs},
            {k::kRunTimeoutMs, w.run_timeout_ms},
            {k::kPaused, w.paused},
            {k::kNextFireTime, OrNull(w.next_fire_time)},
            {k::kVersion, w.version},
            {k::kCreatedAt, w.created_at},
            {k::kUpdatedAt, w.updated_at},
            {k::kSteps, DefinitionStepsJson(w.steps)},
            {k::kEdges, EdgesJson(w.edges)}};
}

nlohmann::json WorkflowRunJson(const store::WorkflowRun& run) {
    return {{k::kId, run.id},
            {k::kWorkflowId, run.workflow_id},
            {k::kScheduledTime, run.scheduled_time},
            {k::kKind, std::string(store::kWorkflowRunKindNames.Name(run.kind))},
            {k::kStatus, std::string(store::kWorkflowRunStatusNames.Name(run.status))},
            {k::kReason, OrNull(run.reason)},
            {k::kParams, run.params ? ParamsJson(*run.params) : nlohmann::json(nullptr)},
            {k::kWorkflowVersion, run.workflow_version},
            {k::kGeneration, run.generation},
            {k::kFromStep, OrNull(run.from_step)},
            {k::kCreatedBy, run.created_by},
            {k::kCreatedAt, run.created_at},
            {k::kStartedAt, OrNull(run.started_at)},
            {k::kEndedAt, OrNull(run.ended_at)}};
}

nlohmann::json WorkflowRunDetailJson(const store::WorkflowRun& run, const std::vector<RunStepView>& views) {
    nlohmann::json out = WorkflowRunJson(run);
    nlohmann::json steps = nlohmann::json::array();
    for (std::size_t i = 0; i < run.definition.steps.size(); ++i) {
        const auto& def = run.definition.steps[i];
        const RunStepView view = i < views.size() ? views[i] : RunStepView{"waiting", {}, {}, 0, {}};
        const auto& fire = view.fire;
        std::optional<std::int64_t> fire_id, dispatched_at, finished_at, lag_ms;
        std::optional<std::string> fire_status, reason, message;
        if (fire) {
            fire_id = fire->id;
            fire_status = std::string(store::FireStatusName(fire->status));
            if (fire->reason) reason = std::string(store::FireReasonName(*fire->reason));
            message = fire->result_message;
            dispatched_at = fire->dispatched_at;
            finished_at = fire->finished_at;
            if (fire->dispatched_at && view.ready_at) lag_ms = *fire->dispatched_at - *view.ready_at;
        }
        steps.push_back({{k::kName, def.name},
                         {k::kJobId, def.job_id},
                         {k::kState, view.state},
                         {k::kGeneration, OrNull(view.generation)},
                         {k::kFireId, OrNull(fire_id)},
                         {k::kFireStatus, OrNull(fire_status)},
                         {k::kReason, OrNull(reason)},
                         {k::kMessage, OrNull(message)},
                         {k::kAttempts, view.attempts},
                         {k::kReadyAt, OrNull(view.ready_at)},
                         {k::kDispatchedAt, OrNull(dispatched_at)},
                         {k::kFinishedAt, OrNull(finished_at)},
                         {k::kLagMs, OrNull(lag_ms)}});
    }
    out[k::kSteps] = std::move(steps);
    out[k::kEdges] = EdgesJson(run.definition.edges);
    return out;
}

std::string WorkflowField(const Status& s) {
    std::string field = store::WorkflowErrorField(s);
    return field.empty() ? RepositoryErrorField(s) : field;
}

}  // namespace sched::web::impl
