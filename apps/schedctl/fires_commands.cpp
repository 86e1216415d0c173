// schedctl fires ...: list, get, log, kill.

#include "commands.hpp"
#include "table.hpp"

namespace sched::ctl {
namespace {

std::string FirePath(const std::string& id) {
    return "/api/v1/fires/" + id;
}

// The newest page of fires, filtered by --job (a name or an id), --status and --limit.
int List(Session& s) {
    const Options& o = s.options();
    std::string query;
    if (o.job) query += "&job_id=" + s.JobIdOf(*o.job);
    if (o.status) query += "&status=" + QueryEscape(*o.status);
    query += s.LimitQuery();
    const std::string path = "/api/v1/fires" + (query.empty() ? std::string() : "?" + query.substr(1));
    return s.AnswerWith<api::Page<api::FireView>>(
        http::Method::kGet, path, std::nullopt,
        [&](const api::Page<api::FireView>& page) { PrintFires(s, page.items); });
}

int Get(Session& s) {
    return s.AnswerObject(s.CallOk(http::Method::kGet, FirePath(s.IdArgument(0, "fires get"))));
}

int Log(Session& s) {
    return s.AnswerWith<api::FireLogView>(http::Method::kGet, FirePath(s.IdArgument(0, "fires log")) + "/log",
                                          std::nullopt, [&](const api::FireLogView& log) {
                                              for (const auto& line : log.lines) s.out() << SanitizeCell(line) << "\n";
                                          });
}

int Kill(Session& s) {
    const std::string id = s.IdArgument(0, "fires kill");
    return s.Answer(s.CallOk(http::Method::kPost, FirePath(id) + "/kill"),
                    [&] { s.out() << "fire " << id << " kill requested\n"; });
}

}  // namespace

void AddFiresCommands(CLI::App& app, CommandLine& line) {
    CLI::App* fires = AddFamily(app, "fires", "fires: runs of jobs, and the times that did not run");
    Options& o = line.options;
    CLI::App* list = AddCommand(*fires, "list", "the newest fires", line, List);
    AddValue(*list, "--job", o.job, "a job's name or id");
    AddValue(*list, "--status", o.status, "pending, running, succeeded, failed, ...");
    AddValue(*list, "--limit", o.limit, "at most N fires");
    TakesArguments(*AddCommand(*fires, "get", "one fire", line, Get), "ID", line, "the fire's id");
    TakesArguments(*AddCommand(*fires, "log", "what the fire's handler printed", line, Log), "ID", line,
                   "the fire's id");
    TakesArguments(*AddCommand(*fires, "kill", "kill a running fire", line, Kill), "ID", line, "the fire's id");
}

}  // namespace sched::ctl
