#include "sched/store/workflow.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <stdexcept>
#include <utility>

#include "impl/query.hpp"
#include "impl/stored_name.hpp"

namespace sched::store {

using model::kEdgeConditionNames;
using model::kWorkflowRunStatusNames;
using model::ValidateWorkflow;
using model::Workflow;
using model::WorkflowEdge;
using model::WorkflowRunStatus;
using model::WorkflowStep;

// ---- WorkflowRepository ----

namespace {

constexpr const char* kColumns =
    "id, name, description, schedule_type, schedule_expr, time_zone, misfire_policy, max_concurrent_runs, "
    "run_timeout_ms, paused, next_fire_time, version, created_at, updated_at, managed_by";

struct WorkflowRow {
    Workflow w;
    std::string schedule_type;
    std::string misfire_policy;
    int paused = 0;
    impl::NullableInt64 next_fire;
    impl::NullableString managed_by;

    void BindInto(soci::statement& st) {
        impl::IntoColumns(st, w.id, w.name, w.description, schedule_type, w.schedule_expr, w.time_zone, misfire_policy,
                          w.max_concurrent_runs, w.run_timeout_ms, paused, next_fire, w.version, w.created_at,
                          w.updated_at, managed_by);
    }
    Workflow Finish() {
        // Unknown stored names read as for a job (sched/store/job.hpp): a workflow that never
        // fires on its own rather than one that fires on a guess.
        w.schedule_type = impl::StoredName(kScheduleTypeNames, schedule_type, ScheduleType::kManual, "workflow", w.id,
                                           "schedule_type", model::QuotedName);
        w.misfire_policy = impl::StoredName(kMisfirePolicyNames, misfire_policy, MisfirePolicy::kFireOnceNow,
                                            "workflow", w.id, "misfire_policy", model::QuotedName);
        w.paused = paused != 0;
        w.next_fire_time = next_fire.get();
        w.managed_by = managed_by.get();
        return w;
    }
};

// " IN (:v0, :v1, ...)" over `ids`, their values added to `values`.
std::string InList(impl::BoundValues& values, const std::vector<std::int64_t>& ids) {
    std::string out = " IN (";
    for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? ", " : "") + values.Add(ids[i]);
    return out + ")";
}

// Fills in the steps and edges of the workflows of `by_id` whose ids are `ids` (two queries).
void LoadDefinitionsOf(soci::session& s, std::map<std::int64_t, Workflow*>& by_id,
                       const std::vector<std::int64_t>& ids) {
    struct StepRow {
        std::int64_t workflow_id = 0;
        WorkflowStep step;
        void BindInto(soci::statement& st) { impl::IntoColumns(st, workflow_id, step.name, step.job_id); }
        std::pair<std::int64_t, WorkflowStep> Finish() const { return {workflow_id, step}; }
    };
    impl::BoundValues step_ids;
    const auto step_in = InList(step_ids, ids);
    for (auto& [id, step] :
         impl::SelectRows<StepRow>(s,
                                   "SELECT workflow_id, name, job_id FROM workflow_step WHERE workflow_id" + step_in +
                                       " ORDER BY workflow_id, ordinal",
                                   [&](soci::statement& st) { step_ids.Bind(st); })) {
        by_id[id]->steps.push_back(std::move(step));
    }
    struct EdgeRow {
        std::int64_t workflow_id = 0;
        WorkflowEdge edge;
        std::string condition;
        void BindInto(soci::statement& st) { impl::IntoColumns(st, workflow_id, edge.parent, edge.child, condition); }
        std::pair<std::int64_t, WorkflowEdge> Finish() const {
            auto parsed = kEdgeConditionNames.Parse(condition);
            // A condition this build does not know would change what runs: refuse to guess.
            if (!parsed) {
                throw std::runtime_error("workflow " + std::to_string(workflow_id) + ": unknown edge condition " +
                                         model::QuotedName(condition) + " in the database");
            }
            WorkflowEdge out = edge;
            out.condition = *parsed;
            return {workflow_id, out};
        }
    };
    impl::BoundValues edge_ids;
    const auto edge_in = InList(edge_ids, ids);
    for (auto& [id, edge] : impl::SelectRows<EdgeRow>(
             s,
             "SELECT workflow_id, parent, child, edge_condition FROM workflow_edge WHERE workflow_id" + edge_in +
                 " ORDER BY workflow_id, ordinal",
             [&](soci::statement& st) { edge_ids.Bind(st); })) {
        by_id[id]->edges.push_back(std::move(edge));
    }
}

// Fills in the steps and edges of `workflows`, two queries per 500 of them (bound values stay
// well under SQLite's limit).
void LoadDefinitions(soci::session& s, std::vector<Workflow>& workflows) {
    std::map<std::int64_t, Workflow*> by_id;
    std::vector<std::int64_t> ids;
    for (auto& w : workflows) {
        by_id[w.id] = &w;
        ids.push_back(w.id);
        if (ids.size() == 500) {
            LoadDefinitionsOf(s, by_id, ids);
            ids.clear();
        }
    }
    if (!ids.empty()) LoadDefinitionsOf(s, by_id, ids);
}

std::vector<Workflow> SelectWorkflows(soci::session& s, const std::string& where_and_order,
                                      const std::function<void(soci::statement&)>& bind) {
    auto rows =
        impl::SelectRows<WorkflowRow>(s, std::string("SELECT ") + kColumns + " FROM workflow " + where_and_order, bind);
    LoadDefinitions(s, rows);
    return rows;
}

void InsertDefinition(soci::session& s, std::int64_t workflow_id, const Workflow& w) {
    for (std::size_t i = 0; i < w.steps.size(); ++i) {
        const int ordinal = static_cast<int>(i);
        s << "INSERT INTO workflow_step (workflow_id, name, job_id, ordinal) VALUES (:wf, :name, :job, :ord)",
            soci::use(workflow_id, "wf"), soci::use(w.steps[i].name, "name"), soci::use(w.steps[i].job_id, "job"),
            soci::use(ordinal, "ord");
    }
    for (std::size_t i = 0; i < w.edges.size(); ++i) {
        const int ordinal = static_cast<int>(i);
        const std::string condition(kEdgeConditionNames.Name(w.edges[i].condition));
        s << "INSERT INTO workflow_edge (workflow_id, parent, child, edge_condition, ordinal) VALUES (:wf, :parent, "
             ":child, :cond, :ord)",
            soci::use(workflow_id, "wf"), soci::use(w.edges[i].parent, "parent"), soci::use(w.edges[i].child, "child"),
            soci::use(condition, "cond"), soci::use(ordinal, "ord");
    }
}

// Every step's job exists and is a step of no other workflow (`self`: the workflow being
// updated, 0 on create). Read in the caller's write transaction, with uk_workflow_step_job as
// the backstop against a concurrent writer.
Status CheckStepJobs(soci::session& s, const Workflow& w, std::int64_t self) {
    std::vector<std::int64_t> job_ids;
    std::map<std::int64_t, std::size_t> first_use;  // job id -> the first step that uses it
    for (std::size_t i = 0; i < w.steps.size(); ++i) {
        // A step's fires are keyed by its job and the run's time: two steps of one job would
        // share their keys. Checked here, not left to uk_workflow_step_job, whose error is no answer.
        if (auto [it, added] = first_use.emplace(w.steps[i].job_id, i); !added) {
            return FailedPrecondition(model::FieldPath("steps", i, "job_id") + ": job " +
                                      std::to_string(w.steps[i].job_id) + " is also step \"" +
                                      w.steps[it->second].name +
                                      "\" of this workflow (a job is one step of at most one workflow)");
        }
        job_ids.push_back(w.steps[i].job_id);
    }
    impl::BoundValues existing_ids;
    const auto existing_in = InList(existing_ids, job_ids);
    const auto found = impl::SelectRows<impl::IdRow>(s, "SELECT id FROM job WHERE id" + existing_in,
                                                     [&](soci::statement& st) { existing_ids.Bind(st); });
    const std::set<std::int64_t> exists(found.begin(), found.end());
    for (std::size_t i = 0; i < w.steps.size(); ++i) {
        if (exists.count(w.steps[i].job_id) == 0) {
            return InvalidArgument(model::FieldPath("steps", i, "job_id") + ": job " +
                                   std::to_string(w.steps[i].job_id) + " does not exist");
        }
    }
    struct UseRow {
        std::int64_t job_id = 0;
        std::string workflow;
        std::string step;
        void BindInto(soci::statement& st) { impl::IntoColumns(st, job_id, workflow, step); }
        UseRow Finish() const { return *this; }
    };
    impl::BoundValues used_ids;
    const auto used_in = InList(used_ids, job_ids);
    const auto self_value = used_ids.Add(self);
    const auto uses = impl::SelectRows<UseRow>(
        s,
        "SELECT ws.job_id, w.name, ws.name FROM workflow_step ws JOIN workflow w ON w.id = ws.workflow_id WHERE "
        "ws.job_id" +
            used_in + " AND ws.workflow_id <> " + self_value,
        [&](soci::statement& st) { used_ids.Bind(st); });
    for (std::size_t i = 0; i < w.steps.size(); ++i) {
        for (const auto& use : uses) {
            if (use.job_id != w.steps[i].job_id) continue;
            return FailedPrecondition(model::FieldPath("steps", i, "job_id") + ": job " + std::to_string(use.job_id) +
                                      " is step \"" + use.step + "\" of workflow \"" + use.workflow +
                                      "\" (a job is a step of at most one workflow)");
        }
    }
    return Status::Ok();
}

Status NameFree(soci::session& s, const std::string& name, std::int64_t self) {
    auto other = WorkflowRepository::FindByName(s, name);
    if (other && other->id != self) return AlreadyExists("a workflow named \"" + name + "\" exists already");
    return Status::Ok();
}

// The workflow columns an INSERT and an UPDATE both write, in the forms they are bound in
// (names for enums, 0/1 for the flag, indicators for the nullables); kept alive until executed.
struct WorkflowColumns {
    explicit WorkflowColumns(const Workflow& w)
        : w(w),
          type(ScheduleTypeName(w.schedule_type)),
          misfire(MisfirePolicyName(w.misfire_policy)),
          paused(w.paused ? 1 : 0),
          next(w.next_fire_time),
          managed_by(w.managed_by) {}
    void Use(soci::statement& st) {
        st.exchange(soci::use(w.description, "description"));
        st.exchange(soci::use(type, "type"));
        st.exchange(soci::use(w.schedule_expr, "expr"));
        st.exchange(soci::use(w.time_zone, "tz"));
        st.exchange(soci::use(misfire, "misfire"));
        st.exchange(soci::use(w.max_concurrent_runs, "maxc"));
        st.exchange(soci::use(w.run_timeout_ms, "timeout"));
        st.exchange(soci::use(paused, "paused"));
        st.exchange(impl::Use(next, "next"));
        st.exchange(impl::Use(managed_by, "managed_by"));
    }

