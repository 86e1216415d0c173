#pragma once

/// The `workflows:` section of the declarative file `schedctl apply -f` and `diff -f` read
/// (docs/schedctl.md "Workflows in the file"), beside `calendars:` and `jobs:`:
///
///     workflows:
///       - name: nightly-etl              # the key: one workflow per name
///         schedule_type: cron
///         schedule_expr: "0 0 2 * * ?"
///         steps:                         # a step names its job, not the job's id
///           - {name: extract, job: etl-extract}
///           - {name: load, job: etl-load}
///         edges:
///           - {parent: extract, child: load, condition: on-success}
///
/// Fields are the workflow API's (`WorkflowInput` in openapi.json) minus `version`; `id` is
/// refused. A step's `job` is a job's name: the file may declare that job too, and its id exists
/// only once apply has created it, so the plan compares steps by job name and apply turns names
/// into ids (ResolveStepJobs) after the jobs are applied. `paused`, like a job's `enabled`, is
/// managed only when the file states it. An edge's condition left out is on-success (the API's
/// default), so that diff compares like with like. Bounded like the rest of the file: at most
/// kMaxWorkflowsPerFile workflows, kMaxWorkflowSteps steps and kMaxWorkflowEdges edges each;
/// every problem names the file, the line, the workflow (index and name) and the field.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "declared_object.hpp"
#include "plan.hpp"
#include "sched/common/status.hpp"

namespace sched::ctl {

inline constexpr std::size_t kMaxWorkflowsPerFile = 1000;
inline constexpr std::size_t kMaxWorkflowSteps = 64;   ///< the API's limit
inline constexpr std::size_t kMaxWorkflowEdges = 256;  ///< the API's limit
inline constexpr std::size_t kMaxWorkflowNameBytes = 128;
inline constexpr std::size_t kMaxWorkflowDescriptionBytes = 1024;
inline constexpr std::size_t kMaxStepNameBytes = 64;
inline constexpr std::size_t kMaxWorkflowFieldBytes = 255;  ///< schedule_expr, time_zone, a job's name

/// One workflow as the file declares it; `steps` as [{"name", "job": a job's name}].
using WorkflowSpec = DeclaredObject;

/// The `workflows:` section of `text` (the contents of `file_name`). nullopt when the file has
/// no `workflows:` key (then apply leaves the cluster's workflows alone, even with --prune).
/// kInvalidArgument: "jobs.yaml: line 7: workflows[0] (name \"etl\"): steps[1].job: required".
Result<std::optional<std::vector<WorkflowSpec>>> ParseWorkflowSection(std::string_view text,
                                                                      std::string_view file_name);

/// One workflow for `workflows create -f` / `update ID -f`: a YAML (or JSON) mapping of the same
/// fields; with `partial` (update) nothing is required and `version` is accepted.
Result<nlohmann::json> ParseWorkflowDocument(std::string_view text, std::string_view file_name, bool partial);

/// Every field a workflow in the file may hold, in the API's order.
const std::vector<std::string>& WorkflowFileFields();

/// The server's workflows (`workflows`, the items of GET /api/v1/workflows) with each step's
/// `job_id` replaced by `job`, that job's name in `jobs` (the items of GET /api/v1/jobs), or
/// "#<id>" for an id no listed job has: the form the file's steps are compared in.
nlohmann::json StepsByJobName(const nlohmann::json& workflows, const nlohmann::json& jobs);

/// Compares `desired` with `current` (already through StepsByJobName), as PlanChanges does for
/// jobs: a field left out is compared with the API's default. PUT bodies carry every managed field
/// but the name. With `prune`, current workflows missing from the file are deleted.
Plan PlanWorkflowChanges(const std::vector<WorkflowSpec>& desired, const nlohmann::json& current, bool prune);

/// A body's steps with each `job` (a name) replaced by `job_id`, from `jobs` (the items of GET
/// /api/v1/jobs). kNotFound "steps[1].job: no job named \"x\"" when a name is not there.
Result<nlohmann::json> ResolveStepJobs(const nlohmann::json& body, const nlohmann::json& jobs);

}  // namespace sched::ctl
