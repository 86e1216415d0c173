#pragma once

/// A workflow run: one per (workflow, scheduled time) (docs/workflows.md "Runs"; stored by
/// store::WorkflowRunRepository). It holds the run's status and a copy of the definition it
/// follows; the state of each step is computed from the step fires (EvaluateRun), not stored.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sched/common/name_table.hpp"
#include "sched/common/status.hpp"
#include "sched/model/workflow.hpp"

namespace sched::model {

/// How a run came to be: a scheduled time of the workflow, or the API's trigger.
enum class WorkflowRunKind { kSchedule, kManual };
/// "schedule", "manual" (the stored and API spelling).
inline constexpr auto kWorkflowRunKindNames = MakeNameTable<WorkflowRunKind>({"schedule", "manual"});

/// The steps and edges a run follows, copied from the workflow when the run is created.
struct WorkflowDefinition {
    std::vector<WorkflowStep> steps;
    std::vector<WorkflowEdge> edges;
    friend bool operator==(const WorkflowDefinition&, const WorkflowDefinition&) = default;
};

/// {"steps":[{"name":..,"job_id":..}],"edges":[{"parent":..,"child":..,"condition":..}]}, the
/// stored form of workflow_run.definition.
std::string WorkflowDefinitionToJson(const WorkflowDefinition& definition);
/// The inverse, checked with ValidateWorkflowGraph: kInvalidArgument naming what is wrong (a
/// stored copy is written by this build's writer, so an error here means a damaged row).
Result<WorkflowDefinition> ParseWorkflowDefinition(std::string_view json);

struct WorkflowRun {
    std::int64_t id = 0;
    std::int64_t workflow_id = 0;
    std::int64_t scheduled_time = 0;  ///< epoch ms; the run's key with workflow_id
    WorkflowRunKind kind = WorkflowRunKind::kSchedule;
    WorkflowRunStatus status = WorkflowRunStatus::kRunning;
    std::optional<std::string> reason;  ///< why it failed, timed out or was skipped (at most 512 bytes)
    std::optional<std::string> params;  ///< a manual run's params, passed to every step; nullopt: each job's own
    std::int64_t workflow_version = 0;  ///< the workflow version the definition was copied from
    WorkflowDefinition definition;
    int generation = 0;                    ///< re-runs so far (at most kMaxRunGeneration)
    std::optional<std::string> from_step;  ///< the step the last re-run started from
    std::string created_by;                ///< token name, or "scheduler"
    std::int64_t created_at = 0;
    std::optional<std::int64_t> started_at;
    std::optional<std::int64_t> ended_at;
    std::int64_t updated_at = 0;
};

}  // namespace sched::model
