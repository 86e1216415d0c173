// schedctl diff and apply: the cluster's jobs (and the calendars:, workflows: and alerts: sections'
// calendars, workflows and alert rules) kept equal to a file, keyed by name (docs/schedctl.md
// "apply and diff").

#include <filesystem>

#include "alert_file.hpp"
#include "calendar_file.hpp"
#include "commands.hpp"
#include "job_file.hpp"
#include "plan.hpp"
#include "table.hpp"
#include "workflow_file.hpp"

namespace sched::ctl {
namespace {

// The plan's creates and updates with the job names in their bodies turned into ids by
// `resolve` (ResolveStepJobs for workflows, ResolveRuleJob for alert rules), read from `jobs`
// (the cluster's jobs after the file's were applied). A change naming a job that is not there is
// reported and left out, counted in `failures`: the API would refuse it anyway, less clearly.
using ResolveJobs = Result<nlohmann::json> (*)(const nlohmann::json& body, const nlohmann::json& jobs);
Plan WithJobIds(const Plan& plan, std::string_view what, ResolveJobs resolve, const nlohmann::json& jobs,
                std::ostream& err, int& failures) {
    Plan out;
    for (PlannedChange c : plan.changes) {
        if (c.kind == ChangeKind::kCreate || c.kind == ChangeKind::kUpdate) {
            auto body = resolve(c.body, jobs);
            if (!body.ok()) {
                ++failures;
                err << "schedctl: " << what << " " << SanitizeCell(c.name) << ": not "
                    << (c.kind == ChangeKind::kCreate ? "created" : "updated") << ": " << body.status().message()
                    << "\n";
                continue;
            }
            c.body = std::move(*body);
        }
        out.changes.push_back(std::move(c));
    }
    return out;
}

// diff: exit 0 without drift, 2 with; apply: the plan, then its changes (1 when one failed).
int ApplyOrDiff(Session& s, bool apply) {
    const Options& o = s.options();
    if (o.file.empty()) Usage(std::string(apply ? "apply" : "diff") + ": -f FILE is required");
    auto text = ReadBoundedFile(o.file);
    if (!text.ok()) throw CliError(text.status().message());
    auto desired = ParseJobFile(*text, o.file);
    if (!desired.ok()) throw CliError(desired.status().message());
    auto calendars = ParseCalendarSection(*text, o.file);
    if (!calendars.ok()) throw CliError(calendars.status().message());
    auto workflows = ParseWorkflowSection(*text, o.file);
    if (!workflows.ok()) throw CliError(workflows.status().message());
    auto rules = ParseAlertSection(*text, o.file);
    if (!rules.ok()) throw CliError(rules.status().message());
    // Every job and workflow of the file is marked as the file's (the UI shows it read-only):
    // by the file's own name, not its path, which differs between a laptop and a CI checkout.
    const std::string managed_by = std::filesystem::path(o.file).filename().string();
    for (auto& job : *desired) job.fields["managed_by"] = managed_by;
    if (*workflows) {
        for (auto& workflow : **workflows) workflow.fields["managed_by"] = managed_by;
    }
    if (*rules) {
        for (auto& rule : **rules) rule.fields["managed_by"] = managed_by;
    }
    // Without a calendars: (workflows:, alerts:) key the cluster's calendars (workflows, alert
    // rules) are not the file's business, even with --prune.
    const Plan calendar_plan =
        *calendars ? PlanCalendarChanges(**calendars, s.ListAllCalendars().items, o.prune) : Plan{};
    const nlohmann::json jobs = s.ListAllJobs().items;
    const Plan plan = PlanChanges(*desired, jobs, o.prune);
    // Steps are compared by job name: a job the file creates has no id yet.
    const Plan workflow_plan =
        *workflows ? PlanWorkflowChanges(**workflows, StepsByJobName(s.ListAllWorkflows().items, jobs), o.prune)
                   : Plan{};
    // A rule names its job by name too.
    const Plan rule_plan =
        *rules ? PlanAlertRuleChanges(**rules, RulesByJobName(s.ListAllAlertRules().items, jobs), o.prune) : Plan{};
    if (*calendars) s.out() << FormatPlan(calendar_plan, "calendar ", "Calendars");
    s.out() << FormatPlan(plan);
    if (*workflows) s.out() << FormatPlan(workflow_plan, "workflow ", "Workflows");
    if (*rules) s.out() << FormatPlan(rule_plan, "alert-rule ", "Alert rules");
    const bool drift = plan.HasDrift() || calendar_plan.HasDrift() || workflow_plan.HasDrift() || rule_plan.HasDrift();
    if (!apply) return drift ? 2 : 0;
    if (o.dry_run || !drift) return 0;

    const ApiCall call = s.Caller();
    // Created and updated in dependency order (a job may name a new calendar, a workflow's step or
    // an alert rule a new job), deleted in the reverse one (the API refuses to delete a calendar a
    // job names or a job a workflow runs).
    const auto [calendar_upserts, calendar_deletes] = SplitDeletes(calendar_plan);
    const auto [job_upserts, job_deletes] = SplitDeletes(plan);
    const auto [workflow_upserts, workflow_deletes] = SplitDeletes(workflow_plan);
    const auto [rule_upserts, rule_deletes] = SplitDeletes(rule_plan);
    int failures = ApplyPlan(calendar_upserts, call, s.out(), s.err(), "calendar");
    failures += ApplyPlan(job_upserts, call, s.out(), s.err());
    // The jobs as they are after the file's were applied: a step or a rule may name a new one.
    const nlohmann::json jobs_now =
        workflow_upserts.HasDrift() || rule_upserts.HasDrift() ? s.ListAllJobs().items : nlohmann::json::array();
    if (workflow_upserts.HasDrift()) {
        const Plan resolved = WithJobIds(workflow_upserts, "workflow", ResolveStepJobs, jobs_now, s.err(), failures);
        failures += ApplyPlan(resolved, call, s.out(), s.err(), "workflow");
    }
    if (rule_upserts.HasDrift()) {
        const Plan resolved = WithJobIds(rule_upserts, "alert-rule", ResolveRuleJob, jobs_now, s.err(), failures);
        failures += ApplyPlan(resolved, call, s.out(), s.err(), "alert-rule");
    }
    failures += ApplyPlan(rule_deletes, call, s.out(), s.err(), "alert-rule");
    failures += ApplyPlan(workflow_deletes, call, s.out(), s.err(), "workflow");
    failures += ApplyPlan(job_deletes, call, s.out(), s.err());
    failures += ApplyPlan(calendar_deletes, call, s.out(), s.err(), "calendar");
    return failures == 0 ? 0 : 1;
}

}  // namespace

void AddApplyCommands(CLI::App& app, CommandLine& line) {
    CLI::App* diff = AddCommand(app, "diff", "what apply would change; exit 0 no drift, 2 drift, 1 error", line,
                                [](Session& s) { return ApplyOrDiff(s, false); });
    AddFileOption(*diff, line, "the file (jobs:, calendars:, workflows: and alerts:)");
    diff->add_flag("--prune", line.options.prune,
                   "also the cluster's jobs (calendars, workflows, alert rules) missing from the file");
    CLI::App* apply = AddCommand(
        app, "apply", "make the cluster's jobs (calendars, workflows, alert rules) match the file, keyed by name", line,
        [](Session& s) { return ApplyOrDiff(s, true); });
    AddFileOption(*apply, line, "the file (jobs:, calendars:, workflows: and alerts:)");
    apply->add_flag("--dry-run", line.options.dry_run, "print the plan, change nothing");
    apply->add_flag("--prune", line.options.prune,
                    "delete the cluster's jobs (calendars, workflows, alert rules) missing from the file");
}

}  // namespace sched::ctl