    const Workflow& w;
    const std::string type;
    const std::string misfire;
    const int paused;
    impl::NullableInt64 next;
    impl::NullableString managed_by;
};

// Prepares `st` (its values bound already) with `sql`.
void Prepare(soci::statement& st, const std::string& sql) {
    st.alloc();
    st.prepare(sql);
    st.define_and_bind();
}

void Execute(soci::statement& st, const std::string& sql) {
    Prepare(st, sql);
    st.execute(true);
}

}  // namespace

Result<Workflow> WorkflowRepository::Create(const Workflow& w) {
    if (auto valid = ValidateWorkflow(w); !valid.ok()) return valid;
    auto id = db_.InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Result<std::int64_t> {
        if (auto free = NameFree(s, w.name, 0); !free.ok()) return free;
        if (auto jobs = CheckStepJobs(s, w, 0); !jobs.ok()) return jobs;
        const std::string now(db_.dialect().NowMs());
        WorkflowColumns columns(w);
        soci::statement st(s);
        columns.Use(st);
        st.exchange(soci::use(w.name, "name"));
        Execute(st,
                "INSERT INTO workflow (name, description, schedule_type, schedule_expr, time_zone, misfire_policy, "
                "max_concurrent_runs, run_timeout_ms, paused, next_fire_time, managed_by, version, created_at, "
                "updated_at) VALUES "
                "(:name, :description, :type, :expr, :tz, :misfire, :maxc, :timeout, :paused, :next, :managed_by, 1, " +
                    now + ", " + now + ")");
        long long new_id = 0;
        if (!s.get_last_insert_id("workflow", new_id)) return Internal("no id for the new workflow");
        InsertDefinition(s, new_id, w);
        return static_cast<std::int64_t>(new_id);
    });
    if (!id.ok()) return id.status();
    return Get(*id);
}

