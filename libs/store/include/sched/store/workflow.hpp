#pragma once

/// Workflows stored: tables `workflow`, `workflow_step`, `workflow_edge` (migration 012) for the
/// model's Workflow (sched/model/workflow.hpp: steps, edges, ValidateWorkflow, WorkflowGraph;
/// the semantics are docs/workflows.md's). A job is a step of at most one workflow.
///
/// Errors naming a request field: kInvalidArgument and kFailedPrecondition messages start with
/// the field and ": " ("steps[2].job_id: job 99 does not exist"); model::WorkflowErrorField
/// returns it.
///
/// `version` is the optimistic-concurrency token, as for jobs and calendars. Repositories are
/// thread-safe and blocking; times are epoch ms from the DB clock.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <soci/soci.h>

#include "sched/common/job_vocabulary.hpp"
#include "sched/common/name_table.hpp"
#include "sched/common/status.hpp"
#include "sched/db/database.hpp"
#include "sched/model/workflow.hpp"

namespace sched::store {

class WorkflowRepository {
  public:
    explicit WorkflowRepository(db::Database& db) : db_(db) {}

    /// Validates (ValidateWorkflow) and stores a new workflow with its steps and edges in one
    /// write transaction (id, version 1, times assigned; paused and next_fire_time as given).
    /// kInvalidArgument naming the field; `steps[i].job_id` when that job does not exist;
    /// kFailedPrecondition `steps[i].job_id` when the job is a step of another workflow;
    /// kAlreadyExists when the name is taken.
    Result<model::Workflow> Create(const model::Workflow& workflow);
    /// kNotFound when absent.
    Result<model::Workflow> Get(std::int64_t id);
    Result<model::Workflow> GetByName(const std::string& name);
    /// With steps and edges, in id order, ids > after_id, at most `limit` (1-1000).
    Result<std::vector<model::Workflow>> List(std::int64_t after_id, int limit);
    /// Replaces every editable field (all but id, version, created_at) and the steps and edges, in
    /// one write transaction, when the stored version is `expected_version`; version + 1. Checks
    /// as Create; kNotFound; kAborted when the version moved. Runs already created keep the
    /// definition they copied (docs/workflows.md "Editing").
    Result<model::Workflow> Update(const model::Workflow& workflow, std::int64_t expected_version);
    /// Sets `paused` and next_fire_time (nullopt while paused; on resume the API passes the next
    /// time from now), version + 1. kNotFound when absent.
    Result<model::Workflow> SetPaused(std::int64_t id, bool paused, std::optional<std::int64_t> next_fire_time);
    /// Deletes the workflow with its steps and edges; its runs stay as history. kNotFound;
    /// kFailedPrecondition (field `id`) while it has a run `running`.
    Status Delete(std::int64_t id);

    // ---- session-level, for transactions (the master's scan, the API's checks) ----

    static std::optional<model::Workflow> Find(soci::session& s, std::int64_t id);
    static std::optional<model::Workflow> FindByName(soci::session& s, const std::string& name);
    /// "workflow/step" of the step that uses job_id, if any (a job is a step of at most one
    /// workflow): for refusing to delete a job a workflow depends on.
    static std::optional<std::string> StepUsingJob(soci::session& s, std::int64_t job_id);

    // ---- the master's planning (inside its fenced scan) ----

    /// Workflows not paused whose next_fire_time <= until_ms, earliest first, at most `limit`,
    /// with their steps and edges (idx_workflow_due).
    static std::vector<model::Workflow> SelectDue(soci::session& s, std::int64_t until_ms, int limit);
    /// Moves a workflow's schedule on: next_fire_time = `next` when the row still has
    /// `expected_version` and `expected_next` (version unchanged, as for a job's advance: an edit
    /// racing the master wins and is planned afresh). False when the CAS lost.
    static bool AdvanceSchedule(soci::session& s, std::int64_t id, std::int64_t expected_version,
                                std::int64_t expected_next, std::optional<std::int64_t> next);
    /// The earliest next_fire_time of a workflow not paused (the master sleeps until then).
    static std::optional<std::int64_t> EarliestDue(soci::session& s);

  private:
    db::Database& db_;
};

}  // namespace sched::store
