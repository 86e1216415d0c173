#include "sched/store/workflow_run.hpp"

#include <algorithm>
#include <iterator>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "impl/query.hpp"

namespace sched::store {

using model::kMaxRunGeneration;
using model::kStepAttemptStride;
using model::kWorkflowRunKindNames;
using model::kWorkflowRunStatusNames;
using model::ParseWorkflowDefinition;
using model::WorkflowDefinitionToJson;
using model::WorkflowRun;
using model::WorkflowRunStatus;

namespace {

// A status as an SQL literal, from the one name table (the names are plain lower-case words).
std::string Literal(WorkflowRunStatus status) {
    return "'" + std::string(kWorkflowRunStatusNames.Name(status)) + "'";
}

constexpr const char* kSelect =
    "SELECT id, workflow_id, scheduled_time, kind, status, reason, params, workflow_version, definition, generation, "
    "from_step, created_by, created_at, started_at, ended_at, updated_at FROM workflow_run ";

struct RunRow {
    WorkflowRun r;
    std::string kind;
    std::string status;
    impl::NullableString reason;
    impl::NullableString params;
    std::string definition;
    impl::NullableString from_step;
    impl::NullableInt64 started_at;
    impl::NullableInt64 ended_at;

    void BindInto(soci::statement& st) {
        impl::IntoColumns(st, r.id, r.workflow_id, r.scheduled_time, kind, status, reason, params, r.workflow_version,
                          definition, r.generation, from_step, r.created_by, r.created_at, started_at, ended_at,
                          r.updated_at);
    }
    WorkflowRun Finish() {
        // A run whose stored names or definition this build cannot read must not be planned on a
        // guess: the read fails loudly (as a backfill's does).
        const auto k = kWorkflowRunKindNames.Parse(kind);
        const auto st = kWorkflowRunStatusNames.Parse(status);
        if (!k || !st) {
            throw std::runtime_error("workflow run " + std::to_string(r.id) + ": bad kind/status in database");
        }
        auto parsed = ParseWorkflowDefinition(definition);
        if (!parsed.ok()) {
            throw std::runtime_error("workflow run " + std::to_string(r.id) +
                                     ": bad definition in database: " + parsed.status().message());
        }
        WorkflowRun out = r;
        out.kind = *k;
        out.status = *st;
        out.reason = reason.get();
        out.params = params.get();
        out.definition = std::move(*parsed);
        out.from_step = from_step.get();
        out.started_at = started_at.get();
        out.ended_at = ended_at.get();
        return out;
    }
};

}  // namespace

Result<WorkflowRun> WorkflowRunRepository::Get(std::int64_t id) {
    return impl::GetById(db_, "workflow run", id, Find);
}

Result<std::vector<WorkflowRun>> WorkflowRunRepository::ListForWorkflow(std::int64_t workflow_id,
                                                                        std::int64_t before_id, int limit) {
    return impl::SelectChildrenBefore<RunRow>(db_, kSelect, "workflow_id", workflow_id, before_id, limit);
}

std::optional<std::int64_t> WorkflowRunRepository::InsertIfAbsent(soci::session& s, const db::Dialect& dialect,
                                                                  const WorkflowRun& run) {
    const std::string kind(kWorkflowRunKindNames.Name(run.kind));
    const std::string status(kWorkflowRunStatusNames.Name(run.status));
    const std::string definition = WorkflowDefinitionToJson(run.definition);
    impl::NullableString reason(run.reason);
    impl::NullableString params(run.params);
    impl::NullableString from_step(run.from_step);
    impl::NullableInt64 started(run.started_at);
    impl::NullableInt64 ended(run.ended_at);
    const std::string now(dialect.NowMs());
    soci::statement st =
        (s.prepare << dialect.InsertIfAbsent(
             "workflow_run (workflow_id, scheduled_time, kind, status, reason, params, workflow_version, definition, "
             "generation, from_step, created_by, created_at, started_at, ended_at, updated_at) VALUES (:wf, :t, "
             ":kind, :status, :reason, :params, :version, :definition, :generation, :from_step, :by, " +
             now + ", :started, :ended, " + now + ")"),
         soci::use(run.workflow_id, "wf"), soci::use(run.scheduled_time, "t"), soci::use(kind, "kind"),
         soci::use(status, "status"), impl::Use(reason, "reason"), impl::Use(params, "params"),
         soci::use(run.workflow_version, "version"), soci::use(definition, "definition"),
         soci::use(run.generation, "generation"), impl::Use(from_step, "from_step"), soci::use(run.created_by, "by"),
         impl::Use(started, "started"), impl::Use(ended, "ended"));
    if (db::ExecuteInsertIfAbsent(st) == 0) return std::nullopt;
    long long id = 0;
    if (!s.get_last_insert_id("workflow_run", id)) throw std::runtime_error("no id for the new workflow run");
    return static_cast<std::int64_t>(id);
}

std::optional<WorkflowRun> WorkflowRunRepository::Find(soci::session& s, std::int64_t id) {
    auto rows = impl::SelectRows<RunRow>(s, std::string(kSelect) + "WHERE id = :id",
                                         [&](soci::statement& st) { st.exchange(soci::use(id, "id")); });
    if (rows.empty()) return std::nullopt;
    return std::move(rows.front());
}

std::optional<WorkflowRun> WorkflowRunRepository::FindByKey(soci::session& s, std::int64_t workflow_id,
                                                            std::int64_t scheduled_time) {
    auto rows = impl::SelectRows<RunRow>(s, std::string(kSelect) + "WHERE workflow_id = :wf AND scheduled_time = :t",
                                         [&](soci::statement& st) {
                                             st.exchange(soci::use(workflow_id, "wf"));
                                             st.exchange(soci::use(scheduled_time, "t"));
                                         });
    if (rows.empty()) return std::nullopt;
    return std::move(rows.front());
}

int WorkflowRunRepository::CountRunning(soci::session& s, std::int64_t workflow_id) {
    long long n = 0;
    s << "SELECT COUNT(*) FROM workflow_run WHERE workflow_id = :wf AND status = " +
             Literal(WorkflowRunStatus::kRunning),
        soci::use(workflow_id, "wf"), soci::into(n);
    return static_cast<int>(n);
}

std::vector<WorkflowRun> WorkflowRunRepository::ListRunning(soci::session& s, std::int64_t after_id, int limit) {
    return impl::SelectRows<RunRow>(s,
                                    std::string(kSelect) + "WHERE status = " + Literal(WorkflowRunStatus::kRunning) +
                                        " AND id > :after ORDER BY id LIMIT " + std::to_string(std::max(1, limit)),
                                    [&](soci::statement& st) { st.exchange(soci::use(after_id, "after")); });
}

std::vector<WorkflowRun> WorkflowRunRepository::ListUnstarted(soci::session& s, int limit) {
    // Served by idx_workflow_run_status for the runs and idx_fire_workflow_run per run.
    return impl::SelectRows<RunRow>(
        s,
        std::string(kSelect) + "WHERE status = " + Literal(WorkflowRunStatus::kRunning) +
            " AND NOT EXISTS (SELECT 1 FROM job_fire f WHERE f.workflow_run_id = workflow_run.id AND f.attempt >= " +
            std::to_string(kStepAttemptStride) + " * workflow_run.generation) ORDER BY id LIMIT " +
            std::to_string(std::max(1, limit)),
        [](soci::statement&) {});
}

std::vector<WorkflowRun> WorkflowRunRepository::FindRunning(soci::session& s, const std::vector<std::int64_t>& ids) {
    constexpr std::size_t kChunk = 500;
    return impl::SelectByIds<RunRow>(s, ids, kChunk, [](const std::string& list) {
        return std::string(kSelect) + "WHERE status = " + Literal(WorkflowRunStatus::kRunning) + " AND id IN (" + list +
               ") ORDER BY id";
    });
}

std::map<std::int64_t, std::string> WorkflowRunRepository::ParamsOf(soci::session& s,
                                                                    const std::vector<std::int64_t>& ids) {
    struct Row {
        std::int64_t id = 0;
        std::string params;
        void BindInto(soci::statement& st) { impl::IntoColumns(st, id, params); }
        std::pair<std::int64_t, std::string> Finish() const { return {id, params}; }
    };
    constexpr std::size_t kChunk = 500;
    std::map<std::int64_t, std::string> out;
    impl::ForEachChunk(ids, kChunk, [&](std::span<const std::int64_t> chunk) {
        for (auto& [id, params] : impl::SelectRows<Row>(
                 s,
                 "SELECT id, params FROM workflow_run WHERE params IS NOT NULL AND id IN (" + impl::IdList(chunk) + ")",
                 [](soci::statement&) {})) {
            out.emplace(id, std::move(params));
        }
    });
    return out;
}

bool WorkflowRunRepository::End(soci::session& s, std::int64_t id, WorkflowRunStatus status,
                                const std::optional<std::string>& reason, std::int64_t now_ms) {
    if (status == WorkflowRunStatus::kRunning) throw std::logic_error("WorkflowRunRepository::End to running");
    const std::string name(kWorkflowRunStatusNames.Name(status));
    impl::NullableString why(reason);
    // A run created ahead of its scheduled time (the planner's lookahead) starts then; one that
    // ends before that time (a root step's job deleted) ends at its start, never before it.
    soci::statement st =
        (s.prepare << "UPDATE workflow_run SET status = :status, reason = :reason, ended_at = CASE WHEN started_at "
                      "IS NOT NULL AND started_at > :now THEN started_at ELSE :now2 END, updated_at = :now3 WHERE id = "
                      ":id AND status = " +
                          Literal(WorkflowRunStatus::kRunning),
         soci::use(name, "status"), impl::Use(why, "reason"), soci::use(now_ms, "now"), soci::use(now_ms, "now2"),
         soci::use(now_ms, "now3"), soci::use(id, "id"));
    return impl::ExecuteAffected(st) == 1;
}

bool WorkflowRunRepository::Rerun(soci::session& s, std::int64_t id, int expected_generation,
                                  const std::string& from_step, std::int64_t now_ms) {
    if (expected_generation + 1 > kMaxRunGeneration) return false;
    soci::statement st =
        (s.prepare << "UPDATE workflow_run SET status = " + Literal(WorkflowRunStatus::kRunning) +
                          ", generation = generation + 1, from_step = :step, started_at = :now, ended_at = NULL, "
                          "reason = NULL, updated_at = :now2 WHERE id = :id AND generation = :gen AND status IN (" +
                          Literal(WorkflowRunStatus::kFailed) + ", " + Literal(WorkflowRunStatus::kTimedOut) + ")",
         soci::use(from_step, "step"), soci::use(now_ms, "now"), soci::use(now_ms, "now2"), soci::use(id, "id"),
         soci::use(expected_generation, "gen"));
    return impl::ExecuteAffected(st) == 1;
}

}  // namespace sched::store
