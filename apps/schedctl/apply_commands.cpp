// schedctl diff and apply: the cluster's jobs (and the calendars: section's calendars) kept
// equal to a file, keyed by name (docs/schedctl.md "apply and diff").

#include "calendar_file.hpp"
#include "commands.hpp"
#include "job_file.hpp"
#include "plan.hpp"

namespace sched::ctl {
namespace {

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
    // Without a calendars: key the cluster's calendars are not the file's business, even with --prune.
    const Plan calendar_plan =
        *calendars ? PlanCalendarChanges(**calendars, s.ListAllCalendars().items, o.prune) : Plan{};
    const Plan plan = PlanChanges(*desired, s.ListAllJobs().items, o.prune);
    if (*calendars) s.out() << FormatPlan(calendar_plan, "calendar ", "Calendars");
    s.out() << FormatPlan(plan);
    const bool drift = plan.HasDrift() || calendar_plan.HasDrift();
    if (!apply) return drift ? 2 : 0;
    if (o.dry_run || !drift) return 0;

    const ApiCall call = s.Caller();
    // Calendars are created and updated before the jobs (a job may name a new one) and deleted
    // after them (the API refuses to delete a calendar a job still names).
    const auto [calendar_upserts, calendar_deletes] = SplitDeletes(calendar_plan);
    int failures = ApplyPlan(calendar_upserts, call, s.out(), s.err(), "calendar");
    failures += ApplyPlan(plan, call, s.out(), s.err());
    failures += ApplyPlan(calendar_deletes, call, s.out(), s.err(), "calendar");
    return failures == 0 ? 0 : 1;
}

}  // namespace

void AddApplyCommands(CLI::App& app, CommandLine& line) {
    CLI::App* diff = AddCommand(app, "diff", "what apply would change; exit 0 no drift, 2 drift, 1 error", line,
                                [](Session& s) { return ApplyOrDiff(s, false); });
    AddFileOption(*diff, line, "the job file (jobs: and calendars:)");
    diff->add_flag("--prune", line.options.prune, "also the cluster's jobs missing from the file");
    CLI::App* apply = AddCommand(app, "apply", "make the cluster's jobs (and calendars) match the file, keyed by name",
                                 line, [](Session& s) { return ApplyOrDiff(s, true); });
    AddFileOption(*apply, line, "the job file (jobs: and calendars:)");
    apply->add_flag("--dry-run", line.options.dry_run, "print the plan, change nothing");
    apply->add_flag("--prune", line.options.prune, "delete the cluster's jobs missing from the file");
}

}  // namespace sched::ctl
