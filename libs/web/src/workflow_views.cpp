// Workflow bodies and answers (impl/workflows.hpp).

#include <string>

#include "impl/context.hpp"
#include "impl/job_input.hpp"
#include "impl/views.hpp"
#include "impl/workflows.hpp"
#include "sched/api/workflows.hpp"
#include "sched/common/job_vocabulary.hpp"
#include "sched/http/json.hpp"

namespace sched::web::impl {

namespace {

namespace k = wf_key;

http::ApiError Invalid(std::string field, std::string message) {
    return http::ApiError{Code::kInvalidArgument, std::move(message), std::move(field)};
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

// The objects of `items` (BoundedArray's answer for `key`) in place of `out`'s: `read` reads one
// from `item`, whose errors name "<key>[<i>].<field>", and may refuse what it read; an item may
// carry only the keys in `allowed`. Stops at the first error: a field's (before `read`'s refusal)
// is returned, an unknown key is recorded in `f`.
template <typename T, typename Read>
std::optional<http::ApiError> ReadItems(const nlohmann::json& items, const char* key,
                                        std::initializer_list<std::string_view> allowed, http::JsonFields& f,
                                        std::vector<T>& out, const Read& read) {
    out.clear();
    for (std::size_t i = 0; i < items.size() && f.ok(); ++i) {
        const std::string prefix = std::string(key) + "[" + std::to_string(i) + "]";
        http::JsonFields item(items[i], prefix);
        T value;
        std::optional<http::ApiError> refused = read(item, prefix, value);
        if (item.error()) return *item.error();
        if (refused) return refused;
        RejectUnknownKeys(items[i], allowed, prefix, f);
        out.push_back(std::move(value));
    }
    return std::nullopt;
}

std::vector<api::WorkflowStepView> DefinitionSteps(const std::vector<model::WorkflowStep>& steps) {
    std::vector<api::WorkflowStepView> out;
    out.reserve(steps.size());
    for (const auto& s : steps) out.push_back({.name = s.name, .job_id = s.job_id});
    return out;
}

std::vector<api::WorkflowEdgeView> Edges(const std::vector<model::WorkflowEdge>& edges) {
    std::vector<api::WorkflowEdgeView> out;
    out.reserve(edges.size());
    for (const auto& e : edges) {
        out.push_back({.parent = e.parent,
                       .child = e.child,
                       .condition = std::string(model::kEdgeConditionNames.Name(e.condition))});
    }
    return out;
}

api::WorkflowRunView WorkflowRunViewOf(const model::WorkflowRun& run) {
    api::WorkflowRunView v;
    v.id = run.id;
    v.workflow_id = run.workflow_id;
    v.scheduled_time = run.scheduled_time;
    v.kind = model::kWorkflowRunKindNames.Name(run.kind);
    v.status = model::kWorkflowRunStatusNames.Name(run.status);
    v.reason = run.reason;
    v.params = run.params ? ParamsJson(*run.params) : nlohmann::json(nullptr);
    v.workflow_version = run.workflow_version;
    v.generation = run.generation;
    v.from_step = run.from_step;
    v.created_by = run.created_by;
    v.created_at = run.created_at;
    v.started_at = run.started_at;
    v.ended_at = run.ended_at;
    return v;
}

}  // namespace

std::optional<http::ApiError> ReadWorkflowInput(const nlohmann::json& body, const model::Workflow* current,
                                                WorkflowInput& out) {
    const bool create = current == nullptr;
    model::Workflow w = create ? model::Workflow{} : *current;
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
        f.Int(k::kMaxConcurrentRuns, w.max_concurrent_runs, {.min = 1, .max = model::kMaxConcurrentRuns}));
    w.run_timeout_ms = f.Int(k::kRunTimeoutMs, w.run_timeout_ms, {.min = 0, .max = model::kMaxRunTimeoutMs});
    w.paused = f.Bool(k::kPaused, w.paused);
    if (f.ok()) {
        if (auto invalid = ReadManagedBy(body, w.managed_by)) return invalid;
    }
    if (create) {
        if (f.ok() && body.contains(k::kVersion)) f.Fail(k::kVersion, "set by the server; leave it out when creating");
    } else {
        out.version = f.Int(k::kVersion, {.min = 1});
    }
    if (const auto* steps = BoundedArray(body, k::kSteps, model::kMaxWorkflowSteps, f)) {
        const auto read = [](http::JsonFields& item, const std::string&,
                             model::WorkflowStep& step) -> std::optional<http::ApiError> {
            step.name = item.String(k::kName);
            step.job_id = item.Int(k::kJobId, {.min = 1});
            return std::nullopt;
        };
        if (auto invalid = ReadItems(*steps, k::kSteps, {k::kName, k::kJobId}, f, w.steps, read)) return invalid;
    } else if (create && f.ok()) {
        f.Fail(k::kSteps, "required: an array of 1 to " + std::to_string(model::kMaxWorkflowSteps) + " steps");
    }
    if (const auto* edges = BoundedArray(body, k::kEdges, model::kMaxWorkflowEdges, f)) {
        const auto read = [](http::JsonFields& item, const std::string& prefix,
                             model::WorkflowEdge& edge) -> std::optional<http::ApiError> {
            edge.parent = item.String(k::kParent);
            edge.child = item.String(k::kChild);
            const std::string condition = item.String(
                k::kCondition, std::string(model::kEdgeConditionNames.Name(model::EdgeCondition::kOnSuccess)));
            auto parsed = model::kEdgeConditionNames.Parse(condition);
            if (!parsed) {
                return Invalid(prefix + "." + k::kCondition,
                               prefix + "." + k::kCondition + ": expected on-success, on-failure or always");
            }
            edge.condition = *parsed;
            return std::nullopt;
        };
        if (auto invalid = ReadItems(*edges, k::kEdges, {k::kParent, k::kChild, k::kCondition}, f, w.edges, read)) {
            return invalid;
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
    if (Status valid = model::ValidateWorkflow(w); !valid.ok()) {
        return Invalid(model::WorkflowErrorField(valid), valid.message());
    }
    out.schedule_changed = create || w.schedule_type != current->schedule_type ||
                           w.schedule_expr != current->schedule_expr || w.time_zone != current->time_zone ||
                           w.paused != current->paused;
    out.schedule = *schedule;
    out.workflow = std::move(w);
    return std::nullopt;
}

nlohmann::json WorkflowJson(const model::Workflow& w) {
    return api::ToJson(api::WorkflowView{.id = w.id,
                                         .name = w.name,
                                         .description = w.description,
                                         .schedule_type = std::string(ScheduleTypeName(w.schedule_type)),
                                         .schedule_expr = w.schedule_expr,
                                         .time_zone = w.time_zone,
                                         .misfire_policy = std::string(MisfirePolicyName(w.misfire_policy)),
                                         .max_concurrent_runs = w.max_concurrent_runs,
                                         .run_timeout_ms = w.run_timeout_ms,
                                         .paused = w.paused,
                                         .next_fire_time = w.next_fire_time,
                                         .version = w.version,
                                         .created_at = w.created_at,
                                         .updated_at = w.updated_at,
                                         .steps = DefinitionSteps(w.steps),
                                         .edges = Edges(w.edges),
                                         .managed_by = w.managed_by});
}

nlohmann::json WorkflowRunJson(const model::WorkflowRun& run) {
    return api::ToJson(WorkflowRunViewOf(run));
}

nlohmann::json WorkflowRunDetailJson(const model::WorkflowRun& run, const std::vector<RunStepView>& views) {
    api::WorkflowRunDetailView out;
    static_cast<api::WorkflowRunView&>(out) = WorkflowRunViewOf(run);
    for (std::size_t i = 0; i < run.definition.steps.size(); ++i) {
        const auto& def = run.definition.steps[i];
        const RunStepView view = i < views.size() ? views[i] : RunStepView{"waiting", {}, {}, 0, {}};
        api::WorkflowRunStepView step{.name = def.name,
                                      .job_id = def.job_id,
                                      .state = view.state,
                                      .generation = view.generation,
                                      .attempts = view.attempts,
                                      .ready_at = view.ready_at};
        if (const auto& fire = view.fire) {
            step.fire_id = fire->id;
            step.fire_status = std::string(model::FireStatusName(fire->status));
            if (fire->reason) step.reason = std::string(model::FireReasonName(*fire->reason));
            step.message = fire->result_message;
            step.dispatched_at = fire->dispatched_at;
            step.finished_at = fire->finished_at;
            if (fire->dispatched_at && view.ready_at) step.lag_ms = *fire->dispatched_at - *view.ready_at;
        }
        out.steps.push_back(std::move(step));
    }
    out.edges = Edges(run.definition.edges);
    return api::ToJson(out);
}

std::string WorkflowField(const Status& s) {
    std::string field = model::WorkflowErrorField(s);
    return field.empty() ? RepositoryErrorField(s) : field;
}

}  // namespace sched::web::impl
