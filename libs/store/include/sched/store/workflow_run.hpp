#pragma once

/// Workflow runs: one row per (workflow, scheduled time) in table `workflow_run` (migration 012;
/// docs/workflows.md "Runs"). The row holds the run's status and a copy of the definition it
/// follows; the state of each step is computed from the step fires (job_fire.workflow_run_id), not
/// stored here.
///
/// The session-level calls are for the master's fenced scan and the API's transactions: inserting
/// is insert-if-absent on the key, and every status change is a compare-and-set on the status (and
/// for a re-run the generation), so repeating the same work changes nothing and two parties
/// racing on one run produce one outcome.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <soci/soci.h>

#include "sched/common/name_table.hpp"
#include "sched/common/status.hpp"
#include "sched/db/database.hpp"
#include "sched/store/workflow.hpp"

namespace sched::store {

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

class WorkflowRunRepository {
  public:
    explicit WorkflowRunRepository(db::Database& db) : db_(db) {}

    /// kNotFound when absent.
    Result<WorkflowRun> Get(std::int64_t id);
    /// The workflow's runs, newest first (by id), ids < before_id (0 = from the newest), at most
    /// `limit` (1-1000).
    Result<std::vector<WorkflowRun>> ListForWorkflow(std::int64_t workflow_id, std::int64_t before_id, int limit);

    // ---- session-level, for transactions ----

    /// Inserts the run (its id, created_at and updated_at are assigned; created_at = updated_at =
    /// DB now) unless one exists for (workflow_id, scheduled_time): then nothing is written and
    /// nullopt is returned. Returns the new id.
    static std::optional<std::int64_t> InsertIfAbsent(soci::session& s, const db::Dialect& dialect,
                                                      const WorkflowRun& run);
    static std::optional<WorkflowRun> Find(soci::session& s, std::int64_t id);
    static std::optional<WorkflowRun> FindByKey(soci::session& s, std::int64_t workflow_id,
                                                std::int64_t scheduled_time);
    /// How many runs of the workflow are `running` (the overlap policy's count).
    static int CountRunning(soci::session& s, std::int64_t workflow_id);
    /// Running runs with id > after_id, in id order, at most `limit` (idx_workflow_run_status).
    static std::vector<WorkflowRun> ListRunning(soci::session& s, std::int64_t after_id, int limit);
    /// Running runs with no step fire (nor skip row) in their current generation, oldest first,
    /// at most `limit`: runs created or re-run through the API that the master has not started.
    static std::vector<WorkflowRun> ListUnstarted(soci::session& s, int limit);
    /// The params of those of these runs that have params, by run id (the slave's claim: a
    /// manual run's params go to every step). One statement per 500 ids.
    static std::map<std::int64_t, std::string> ParamsOf(soci::session& s, const std::vector<std::int64_t>& ids);
    /// The runs with these ids that are `running`, in id order (one statement per 500 ids).
    static std::vector<WorkflowRun> FindRunning(soci::session& s, const std::vector<std::int64_t>& ids);
    /// running -> `status` (succeeded, failed or timed-out) with `reason` and ended_at = `now_ms`,
    /// or started_at when that is later (a run created ahead of its time), so ended_at is never
    /// before started_at.
    /// Returns false when the run is not running (it ended already, or is gone). Throws
    /// std::logic_error for `status` running (a caller's defect).
    static bool End(soci::session& s, std::int64_t id, WorkflowRunStatus status,
                    const std::optional<std::string>& reason, std::int64_t now_ms);
    /// failed | timed-out at generation `expected_generation` -> running at generation + 1, from
    /// `from_step`, started_at = `now_ms`, reason and ended_at cleared. Returns false when the run
    /// is not in one of those states, its generation moved, or it has kMaxRunGeneration re-runs.
    static bool Rerun(soci::session& s, std::int64_t id, int expected_generation, const std::string& from_step,
                      std::int64_t now_ms);

  private:
    db::Database& db_;
};

}  // namespace sched::store
