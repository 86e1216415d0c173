#pragma once

/// Workflows and their runs as the API answers them (schemas Workflow, WorkflowRun,
/// WorkflowRunDetail, WorkflowRunStep; docs/workflows.md).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sched/api/view.hpp"

namespace sched::api {

/// A step of a workflow's definition: its name and the job it runs.
struct WorkflowStepView {
    std::string name;
    std::int64_t job_id = 0;

    SCHED_API_FIELDS(WorkflowStepView, name, job_id)
};

/// An edge of the DAG: `child` may run after `parent` ends as `condition` says.
struct WorkflowEdgeView {
    std::string parent;
    std::string child;
    std::string condition;  ///< on-success, on-failure or always

    SCHED_API_FIELDS(WorkflowEdgeView, parent, child, condition)
};

/// Schema Workflow.
struct WorkflowView {
    std::int64_t id = 0;
    std::string name;
    std::string description;
    std::string schedule_type;
    std::string schedule_expr;
    std::string time_zone;
    std::string misfire_policy;
    std::int64_t max_concurrent_runs = 0;
    std::int64_t run_timeout_ms = 0;
    bool paused = false;
    std::optional<std::int64_t> next_fire_time;
    std::int64_t version = 0;
    std::int64_t created_at = 0;
    std::int64_t updated_at = 0;
    std::vector<WorkflowStepView> steps;
    std::vector<WorkflowEdgeView> edges;
    std::optional<std::string> managed_by;  ///< the file that declares the workflow; null: made by hand

    SCHED_API_FIELDS(WorkflowView, id, name, description, schedule_type, schedule_expr, time_zone, misfire_policy,
                     max_concurrent_runs, run_timeout_ms, paused, next_fire_time, version, created_at, updated_at,
                     steps, edges, managed_by)
};

/// Schema WorkflowRun: one run of a workflow, without its steps.
struct WorkflowRunView {
    std::int64_t id = 0;
    std::int64_t workflow_id = 0;
    std::int64_t scheduled_time = 0;
    std::string kind;
    std::string status;
    std::optional<std::string> reason;
    nlohmann::json params;  ///< a manual run's params (any JSON value); null: each step's job's own
    std::int64_t workflow_version = 0;
    std::int64_t generation = 0;
    std::optional<std::string> from_step;
    std::string created_by;
    std::int64_t created_at = 0;
    std::optional<std::int64_t> started_at;
    std::optional<std::int64_t> ended_at;

    SCHED_API_FIELDS(WorkflowRunView, id, workflow_id, scheduled_time, kind, status, reason, params, workflow_version,
                     generation, from_step, created_by, created_at, started_at, ended_at)
};

/// Schema WorkflowRunStep: a step of a run, with the fire that shows its state.
struct WorkflowRunStepView {
    std::string name;
    std::int64_t job_id = 0;
    std::string state;
    std::optional<std::int64_t> generation;
    std::optional<std::int64_t> fire_id;
    std::optional<std::string> fire_status;
    std::optional<std::string> reason;
    std::optional<std::string> message;
    std::int64_t attempts = 0;
    std::optional<std::int64_t> ready_at;
    std::optional<std::int64_t> dispatched_at;
    std::optional<std::int64_t> finished_at;
    std::optional<std::int64_t> lag_ms;

    SCHED_API_FIELDS(WorkflowRunStepView, name, job_id, state, generation, fire_id, fire_status, reason, message,
                     attempts, ready_at, dispatched_at, finished_at, lag_ms)
};

/// Schema WorkflowRunDetail: a run with each step's state and the definition's edges.
struct WorkflowRunDetailView : WorkflowRunView {
    std::vector<WorkflowRunStepView> steps;
    std::vector<WorkflowEdgeView> edges;

    static constexpr auto Fields() {
        return std::tuple_cat(WorkflowRunView::Fields(), std::tuple{Field("steps", &WorkflowRunDetailView::steps),
                                                                    Field("edges", &WorkflowRunDetailView::edges)});
    }
};

}  // namespace sched::api
