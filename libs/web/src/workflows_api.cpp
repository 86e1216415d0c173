// Workflows and their runs: /api/v1/workflows..., /api/v1/workflow-runs/... (docs/workflows.md).

#include <array>

#include <spdlog/spdlog.h>

#include "impl/audit.hpp"
#include "impl/context.hpp"
#include "impl/job_input.hpp"
#include "impl/list_query.hpp"
#include "impl/resource_routes.hpp"
#include "impl/views.hpp"
#include "impl/workflows.hpp"
#include "sched/http/json.hpp"
#include "sched/store/workflow.hpp"
#include "sched/store/workflow_run.hpp"

namespace sched::web::impl {

namespace {

using http::Method;
using http::Request;
using http::Response;

constexpr const char* kWorkflowKind = "workflow";  // audit target kinds
constexpr const char* kRunKind = "workflow-run";

Response WorkflowError(const Status& s) {
    return Response::Error(s, WorkflowField(s));
}

// next_fire_time of a workflow about to be stored at DB time `now_ms`: none while paused or for
// manual; else the schedule's first time after now, recomputed only when the schedule or paused
// changed (an edit of the description must not move a time the master has not planned yet).
Status PlanWorkflowNext(WorkflowInput& in, std::int64_t now_ms) {
    auto& w = in.workflow;
    if (w.paused || w.schedule_type == ScheduleType::kManual) {
        w.next_fire_time.reset();
        return Status::Ok();
    }
    if (!in.schedule_changed) return Status::Ok();
    w.next_fire_time = in.schedule->NextFireTime(now_ms);
    if (!w.next_fire_time) {
        return InvalidArgument(std::string(wf_key::kScheduleExpr) + ": \"" + w.schedule_expr +
                               "\" has no fire time after now");
    }
    return Status::Ok();
}

// A workflow read from a body, stored at DB time with its next fire time: created when
// `current` is null, else updated with the version the body carries.
Result<model::Workflow> StoreWorkflow(db::Database& db, const model::Workflow* current, WorkflowInput& in,
                                      const Principal&) {
    auto now = DbNowMs(db);
    if (!now.ok()) return now.status();
    if (Status s = PlanWorkflowNext(in, *now); !s.ok()) return s;
    store::WorkflowRepository workflows(db);
    return current ? workflows.Update(in.workflow, in.version) : workflows.Create(in.workflow);
}

// Pause or resume on the DB pool: unchanged when already so (no version bump, no audit entry).
Result<model::Workflow> SetWorkflowPaused(db::Database& db, const Principal& who, std::int64_t id, bool paused) {
    store::WorkflowRepository workflows(db);
    auto before = workflows.Get(id);
    if (!before.ok() || before->paused == paused) return before;
    std::optional<std::int64_t> next;
    if (!paused && before->schedule_type != ScheduleType::kManual) {
        auto schedule = cron::Schedule::Make(before->schedule_type, before->schedule_expr, before->time_zone);
        if (!schedule.ok()) return schedule.status();
        auto now = DbNowMs(db);
        if (!now.ok()) return now.status();
        // The times while paused are not run (docs/workflows.md "Paused workflow").
        next = schedule->NextFireTime(*now);
    }
    auto after = workflows.SetPaused(id, paused, next);
    if (after.ok()) {
        RecordAudit(db, who,
                    {paused ? "pause" : "resume", kWorkflowKind, std::to_string(id), after->name, WorkflowJson(*before),
                     WorkflowJson(*after)});
    }
    return after;
}

// The body of a trigger: empty, {} or {"params": a string or any JSON value (stored as its text),
// at most kMaxParamsBytes}; otherwise the 400 naming `body`, `params` or the unknown field.
std::optional<Response> ReadTriggerParams(const Request& req, std::optional<std::string>& params) {
    if (req.body.empty()) return std::nullopt;
    auto body = req.Json();
    if (!body.ok()) return Response::Error(body.status(), "body");
    if (!body->is_object()) return BadRequest("body", "body: expected a JSON object");
    static constexpr std::array<std::string_view, 1> kTriggerFields = {wf_key::kParams};
    if (auto unknown = RejectUnknownFields(*body, kTriggerFields)) return unknown;
    if (!body->contains(wf_key::kParams) || (*body)[wf_key::kParams].is_null()) return std::nullopt;
    const auto& value = (*body)[wf_key::kParams];
    std::optional<std::string> text = value.is_string() ? std::optional<std::string>(value.get<std::string>())
                                                        : http::DumpWithin(value, kMaxParamsBytes);
    if (!text || text->size() > kMaxParamsBytes) {
        return BadRequest(wf_key::kParams,
                          std::string(wf_key::kParams) + ": at most " + std::to_string(kMaxParamsBytes) + " bytes");
    }
    params = std::move(*text);
    return std::nullopt;
}

// The body of a rerun: {"from_step": a step name}.
std::optional<Response> ReadFromStep(const Request& req, std::string& from_step) {
    static constexpr std::array<std::string_view, 1> kRerunFields = {wf_key::kFromStep};
    std::optional<Response> error;
    auto body = ReadBodyFields(req, error, kRerunFields);
    if (!body) return error;
    http::JsonFields f(*body);
    from_step = f.String(wf_key::kFromStep);
    if (f.error()) return Response::Error(*f.error());
    if (from_step.size() > model::kMaxStepNameLength) {
        return BadRequest(wf_key::kFromStep, std::string(wf_key::kFromStep) + ": no such step in the run");
    }
    return std::nullopt;
}

}  // namespace

void AddWorkflowRoutes(Routes& routes) {
    auto ctx = routes.context();

    const Resource<WorkflowInput, model::Workflow> workflow{
        .collection = "/api/v1/workflows",
        .kind = kWorkflowKind,
        .fields = {kWorkflowFields, kWorkflowReadOnly},
        .read = ReadWorkflowInput,
        .find = [](db::Database& db, std::int64_t id) { return store::WorkflowRepository(db).Get(id); },
        .view = WorkflowJson,
        .error = WorkflowError};

    routes.Add(Method::kGet, "/api/v1/workflows", Permission::kViewer, kPageQuery,
               ListHandler<store::WorkflowRepository>(ctx, workflow));

    routes.Add(Method::kPost, "/api/v1/workflows", Permission::kOperator,
               CreateHandler(ctx, workflow,
                             {.store = StoreWorkflow,
                              // Its first run is the master's to plan (shard 0's).
                              .wakes_masters = true}));

    routes.Add(Method::kGet, "/api/v1/workflows/{id}", Permission::kViewer, GetHandler(ctx, workflow));

    routes.Add(Method::kPut, "/api/v1/workflows/{id}", Permission::kOperator,
               UpdateHandler(ctx, workflow,
                             {.store = StoreWorkflow,
                              // A new schedule or next fire time.
                              .wakes_masters = true}));

    for (const bool pause : {true, false}) {
        routes.Add(
            Method::kPost, pause ? "/api/v1/workflows/{id}/pause" : "/api/v1/workflows/{id}/resume",
            Permission::kOperator,
            ActionHandler([ctx, pause](Request&, std::int64_t id, const Principal& who) -> net::awaitable<Response> {
                auto work = [&who, id, pause](db::Database& db) {
                    return SetWorkflowPaused(db, who, id, pause);
                };
                auto workflow = co_await WithDb(*ctx, work);
                if (!workflow.ok()) co_return WorkflowError(workflow.status());
                // A resumed workflow has a next fire time again; a paused one needs nothing.
                if (!pause) WakeMasters(*ctx);
                spdlog::info("web: workflow {} {} by {}", id, pause ? "paused" : "resumed", who.name);
                co_return Response::Json(WorkflowJson(*workflow));
            }));
    }

    routes.Add(Method::kDelete, "/api/v1/workflows/{id}", Permission::kOperator,
               DeleteHandler(ctx, workflow, [](db::Database& db, std::int64_t id) {
                   return store::WorkflowRepository(db).Delete(id);
               }));

    // A manual run: the overlap check and the insert in one write transaction, so two triggers
    // racing for the last slot create one run.
    routes.Add(Method::kPost, "/api/v1/workflows/{id}/trigger", Permission::kOperator,
               [ctx](Request& req, const Principal& who) -> net::awaitable<Response> {
                   std::optional<Response> error;
                   const auto id = PathId(req, error);
                   if (!id) co_return *error;
                   std::optional<std::string> params;
                   if (auto rejected = ReadTriggerParams(req, params)) co_return *rejected;
                   auto work = [&who, &params, id = *id](db::Database& db) -> Result<model::WorkflowRun> {
                       return db.InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Result<model::WorkflowRun> {
                           const auto workflow = store::WorkflowRepository::Find(s, id);
                           if (!workflow) return NotFound("workflow " + std::to_string(id) + " not found");
                           std::int64_t now = 0;
                           s << "SELECT " + std::string(db.dialect().NowMs()), soci::into(now);
                           const int running = store::WorkflowRunRepository::CountRunning(s, id);
                           if (running >= workflow->max_concurrent_runs) {
                               return FailedPrecondition(std::string(wf_key::kMaxConcurrentRuns) + ": " +
                                                         std::to_string(running) + " runs of workflow \"" +
                                                         workflow->name + "\" are running (max_concurrent_runs " +
                                                         std::to_string(workflow->max_concurrent_runs) + ")");
                           }
                           model::WorkflowRun run;
                           run.workflow_id = id;
                           run.scheduled_time = now;
                           run.kind = model::WorkflowRunKind::kManual;
                           run.status = model::WorkflowRunStatus::kRunning;
                           run.params = params;
                           run.workflow_version = workflow->version;
                           run.definition = {workflow->steps, workflow->edges};
                           run.created_by = who.name;
                           run.started_at = now;
                           const auto inserted = store::WorkflowRunRepository::InsertIfAbsent(s, db.dialect(), run);
                           if (!inserted) {
                               return AlreadyExists(std::string(wf_key::kScheduledTime) + ": workflow \"" +
                                                    workflow->name + "\" already has a run at " + std::to_string(now));
                           }
                           auto stored = store::WorkflowRunRepository::Find(s, *inserted);
                           if (!stored) return Internal("the run just inserted is gone");
                           RecordAudit(s, db.dialect(), who,
                                       {"trigger", kWorkflowKind, std::to_string(id), workflow->name, std::nullopt,
                                        WorkflowRunJson(*stored)});
                           return *stored;
                       });
                   };
                   auto run = co_await WithDb(*ctx, work);
                   if (!run.ok()) {
                       const Status& s = run.status();
                       if (s.code() == Code::kFailedPrecondition)
                           co_return Response::Error(s, wf_key::kMaxConcurrentRuns);
                       if (s.code() == Code::kAlreadyExists) co_return Response::Error(s, wf_key::kScheduledTime);
                       co_return WorkflowError(s);
                   }
                   // The master starts the run's first steps.
                   WakeMasters(*ctx);
                   spdlog::info("web: workflow {} triggered by {} (run {})", *id, who.name, run->id);
                   Response response = Response::Json(WorkflowRunJson(*run), 201);
                   response.headers.Set("Location", "/api/v1/workflow-runs/" + std::to_string(run->id));
                   co_return response;
               });