Result<Workflow> WorkflowRepository::Get(std::int64_t id) {
    return impl::GetById(db_, "workflow", id, Find);
}

Result<Workflow> WorkflowRepository::GetByName(const std::string& name) {
    return impl::GetByName(db_, "workflow " + model::QuotedName(name), name, FindByName);
}

Result<std::vector<Workflow>> WorkflowRepository::List(std::int64_t after_id, int limit) {
    return db_.Run([&](soci::session& s) {
        return SelectWorkflows(s,
                               "WHERE id > :after_id ORDER BY id LIMIT " + std::to_string(std::clamp(limit, 1, 1000)),
                               [&](soci::statement& st) { st.exchange(soci::use(after_id, "after_id")); });
    });
}

Result<Workflow> WorkflowRepository::Update(const Workflow& w, std::int64_t expected_version) {
    if (auto valid = ValidateWorkflow(w); !valid.ok()) return valid;
    Status updated = db_.InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Status {
        const std::int64_t id = w.id;
        WorkflowColumns columns(w);
        soci::statement st(s);
        columns.Use(st);
        st.exchange(soci::use(id, "id"));
        st.exchange(soci::use(expected_version, "expected"));
        Prepare(st,
                "UPDATE workflow SET description = :description, schedule_type = :type, schedule_expr = "
                ":expr, time_zone = :tz, misfire_policy = :misfire, max_concurrent_runs = :maxc, "
                "run_timeout_ms = :timeout, paused = :paused, next_fire_time = :next, managed_by = "
                ":managed_by, version = version + 1, updated_at = " +
                    std::string(db_.dialect().NowMs()) + " WHERE id = :id AND version = :expected");
        if (impl::ExecuteAffected(st) != 1) {
            auto current = Find(s, id);
            if (!current) return NotFound("workflow " + std::to_string(id) + " not found");
            return Aborted("workflow " + std::to_string(id) + " is at version " + std::to_string(current->version) +
                           ", not " + std::to_string(expected_version) + " (changed by someone else)");
        }
        // The name is changed apart so that a taken name is kAlreadyExists naming it, not the
        // unique key's bare error.
        if (auto free = NameFree(s, w.name, id); !free.ok()) return free;
        s << "UPDATE workflow SET name = :name WHERE id = :id", soci::use(w.name, "name"), soci::use(id, "id");
        if (auto jobs = CheckStepJobs(s, w, id); !jobs.ok()) return jobs;
        s << "DELETE FROM workflow_edge WHERE workflow_id = :id", soci::use(id, "id");
        s << "DELETE FROM workflow_step WHERE workflow_id = :id", soci::use(id, "id");
        InsertDefinition(s, id, w);
        return Status::Ok();
    });
    if (!updated.ok()) return updated;
    return Get(w.id);
}

