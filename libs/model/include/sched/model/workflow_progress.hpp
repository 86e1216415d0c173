#pragma once

/// A workflow run's progress, computed from its step fires (docs/workflows.md "Edges and steps in
/// a run", "Fire keys"). Pure: the master's scan uses it to decide what to start, skip and end;
/// the API uses it to show each step's state. Nothing here reads the database.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sched/common/name_table.hpp"
#include "sched/model/fire.hpp"
#include "sched/model/workflow.hpp"
#include "sched/model/workflow_run.hpp"

namespace sched::model {

/// A step's state in a run (docs/workflows.md, the table of step states).
enum class StepState { kWaiting, kRunning, kSucceeded, kFailed, kSkipped };
/// "waiting", "running", "succeeded", "failed", "skipped" (the API spelling).
inline constexpr auto kStepStateNames =
    MakeNameTable<StepState>({"waiting", "running", "succeeded", "failed", "skipped"});

/// A step's state and the fire that shows it.
struct StepProgress {
    StepState state = StepState::kWaiting;
    /// The generation whose fires gave the state (nullopt: the step has no fire that counts).
    std::optional<int> generation;
    /// The fire that shows the state: of the counted generation, the highest try of the first
    /// shard that did not succeed, else of shard 0. nullopt while waiting.
    std::optional<Fire> fire;
    /// Fires of the counted generation (all shards and tries).
    int fires = 0;
    /// When it became ready: the end of its last parent, or the run's start for a root / the
    /// step a re-run started from (nullopt while some parent has not ended).
    std::optional<std::int64_t> ready_at;
};

/// What the master does next to a run, and each step's state.
struct RunProgress {
    std::vector<StepProgress> steps;  ///< by step index (the definition's order)
    /// Steps to start now, in topological order: every parent ended and every incoming edge
    /// holds (roots at once; the re-run's step at once), with no fire in the current generation.
    std::vector<std::size_t> to_start;
    struct Skip {
        std::size_t step = 0;
        std::string message;  ///< `parent "b" failed (edge on-success)`
    };
    /// Steps to record as skipped (reason upstream), in topological order; skips flow down in
    /// the same evaluation, so a chain below a failed step is skipped at once.
    std::vector<Skip> to_skip;
    /// Set when every step has ended (counting to_skip as skipped, and nothing to start):
    /// succeeded, or failed with `end_reason` naming the first failed step in topological order.
    std::optional<WorkflowRunStatus> end;
    std::optional<std::string> end_reason;
};

/// The run's progress from `fires`: the run's step fires (any order; fires whose
/// workflow_run_id is not the run's, or whose step is not in the graph, are ignored).
///
/// Counting: a step the run's last re-run reset (from_step and its descendants, when
/// generation > 0) counts only fires of the current generation (attempt / 1000 == generation);
/// every other step counts the highest generation it has fires in. Per shard, the fire with the
/// highest try counts. A step is
///   running    when a counted fire is pending, dispatching or running, or ended with its
///              follow-up flag still set (the master has not yet decided on a retry);
///   skipped    when its try-0 fire is a skipped ledger row with reason upstream or run_timeout;
///   succeeded  when every shard's last try succeeded;
///   failed     otherwise (failed, timeout, killed, lost, or skipped by a slave: paused,
///              no_executor, blocked, job_deleted).
/// `graph` must be the run's own definition (WorkflowGraph::Make of run.definition).
RunProgress EvaluateRun(const WorkflowGraph& graph, const WorkflowRun& run, const std::vector<Fire>& fires);

/// The attempt of a step fire's try `attempt_try` in `generation` (docs/workflows.md "Fire keys").
inline int StepAttempt(int generation, int attempt_try) {
    return kStepAttemptStride * generation + attempt_try;
}

}  // namespace sched::model