    // Newest first: the cursor is the last run id of the page, the next page the ids below it.
    routes.Add(
        Method::kGet, "/api/v1/workflows/{id}/runs", Permission::kViewer, kPageQuery,
        ChildPageHandler(ctx, [](db::Database& db, std::int64_t id, const PageRequest& page) -> Result<nlohmann::json> {
            return CursorPage(store::WorkflowRunRepository(db).ListForWorkflow(id, page.cursor, page.limit + 1),
                              page.limit, WorkflowRunJson);
        }));

    AddWorkflowRunRoute(routes);  // GET /api/v1/workflow-runs/{id} (workflow_runs_api.cpp)

    // Re-run from a step: a CAS on the generation read, with the overlap check, in one write
    // transaction (docs/workflows.md "Re-run from a step").
    routes.Add(Method::kPost, "/api/v1/workflow-runs/{id}/rerun", Permission::kOperator,
               [ctx](Request& req, const Principal& who) -> net::awaitable<Response> {
                   std::optional<Response> error;
                   const auto id = PathId(req, error);
                   if (!id) co_return *error;
                   std::string from_step;
                   if (auto rejected = ReadFromStep(req, from_step)) co_return *rejected;
                   std::string field;
                   auto work = [&who, &from_step, &field, id = *id](db::Database& db) -> Result<model::WorkflowRun> {
                       return db.InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Result<model::WorkflowRun> {
                           const auto run = store::WorkflowRunRepository::Find(s, id);
                           if (!run) {
                               field = wf_key::kId;
                               return NotFound("workflow run " + std::to_string(id) + " not found");
                           }
                           bool known = false;
                           for (const auto& step : run->definition.steps) known = known || step.name == from_step;
                           if (!known) {
                               field = wf_key::kFromStep;
                               return InvalidArgument(std::string(wf_key::kFromStep) + ": run " + std::to_string(id) +
                                                      " has no step \"" + from_step + "\"");
                           }
                           if (run->status != model::WorkflowRunStatus::kFailed &&
                               run->status != model::WorkflowRunStatus::kTimedOut) {
                               field = wf_key::kStatus;
                               return FailedPrecondition(std::string(wf_key::kStatus) + ": run " + std::to_string(id) +
                                                         " is " +
                                                         std::string(model::kWorkflowRunStatusNames.Name(run->status)) +
                                                         "; only a failed or timed-out run is re-run");
                           }
                           const auto workflow = store::WorkflowRepository::Find(s, run->workflow_id);
                           const int max_runs = workflow ? workflow->max_concurrent_runs : 1;
                           const int running = store::WorkflowRunRepository::CountRunning(s, run->workflow_id);
                           if (running >= max_runs) {
                               field = wf_key::kMaxConcurrentRuns;
                               return FailedPrecondition(std::string(wf_key::kMaxConcurrentRuns) + ": " +
                                                         std::to_string(running) + " other runs are running (max " +
                                                         std::to_string(max_runs) + ")");
                           }
                           std::int64_t now = 0;
                           s << "SELECT " + std::string(db.dialect().NowMs()), soci::into(now);
                           if (!store::WorkflowRunRepository::Rerun(s, id, run->generation, from_step, now)) {
                               field = wf_key::kGeneration;
                               return Aborted(std::string(wf_key::kGeneration) + ": run " + std::to_string(id) +
                                              " changed meanwhile, or was re-run " +
                                              std::to_string(model::kMaxRunGeneration) + " times");
                           }
                           auto after = store::WorkflowRunRepository::Find(s, id);
                           if (!after) return Internal("the run just re-run is gone");
                           RecordAudit(s, db.dialect(), who,
                                       {"rerun", kRunKind, std::to_string(id), from_step, WorkflowRunJson(*run),
                                        WorkflowRunJson(*after)});
                           return *after;
                       });
                   };
                   auto run = co_await WithDb(*ctx, work);
                   if (!run.ok()) co_return Response::Error(run.status(), field);
                   // The master starts the run again from that step.
                   WakeMasters(*ctx);
                   spdlog::info("web: workflow run {} re-run from \"{}\" by {}", *id, from_step, who.name);
                   co_return Response::Json(WorkflowRunJson(*run));
               });
}

}  // namespace sched::web::impl
