#pragma once

/// Workflows: named DAGs of steps with their own schedule (docs/workflows.md; stored by
/// store::WorkflowRepository).
///
/// A step is an existing job (by id): its fires are ordinary fires of that job, so the job's
/// routing, timeout, retries and block strategy apply. Edges carry an EdgeCondition. A definition
/// is checked by ValidateWorkflow (bounds, names, a DAG); WorkflowGraph answers the planner's
/// questions about a valid one (roots, parents, children, a topological order, what a re-run from
/// a step resets).
///
/// Errors naming a request field: kInvalidArgument messages of this header start with the field
/// and ": " ("steps[2].name: must not be empty", "edges: cycle a -> b -> a"); WorkflowErrorField
/// returns it.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sched/common/job_vocabulary.hpp"
#include "sched/common/name_table.hpp"
#include "sched/common/status.hpp"

namespace sched::model {

/// When an edge lets its child run, by the parent's outcome (docs/workflows.md "Edges").
enum class EdgeCondition {
    kOnSuccess,  ///< the parent succeeded (the default)
    kOnFailure,  ///< the parent failed (after its retries; also timeout, killed, lost)
    kAlways,     ///< the parent ended either way, or was skipped
};
/// "on-success", "on-failure", "always" (the stored and API spelling).
inline constexpr auto kEdgeConditionNames = MakeNameTable<EdgeCondition>({"on-success", "on-failure", "always"});

/// A workflow run's status (docs/workflows.md "Runs"; table `workflow_run`).
enum class WorkflowRunStatus {
    kRunning,    ///< some step has not ended
    kSucceeded,  ///< every step ended and none failed (skipped steps allowed)
    kFailed,     ///< every step ended and at least one failed
    kTimedOut,   ///< run_timeout_ms passed before every step ended
    kSkipped,    ///< the scheduled time got no run: max_concurrent_runs were running (reason overlap)
};
/// "running", "succeeded", "failed", "timed-out", "skipped" (the stored and API spelling).
inline constexpr auto kWorkflowRunStatusNames =
    MakeNameTable<WorkflowRunStatus>({"running", "succeeded", "failed", "timed-out", "skipped"});

// Bounds of a definition (ValidateWorkflow).
inline constexpr std::size_t kMaxWorkflowSteps = 64;
inline constexpr std::size_t kMaxWorkflowEdges = 256;
inline constexpr std::size_t kMaxStepNameLength = 64;
inline constexpr std::size_t kMaxWorkflowNameLength = 128;
inline constexpr std::size_t kMaxWorkflowDescriptionLength = 1024;
inline constexpr int kMaxConcurrentRuns = 100;
/// 7 days: a run older than that is not waiting for anything a person would still want.
inline constexpr std::int64_t kMaxRunTimeoutMs = 7LL * 24 * 3600 * 1000;

/// A step's fires in a run are `job_fire` rows of the step's job at the run's scheduled time,
/// kind workflow, attempt = kStepAttemptStride * generation + try (try 0 .. the job's retry_max,
/// at most 100): the run's re-runs never meet an earlier generation's key (docs/workflows.md
/// "Fire keys"). A run is re-run at most kMaxRunGeneration times.
inline constexpr int kStepAttemptStride = 1000;
inline constexpr int kMaxRunGeneration = 1000;

struct WorkflowStep {
    std::string name;  ///< 1-64 characters of [A-Za-z0-9_.-], unique in the workflow
    std::int64_t job_id = 0;
    friend bool operator==(const WorkflowStep&, const WorkflowStep&) = default;
};

struct WorkflowEdge {
    std::string parent;  ///< a step name
    std::string child;   ///< a step name
    EdgeCondition condition = EdgeCondition::kOnSuccess;
    friend bool operator==(const WorkflowEdge&, const WorkflowEdge&) = default;
};

struct Workflow {
    std::int64_t id = 0;
    std::string name;  ///< 1-128 characters of [A-Za-z0-9_.-], unique
    std::string description;
    /// The schedule, in the job vocabulary (sched/common/job_vocabulary.hpp). The store does not
    /// parse schedule_expr: the API checks it with cron::Schedule as for a job.
    ScheduleType schedule_type = ScheduleType::kManual;
    std::string schedule_expr;
    std::string time_zone = "UTC";
    MisfirePolicy misfire_policy = MisfirePolicy::kFireOnceNow;
    /// Overlap policy: at most this many runs `running` at once (1..100); a scheduled time that
    /// finds them all running gets a run `skipped` with reason overlap.
    int max_concurrent_runs = 1;
    std::int64_t run_timeout_ms = 0;  ///< 0 = none; at most kMaxRunTimeoutMs
    bool paused = false;
    /// The next scheduled time (NULL: paused, manual, or no time left); set by the API on
    /// create/update/resume and by the master as it plans runs.
    std::optional<std::int64_t> next_fire_time;
    std::int64_t version = 0;
    std::int64_t created_at = 0;
    std::int64_t updated_at = 0;
    /// The file that declares the workflow (`schedctl apply`; migration 018), or none: as a job's.
    std::optional<std::string> managed_by;
    std::vector<WorkflowStep> steps;  ///< in the order given
    std::vector<WorkflowEdge> edges;  ///< in the order given
};

/// The graph checks, in this order, each refusal kInvalidArgument naming the first offending
/// field: `steps` (none, or more than 64), `edges` (more than 256), `steps[i].name` (empty, longer
/// than 64, a character outside [A-Za-z0-9_.-], or the name of an earlier step), `steps[i].job_id`
/// (not positive), `edges[i].parent` / `edges[i].child` (no such step), `edges[i].child` (the
/// parent itself: "cycle a -> a"), `edges[i]` (the same parent -> child as an earlier edge), and
/// `edges` for a cycle, named with its path ("edges: cycle a -> b -> c -> a"). Names from the
/// input are quoted cut to 64 characters with bytes outside printable ASCII shown as '?'. Pure;
/// linear in steps + edges, nothing recursive.
Status ValidateWorkflowGraph(const std::vector<WorkflowStep>& steps, const std::vector<WorkflowEdge>& edges);

/// ValidateWorkflowGraph plus the workflow's own fields: `name` (1-128 of [A-Za-z0-9_.-]),
/// `description` (at most 1024 bytes), `max_concurrent_runs` (1..100), `run_timeout_ms`
/// (0..kMaxRunTimeoutMs). Not the schedule (the API parses it with the cron library).
Status ValidateWorkflow(const Workflow& workflow);

/// A name from the input as a message shows it: in double quotes, at most 64 characters (then
/// "..."), bytes outside printable ASCII shown as '?'.
std::string QuotedName(std::string_view text);
/// The path of a field of a list item in a message: FieldPath("steps", 2, "job_id") is
/// "steps[2].job_id", FieldPath("edges", 0) is "edges[0]".
std::string FieldPath(std::string_view list, std::size_t i, std::string_view field = "");

/// The field a kInvalidArgument or kFailedPrecondition message of this header starts with
/// ("steps[2].job_id"), or "" (other codes, or no field prefix).
std::string WorkflowErrorField(const Status& status);

/// The graph of a valid definition, by step index (the order of `steps`). Immutable and cheap to
/// query: the planner's view of a run's definition.
class WorkflowGraph {
  public:
    struct Link {
        std::size_t step = 0;  ///< the other end's index
        EdgeCondition condition = EdgeCondition::kOnSuccess;
    };

