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
#include "sched/model/workflow.hpp"
#include "sched/model/workflow_run.hpp"
#include "sched/store/workflow.hpp"

namespace sched::store {

class WorkflowRunRepository {
  public:
    explicit WorkflowRunRepository(db::Database& db) : db_(db) {}

    /// kNotFound when absent.
    Result<model::WorkflowRun> Get(std::int64_t id);
    /// The workflow's runs, newest first (by id), ids < before_id (0 = from the newest), at most
    /// `limit` (1-1000).
    Result<std::vector<model::WorkflowRun>> ListForWorkflow(std::int64_t workflow_id, std::int64_t before_id,
                                                            int limit);

    // ---- session-level, for transactions ----

    /// Inserts the run (its id, created_at and updated_at are assigned; created_at = updated_at =
    /// DB now) unless one exists for (workflow_id, scheduled_time): then nothing is written and
    /// nullopt is returned. Returns the new id.
    static std::optional<std::int64_t> InsertIfAbsent(soci::session& s, const db::Dialect& dialect,
                                                      const model::WorkflowRun& run);
    static std::optional<model::WorkflowRun> Find(soci::session& s, std::int64_t id);
    static std::optional<model::WorkflowRun> FindByKey(soci::session& s, std::int64_t workflow_id,
                                                       std::int64_t scheduled_time);
    /// How many runs of the workflow are `running` (the overlap policy's count).
    static int CountRunning(soci::session& s, std::int64_t workflow_id);
    /// Running runs with id > after_id, in id order, at most `limit` (idx_workflow_run_status).
    static std::vector<model::WorkflowRun> ListRunning(soci::session& s, std::int64_t after_id, int limit);
    /// Running runs with no step fire (nor skip row) in their current generation, oldest first,
    /// at most `limit`: runs created or re-run through the API that the master has not started.
    static std::vector<model::WorkflowRun> ListUnstarted(soci::session& s, int limit);
    /// The params of those of these runs that have params, by run id (the slave's claim: a
    /// manual run's params go to every step). One statement per 500 ids.
    static std::map<std::int64_t, std::string> ParamsOf(soci::session& s, const std::vector<std::int64_t>& ids);
    /// The runs with these ids that are `running`, in id order (one statement per 500 ids).
    static std::vector<model::WorkflowRun> FindRunning(soci::session& s, const std::vector<std::int64_t>& ids);
    /// running -> `status` (succeeded, failed or timed-out) with `reason` and ended_at = `now_ms`,
    /// or started_at when that is later (a run created ahead of its time), so ended_at is never
    /// before started_at.
    /// Returns false when the run is not running (it ended already, or is gone). Throws
    /// std::logic_error for `status` running (a caller's defect).
    static bool End(soci::session& s, std::int64_t id, model::WorkflowRunStatus status,
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
