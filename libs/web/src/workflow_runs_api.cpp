// GET /api/v1/workflow-runs/{id}: a run with each step's state, computed from its step fires as
// the master computes it (model::EvaluateRun).

#include "impl/context.hpp"
#include "impl/resource_routes.hpp"
#include "impl/workflows.hpp"
#include "sched/model/workflow_progress.hpp"
#include "sched/store/fire.hpp"

namespace sched::web::impl {

void AddWorkflowRunRoute(Routes& routes) {
    auto ctx = routes.context();
    routes.Add(http::Method::kGet, "/api/v1/workflow-runs/{id}", Permission::kViewer,
               GetHandler(
                   ctx, [](const Status& s) { return http::Response::Error(s, WorkflowField(s)); },
                   [](db::Database& db, std::int64_t id) -> Result<nlohmann::json> {
                       return db.InTransaction(db::TxMode::kRead, [&](soci::session& s) -> Result<nlohmann::json> {
                           const auto run = store::WorkflowRunRepository::Find(s, id);
                           if (!run) return NotFound("workflow run " + std::to_string(id) + " not found");
                           auto graph = model::WorkflowGraph::Make(run->definition.steps, run->definition.edges);
                           if (!graph.ok()) return graph.status();
                           const auto fires = store::FireRepository::ListForWorkflowRuns(s, {id});
                           const auto progress = model::EvaluateRun(*graph, *run, fires);
                           std::vector<RunStepView> views;
                           views.reserve(progress.steps.size());
                           for (const auto& step : progress.steps) {
                               views.push_back({std::string(model::kStepStateNames.Name(step.state)), step.generation,
                                                step.fire, step.fires, step.ready_at});
                           }
                           return WorkflowRunDetailJson(*run, views);
                       });
                   }));
}

}  // namespace sched::web::impl