Result<Workflow> WorkflowRepository::SetPaused(std::int64_t id, bool paused,
                                               std::optional<std::int64_t> next_fire_time) {
    Status set = db_.InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Status {
        const int flag = paused ? 1 : 0;
        impl::NullableInt64 next(paused ? std::nullopt : next_fire_time);
        soci::statement st = (s.prepare << "UPDATE workflow SET paused = :paused, next_fire_time = :next, version = "
                                           "version + 1, updated_at = " +
                                               std::string(db_.dialect().NowMs()) + " WHERE id = :id",
                              soci::use(flag, "paused"), impl::Use(next, "next"), soci::use(id, "id"));
        if (impl::ExecuteAffected(st) != 1) return NotFound("workflow " + std::to_string(id) + " not found");
        return Status::Ok();
    });
    if (!set.ok()) return set;
    return Get(id);
}

Status WorkflowRepository::Delete(std::int64_t id) {
    return db_.InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Status {
        auto current = Find(s, id);
        if (!current) return NotFound("workflow " + std::to_string(id) + " not found");
        // In the write transaction: the master creates runs in its own write transaction, so a
        // run created meanwhile is either seen here or finds the workflow gone.
        long long running = 0;
        const std::string status(kWorkflowRunStatusNames.Name(WorkflowRunStatus::kRunning));
        s << "SELECT COUNT(*) FROM workflow_run WHERE workflow_id = :id AND status = :status", soci::use(id, "id"),
            soci::use(status, "status"), soci::into(running);
        if (running > 0) {
            return FailedPrecondition("id: workflow \"" + current->name + "\" has " + std::to_string(running) +
                                      " running run(s); wait for them to end");
        }
        s << "DELETE FROM workflow_edge WHERE workflow_id = :id", soci::use(id, "id");
        s << "DELETE FROM workflow_step WHERE workflow_id = :id", soci::use(id, "id");
        s << "DELETE FROM workflow WHERE id = :id", soci::use(id, "id");
        return Status::Ok();
    });
}

