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

    static constexpr auto Fields() {
        return std::tuple{Field("name", &WorkflowStepView::name), Field("job_id", &WorkflowStepView::job_id)};
    }
};

/// An edge of the DAG: `child` may run after `parent` ends as `condition` says.
struct WorkflowEdgeView {
    std::string parent;
    std::string child;
    std::string condition;  ///< on-success, on-failure or always

    static constexpr auto Fields() {
        return std::tuple{Field("parent", &WorkflowEdgeView::parent), Field("child", &WorkflowEdgeView::child),
                          Field("condition", &WorkflowEdgeView::condition)};
    }
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

    static constexpr auto Fields() {
        return std::tuple{Field("id", &WorkflowView::id),
                          Field("name", &WorkflowView::name),
                          Field("description", &WorkflowView::description),
                          Field("schedule_type", &WorkflowView::schedule_type),
                          Field("schedule_expr", &WorkflowView::schedule_expr),
                          Field("time_zone", &WorkflowView::time_zone),
                          Field("misfire_policy", &WorkflowView::misfire_policy),
                          Field("max_concurrent_runs", &WorkflowView::max_concurrent_runs),
                          Field("run_timeout_ms", &WorkflowView::run_timeout_ms),
                          Field("paused", &WorkflowView::paused),
                          Field("next_fire_time", &WorkflowView::next_fire_time),
                          Field("version", &WorkflowView::version),
                          Field("created_at", &WorkflowView::created_at),
                          Field("updated_at", &WorkflowView::updated_at),
                          Field("steps", &WorkflowView::steps),
                          Field("edges", &WorkflowView::edges),
                          Field("managed_by", &WorkflowView::managed_by)};
    }
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

    static constexpr auto Fields() {
        return std::tuple{Field("id", &WorkflowRunView::id),
                          Field("workflow_id", &WorkflowRunView::workflow_id),
                          Field("scheduled_time", &WorkflowRunView::scheduled_time),
                          Field("kind", &WorkflowRunView::kind),
                          Field("status", &WorkflowRunView::status),
                          Field("reason", &WorkflowRunView::reason),
                          Field("params", &WorkflowRunView::params),
                          Field("workflow_version", &WorkflowRunView::workflow_version),
                          Field("generation", &WorkflowRunView::generation),
                          Field("from_step", &WorkflowRunView::from_step),
                          Field("created_by", &WorkflowRunView::created_by),
                          Field("created_at", &WorkflowRunView::created_at),
                          Field("started_at", &WorkflowRunView::started_at),
                          Field("ended_at", &WorkflowRunView::ended_at)};
    }
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

    static constexpr auto Fields() {
        return std::tuple{Field("name", &WorkflowRunStepView::name),
                          Field("job_id", &WorkflowRunStepView::job_id),
                          Field("state", &WorkflowRunStepView::state),
                          Field("generation", &WorkflowRunStepView::generation),
                          Field("fire_id", &WorkflowRunStepView::fire_id),
                          Field("fire_status", &WorkflowRunStepView::fire_status),
                          Field("reason", &WorkflowRunStepView::reason),
                          Field("message", &WorkflowRunStepView::message),
                          Field("attempts", &WorkflowRunStepView::attempts),
                          Field("ready_at", &WorkflowRunStepView::ready_at),
                          Field("dispatched_at", &WorkflowRunStepView::dispatched_at),
                          Field("finished_at", &WorkflowRunStepView::finished_at),
                          Field("lag_ms", &WorkflowRunStepView::lag_ms)};
    }
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
