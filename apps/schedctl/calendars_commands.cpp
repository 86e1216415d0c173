// schedctl calendars ...: list, get, apply, delete.

#include <map>

#include "calendar_file.hpp"
#include "commands.hpp"
#include "job_file.hpp"
#include "plan.hpp"
#include "table.hpp"

namespace sched::ctl {
namespace {

int List(Session& s) {
    const auto calendars = s.ListAllCalendars();
    if (s.Json()) {
        s.PrintItems(calendars.items);
        return 0;
    }
    // Which jobs name each calendar: the API's calendar objects do not say, the jobs do.
    std::map<std::string, std::vector<std::string>> used_by;
    for (const auto& j : s.ListAllJobs().views) {
        if (j.calendar) used_by[*j.calendar].push_back(j.name);
    }
    std::vector<std::vector<std::string>> rows;
    rows.reserve(calendars.views.size());
    for (const auto& c : calendars.views) {
        const auto& jobs = used_by[c.name];
        std::string jobs_cell;
        for (std::size_t i = 0; i < jobs.size() && i < 3; ++i) jobs_cell += (i ? ", " : "") + jobs[i];
        if (jobs.size() > 3) jobs_cell += " (+" + std::to_string(jobs.size() - 3) + ")";
        rows.push_back({Cell(c.id), c.name, c.time_zone, SanitizeCell(CalendarRulesSummary(api::ToJson(c))),
                        Cell(c.version), jobs_cell.empty() ? "-" : SanitizeCell(jobs_cell)});
    }
    s.out() << RenderTable({"ID", "NAME", "ZONE", "EXCLUDES", "VERSION", "USED BY"}, rows);
    return 0;
}

int Get(Session& s) {
    const std::string id = s.CalendarIdOf(s.Argument(0));
    return s.AnswerObject(s.CallOk(http::Method::kGet, "/api/v1/calendars/" + id));
}

// A calendar still named by jobs: 409, the message names them.
int Delete(Session& s) {
    const std::string id = s.CalendarIdOf(s.Argument(0));
    return s.Answer(s.CallOk(http::Method::kDelete, "/api/v1/calendars/" + id),
                    [&] { s.out() << "calendar " << id << " deleted\n"; });
}

// `calendars apply -f FILE`: the file's calendars: section alone (its jobs are not looked at).
int Apply(Session& s) {
    const Options& o = s.options();
    if (o.file.empty()) Usage("calendars apply: -f FILE is required");
    auto text = ReadBoundedFile(o.file);
    if (!text.ok()) throw CliError(text.status().message());
    auto calendars = ParseCalendarSection(*text, o.file);
    if (!calendars.ok()) throw CliError(calendars.status().message());
    if (!*calendars) throw CliError(o.file + ": no calendars: section");
    const Plan plan = PlanCalendarChanges(**calendars, s.ListAllCalendars().items, o.prune);
    s.out() << FormatPlan(plan, "calendar ", "Calendars");
    if (o.dry_run || !plan.HasDrift()) return 0;
    return ApplyPlan(plan, s.Caller(), s.out(), s.err(), "calendar") == 0 ? 0 : 1;
}

}  // namespace

void AddCalendarsCommands(CLI::App& app, CommandLine& line) {
    CLI::App* calendars = AddFamily(app, "calendars", "calendars: the dates, weekdays and times jobs do not run");
    AddCommand(*calendars, "list", "every calendar, with the jobs that name it", line, List);
    TakesArguments(*AddCommand(*calendars, "get", "one calendar", line, Get), "ID|NAME", line,
                   "the calendar's id or name");
    CLI::App* apply = AddCommand(*calendars, "apply", "only the file's calendars: section", line, Apply);
    AddFileOption(*apply, line, "the file whose calendars: section to apply");
    apply->add_flag("--dry-run", line.options.dry_run, "print the plan, change nothing");
    apply->add_flag("--prune", line.options.prune, "delete the calendars missing from the file");
    TakesArguments(*AddCommand(*calendars, "delete", "delete a calendar no job names", line, Delete), "ID|NAME", line,
                   "the calendar's id or name");
}

}  // namespace sched::ctl