std::optional<Workflow> WorkflowRepository::Find(soci::session& s, std::int64_t id) {
    auto rows = SelectWorkflows(s, "WHERE id = :id", [&](soci::statement& st) { st.exchange(soci::use(id, "id")); });
    if (rows.empty()) return std::nullopt;
    return std::move(rows.front());
}

std::optional<Workflow> WorkflowRepository::FindByName(soci::session& s, const std::string& name) {
    auto rows =
        SelectWorkflows(s, "WHERE name = :name", [&](soci::statement& st) { st.exchange(soci::use(name, "name")); });
    if (rows.empty()) return std::nullopt;
    return std::move(rows.front());
}

std::optional<std::string> WorkflowRepository::StepUsingJob(soci::session& s, std::int64_t job_id) {
    struct Row {
        std::string workflow;
        std::string step;
        void BindInto(soci::statement& st) { impl::IntoColumns(st, workflow, step); }
        std::string Finish() const { return workflow + "/" + step; }
    };
    auto rows = impl::SelectRows<Row>(
        s,
        "SELECT w.name, ws.name FROM workflow_step ws JOIN workflow w ON w.id = ws.workflow_id WHERE ws.job_id = :job",
        [&](soci::statement& st) { st.exchange(soci::use(job_id, "job")); });
    if (rows.empty()) return std::nullopt;
    return rows.front();
}

std::vector<Workflow> WorkflowRepository::SelectDue(soci::session& s, std::int64_t until_ms, int limit) {
    return SelectWorkflows(
        s,
        "WHERE paused = 0 AND next_fire_time IS NOT NULL AND next_fire_time <= :until ORDER BY next_fire_time, id "
        "LIMIT " +
            std::to_string(std::max(1, limit)),
        [&](soci::statement& st) { st.exchange(soci::use(until_ms, "until")); });
}

bool WorkflowRepository::AdvanceSchedule(soci::session& s, std::int64_t id, std::int64_t expected_version,
                                         std::int64_t expected_next, std::optional<std::int64_t> next) {
    soci::indicator next_ind = next ? soci::i_ok : soci::i_null;
    std::int64_t next_value = next.value_or(0);
    soci::statement st = (s.prepare << "UPDATE workflow SET next_fire_time = :next WHERE id = :id AND version = :v "
                                       "AND next_fire_time = :expected",
                          soci::use(next_value, next_ind, "next"), soci::use(id, "id"),
                          soci::use(expected_version, "v"), soci::use(expected_next, "expected"));
    return impl::ExecuteAffected(st) == 1;
}

std::optional<std::int64_t> WorkflowRepository::EarliestDue(soci::session& s) {
    std::int64_t t = 0;
    soci::indicator ind = soci::i_null;
    s << "SELECT MIN(next_fire_time) FROM workflow WHERE paused = 0", soci::into(t, ind);
    return ind == soci::i_ok ? std::optional<std::int64_t>(t) : std::nullopt;
}

}  // namespace sched::store