    /// ValidateWorkflowGraph's refusals, or the graph.
    static Result<WorkflowGraph> Make(std::vector<WorkflowStep> steps, const std::vector<WorkflowEdge>& edges);

    std::size_t size() const { return steps_.size(); }
    const WorkflowStep& step(std::size_t i) const { return steps_[i]; }
    std::optional<std::size_t> IndexOf(std::string_view name) const;
    /// Incoming edges of step i, in edge order.
    const std::vector<Link>& Parents(std::size_t i) const { return parents_[i]; }
    /// Outgoing edges of step i, in edge order.
    const std::vector<Link>& Children(std::size_t i) const { return children_[i]; }
    /// Steps without parents, in step order (at least one: the graph is acyclic and not empty).
    std::vector<std::size_t> Roots() const;
    /// Every step once, each after all its parents; ties in step order (deterministic).
    const std::vector<std::size_t>& TopologicalOrder() const { return order_; }
    /// Step i and every step reachable from it, in topological order: what a re-run from step i
    /// runs again (docs/workflows.md "Re-run from a step").
    std::vector<std::size_t> Descendants(std::size_t i) const;

  private:
    WorkflowGraph() = default;

    std::vector<WorkflowStep> steps_;
    std::vector<std::vector<Link>> parents_;
    std::vector<std::vector<Link>> children_;
    std::vector<std::size_t> order_;
};

}  // namespace sched::model
