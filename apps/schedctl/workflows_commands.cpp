// schedctl workflows ...: list, get, create, update, delete, pause, resume, trigger, runs, run, rerun.

#include "commands.hpp"
#include "job_file.hpp"
#include "sched/api/workflows.hpp"
#include "table.hpp"
#include "workflow_file.hpp"

namespace sched::ctl {
namespace {

std::string WorkflowPath(const std::string& id) {
    return "/api/v1/workflows/" + id;
}

std::string RunPath(const std::string& id) {
    return "/api/v1/workflow-runs/" + id;
}

int List(Session& s) {
    return s.AnswerWith<api::Page<api::WorkflowView>>(
        http::Method::kGet, "/api/v1/workflows?limit=200", std::nullopt, [&](const api::Page<api::WorkflowView>& page) {
            s.out() << RenderRows({"ID", "NAME", "SCHEDULE", "STEPS", "PAUSED", "NEXT"}, page.items,
                                  [&](const auto& w) {
                                      return TableRow{Cell(w.id),
                                                      SanitizeCell(w.name),
                                                      w.schedule_type + " " + SanitizeCell(w.schedule_expr),
                                                      std::to_string(w.steps.size()),
                                                      Cell(w.paused),
                                                      TimeCell(w.next_fire_time)};
                                  });
        });
}

int Get(Session& s) {
    return s.AnswerObject(s.CallOk(http::Method::kGet, WorkflowPath(s.IdArgument(0, "workflows get"))));
}

// -f FILE as a workflow body, its steps' job names turned into ids (the file names jobs as the
// apply file does; ids differ between clusters).
nlohmann::json ReadWorkflowDocument(Session& s, bool partial) {
    const std::string& file = s.options().file;
    if (file.empty()) Usage("-f FILE is required");
    auto text = ReadBoundedFile(file);
    if (!text.ok()) throw CliError(text.status().message());
    auto doc = ParseWorkflowDocument(*text, file, partial);
    if (!doc.ok()) throw CliError(doc.status().message());
    if (!doc->contains("steps")) return *doc;
    auto resolved = ResolveStepJobs(*doc, s.ListAllJobs().items);
    if (!resolved.ok()) throw CliError(file + ": " + resolved.status().message());
    return *resolved;
}

int Create(Session& s) {
    return s.AnswerWith<api::WorkflowView>(
        http::Method::kPost, "/api/v1/workflows", ReadWorkflowDocument(s, false), [&](const api::WorkflowView& w) {
            s.out() << "workflow " << w.id << " created (" << SanitizeCell(w.name) << ")\n";
        });
}

int Update(Session& s) {
    const std::string id = s.IdArgument(0, "workflows update");
    nlohmann::json body = ReadWorkflowDocument(s, true);
    if (!body.contains("version")) {
        // No version in the file: the one read now (a concurrent change between this read and
        // the PUT is still a 409).
        body["version"] = s.CallFor<api::WorkflowView>(http::Method::kGet, WorkflowPath(id)).version;
    }
    return s.AnswerWith<api::WorkflowView>(http::Method::kPut, WorkflowPath(id), body, [&](const api::WorkflowView& w) {
        s.out() << "workflow " << id << " updated (version " << w.version << ")\n";
    });
}

int Delete(Session& s) {
    const std::string id = s.IdArgument(0, "workflows delete");
    return s.Answer(s.CallOk(http::Method::kDelete, WorkflowPath(id)),
                    [&] { s.out() << "workflow " << id << " deleted\n"; });
}

// pause or resume.
int SetPaused(Session& s, const std::string& action) {
    const std::string id = s.IdArgument(0, "workflows " + action);
    return s.Answer(s.CallOk(http::Method::kPost, WorkflowPath(id) + "/" + action),
                    [&] { s.out() << "workflow " << id << (action == "pause" ? " paused\n" : " resumed\n"); });
}

int Trigger(Session& s) {
    const std::string id = s.IdArgument(0, "workflows trigger");
    std::optional<nlohmann::json> body;
    if (const auto& text = s.options().params) {
        // JSON text is sent as JSON (the steps receive its compact text); anything else as a string.
        nlohmann::json params = nlohmann::json::parse(*text, nullptr, false);
        if (params.is_discarded()) params = *text;
        body = nlohmann::json{{"params", std::move(params)}};
    }
    return s.AnswerWith<api::WorkflowRunView>(
        http::Method::kPost, WorkflowPath(id) + "/trigger", body,
        [&](const api::WorkflowRunView& run) { s.out() << "workflow " << id << " triggered: run " << run.id << "\n"; });
}

int Runs(Session& s) {
    const std::string id = s.IdArgument(0, "workflows runs");
    const std::string query = s.LimitQuery();
    const std::string path = WorkflowPath(id) + "/runs" + (query.empty() ? std::string() : "?" + query.substr(1));
    return s.AnswerWith<api::Page<api::WorkflowRunView>>(
        http::Method::kGet, path, std::nullopt, [&](const api::Page<api::WorkflowRunView>& page) {
            s.out() << RenderRows(
                {"RUN", "SCHEDULED", "KIND", "STATUS", "GENERATION", "REASON"}, page.items, [&](const auto& run) {
                    return TableRow{Cell(run.id), TimeCell(run.scheduled_time), run.kind,
                                    run.status,   Cell(run.generation),         SanitizeCell(Cell(run.reason))};
                });
        });
}

int Run(Session& s) {
    const std::string run_id = s.IdArgument(0, "workflows run");
    return s.AnswerWith<api::WorkflowRunDetailView>(
        http::Method::kGet, RunPath(run_id), std::nullopt, [&](const api::WorkflowRunDetailView& run) {
            s.out() << "run " << run_id << ": " << run.status;
            if (run.reason) s.out() << " (" << SanitizeCell(*run.reason) << ")";
            s.out() << ", generation " << run.generation << "\n";
            s.out() << RenderRows({"STEP", "JOB", "STATE", "FIRE", "FIRE STATUS", "ATTEMPTS", "LAG MS", "MESSAGE"},
                                  run.steps, [&](const auto& step) {
                                      return TableRow{SanitizeCell(step.name),
                                                      Cell(step.job_id),
                                                      step.state,
                                                      Cell(step.fire_id),
                                                      Cell(step.fire_status),
                                                      Cell(step.attempts),
                                                      Cell(step.lag_ms),
                                                      SanitizeCell(Cell(step.message))};
                                  });
        });
}

int Rerun(Session& s) {
    const std::string run_id = s.IdArgument(0, "workflows rerun");
    const auto& from_step = s.options().from_step;
    if (!from_step || from_step->empty()) Usage("workflows rerun: --from-step NAME is required");
    const nlohmann::json body = {{"from_step", *from_step}};
    return s.AnswerWith<api::WorkflowRunView>(
        http::Method::kPost, RunPath(run_id) + "/rerun", body, [&](const api::WorkflowRunView& run) {
            s.out() << "run " << run_id << " re-run from " << SanitizeCell(*from_step) << " (generation "
                    << run.generation << ")\n";
        });
}

}  // namespace

void AddWorkflowsCommands(CLI::App& app, CommandLine& line) {
    CLI::App* workflows = AddFamily(app, "workflows", "workflows: DAGs of jobs, and their runs");
    Options& o = line.options;
    OnlyFor(*workflows, "--params", "--params: only workflows trigger takes params", line);
    OnlyFor(*workflows, "--from-step", "--from-step: only workflows rerun takes a step", line);
    const auto add = [&](const std::string& name, const std::string& description, Command command,
                         const std::string& argument) {
        CLI::App* sub = AddCommand(*workflows, name, description, line, std::move(command));
        if (argument == "ID") TakesArguments(*sub, argument, line, "the workflow's id");
        if (argument == "RUN_ID") TakesArguments(*sub, argument, line, "the run's id");
        return sub;
    };
    add("list", "every workflow", List, "");
    add("get", "one workflow", Get, "ID");
    AddFileOption(*add("create", "a workflow from -f FILE; steps name their jobs", Create, ""), line,
                  "the workflow's fields, YAML or JSON (a step: {name, job: a job's name})");
    AddFileOption(*add("update", "a workflow's fields from -f FILE; left out ones keep their values", Update, "ID"),
                  line, "the fields to change, YAML or JSON; steps and edges replace the lists; version: optional");
    add("delete", "delete a workflow (refused while a run is running)", Delete, "ID");
    add(
        "pause", "pause a workflow", [](Session& s) { return SetPaused(s, "pause"); }, "ID");
    add(
        "resume", "resume a workflow", [](Session& s) { return SetPaused(s, "resume"); }, "ID");
    AddValue(*add("trigger", "run a workflow now", Trigger, "ID"), "--params", o.params,
             "every step's params: JSON is sent as JSON, other text as a string");
    AddValue(*add("runs", "a workflow's runs, newest first", Runs, "ID"), "--limit", o.limit, "at most N runs");
    add("run", "a run with each step's state, fire and lag", Run, "RUN_ID");
    AddValue(*add("rerun", "a failed or timed-out run again from a step", Rerun, "RUN_ID"), "--from-step", o.from_step,
             "the step to run again from (required)");
}

}  // namespace sched::ctl
