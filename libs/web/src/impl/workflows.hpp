#pragma once

// The bodies the workflow routes read (workflows_api.cpp; docs/workflows.md, OpenAPI schemas
// WorkflowInput, WorkflowEdgeInput, WorkflowRerunInput) and the fields their errors name; the
// answers are written from the views of sched/api/workflows.hpp (schemas Workflow, WorkflowRun,
// WorkflowRunDetail, WorkflowRunStep).

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sched/cron/schedule.hpp"
#include "sched/http/message.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/workflow.hpp"
#include "sched/store/workflow_run.hpp"

namespace sched::web::impl {

/// The keys of the workflow bodies and of the fields errors name.
namespace wf_key {
inline constexpr const char* kId = "id";
inline constexpr const char* kName = "name";
inline constexpr const char* kDescription = "description";
inline constexpr const char* kScheduleType = "schedule_type";
inline constexpr const char* kScheduleExpr = "schedule_expr";
inline constexpr const char* kTimeZone = "time_zone";
inline constexpr const char* kMisfirePolicy = "misfire_policy";
inline constexpr const char* kMaxConcurrentRuns = "max_concurrent_runs";
inline constexpr const char* kRunTimeoutMs = "run_timeout_ms";
inline constexpr const char* kPaused = "paused";
inline constexpr const char* kManagedBy = "managed_by";
inline constexpr const char* kNextFireTime = "next_fire_time";
inline constexpr const char* kVersion = "version";
inline constexpr const char* kCreatedAt = "created_at";
inline constexpr const char* kUpdatedAt = "updated_at";
inline constexpr const char* kSteps = "steps";
inline constexpr const char* kEdges = "edges";
// A step of the definition, and an edge.
inline constexpr const char* kJobId = "job_id";
inline constexpr const char* kParent = "parent";
inline constexpr const char* kChild = "child";
inline constexpr const char* kCondition = "condition";
// A run.
inline constexpr const char* kWorkflowId = "workflow_id";
inline constexpr const char* kScheduledTime = "scheduled_time";
inline constexpr const char* kKind = "kind";
inline constexpr const char* kStatus = "status";
inline constexpr const char* kReason = "reason";
inline constexpr const char* kParams = "params";
inline constexpr const char* kWorkflowVersion = "workflow_version";
inline constexpr const char* kGeneration = "generation";
inline constexpr const char* kFromStep = "from_step";
inline constexpr const char* kCreatedBy = "created_by";
inline constexpr const char* kStartedAt = "started_at";
inline constexpr const char* kEndedAt = "ended_at";
// A step of a run (besides name, job_id, generation, reason).
inline constexpr const char* kState = "state";
inline constexpr const char* kFireId = "fire_id";
inline constexpr const char* kFireStatus = "fire_status";
inline constexpr const char* kMessage = "message";
inline constexpr const char* kAttempts = "attempts";
inline constexpr const char* kReadyAt = "ready_at";
inline constexpr const char* kDispatchedAt = "dispatched_at";
inline constexpr const char* kFinishedAt = "finished_at";
inline constexpr const char* kLagMs = "lag_ms";
}  // namespace wf_key

/// The fields a create or update body may carry (schema WorkflowInput), and those of the
/// Workflow shape it may echo back but not set.
inline constexpr std::array<std::string_view, 13> kWorkflowFields = {
    wf_key::kName,          wf_key::kDescription,       wf_key::kScheduleType, wf_key::kScheduleExpr, wf_key::kTimeZone,
    wf_key::kMisfirePolicy, wf_key::kMaxConcurrentRuns, wf_key::kRunTimeoutMs, wf_key::kPaused,       wf_key::kSteps,
    wf_key::kEdges,         wf_key::kVersion,           wf_key::kManagedBy};
inline constexpr std::array<std::string_view, 4> kWorkflowReadOnly = {wf_key::kId, wf_key::kNextFireTime,
                                                                      wf_key::kCreatedAt, wf_key::kUpdatedAt};

/// A workflow body after validation.
struct WorkflowInput {
    model::Workflow workflow;
    std::int64_t version = 0;  ///< the version an update was based on
    /// The schedule as the cron library parsed it (manual included).
    std::optional<cron::Schedule> schedule;
    /// Type, expression, zone or paused differ from the stored workflow (always on create).
    bool schedule_changed = true;
};

/// Reads a create (current == nullptr) or an update (fields left out keep current's values; the
/// version is required) into `out`: JSON types, array bounds before their items
/// (kMaxWorkflowSteps, kMaxWorkflowEdges), the vocabulary, the schedule (cron::Schedule), then
/// model::ValidateWorkflow. nullopt, or the 400 naming the first wrong field ("steps[1].name").
/// Unknown top-level fields are the caller's check (kWorkflowFields); unknown fields of a step or
/// an edge are refused here.
std::optional<http::ApiError> ReadWorkflowInput(const nlohmann::json& body, const model::Workflow* current,
                                                WorkflowInput& out);

/// Schema Workflow.
nlohmann::json WorkflowJson(const model::Workflow& workflow);
/// Schema WorkflowRun (without steps and edges).
nlohmann::json WorkflowRunJson(const model::WorkflowRun& run);

/// One step of a run as the run's page shows it (schema WorkflowRunStep), from the values
/// EvaluateRun computed: state, the generation counted, the fire that shows the state, how many
/// fires that generation has, and when the step became ready (nullopt: unknown).
struct RunStepView {
    std::string state;
    std::optional<int> generation;
    std::optional<model::Fire> fire;
    int attempts = 0;
    std::optional<std::int64_t> ready_at;
};

/// Schema WorkflowRun with `steps` (one per step of the run's definition, `views[i]` for step i)
/// and `edges` (the definition's).
nlohmann::json WorkflowRunDetailJson(const model::WorkflowRun& run, const std::vector<RunStepView>& views);

/// Which request field a workflow repository error is about: the field its message names
/// (model::WorkflowErrorField), else RepositoryErrorField.
std::string WorkflowField(const Status& s);

}  // namespace sched::web::impl
