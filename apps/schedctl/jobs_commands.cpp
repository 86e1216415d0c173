// schedctl jobs ...: list, get, create, update, pause, resume, trigger, backfill, delete.

#include "commands.hpp"
#include "job_file.hpp"
#include "sched/api/backfills.hpp"
#include "sched/api/fires.hpp"
#include "table.hpp"

namespace sched::ctl {

void PrintFires(Session& s, const std::vector<api::FireView>& fires) {
    s.out() << RenderRows({"ID", "JOB", "KIND", "STATUS", "SCHEDULED", "ATTEMPT", "EXECUTOR", "DURATION MS", "REASON"},
                          fires, [&](const auto& f) {
                              return TableRow{Cell(f.id),
                                              Cell(f.job_id),
                                              f.kind,
                                              f.status,
                                              TimeCell(f.scheduled_time),
                                              Cell(f.attempt),
                                              Cell(f.executor_address),
                                              Cell(f.duration_ms),
                                              Cell(f.reason)};
                          });
}

namespace {

std::string JobPath(const std::string& id) {
    return "/api/v1/jobs/" + id;
}

// -f FILE: one job's fields in YAML or JSON.
nlohmann::json ReadJobDocument(const Session& s) {
    const std::string& file = s.options().file;
    if (file.empty()) Usage("-f FILE is required");
    auto text = ReadBoundedFile(file);
    if (!text.ok()) throw CliError(text.status().message());
    auto doc = ParseJobDocument(*text, file);
    if (!doc.ok()) throw CliError(doc.status().message());
    return *doc;
}

int List(Session& s) {
    const auto jobs = s.ListAllJobs();
    if (s.Json()) {
        s.PrintItems(jobs.items);
        return 0;
    }
    s.out() << RenderRows({"ID", "NAME", "APP", "HANDLER", "TYPE", "SCHEDULE", "ENABLED", "NEXT FIRE", "VERSION"},
                          jobs.views, [&](const auto& j) {
                              return TableRow{
                                  Cell(j.id),      j.name,          j.app,           j.handler,
                                  j.schedule_type, j.schedule_expr, Cell(j.enabled), TimeCell(j.next_fire_time),
                                  Cell(j.version)};
                          });
    return 0;
}

int Get(Session& s) {
    return s.AnswerObject(s.CallOk(http::Method::kGet, JobPath(s.IdArgument(0, "jobs get"))));
}

int Create(Session& s) {
    return s.AnswerWith<api::JobView>(
        http::Method::kPost, "/api/v1/jobs", ReadJobDocument(s), [&](const api::JobView& job) {
            s.out() << "job " << job.id << " created (" << SanitizeCell(job.name) << ")\n";
        });
}

int Update(Session& s) {
    const std::string id = s.IdArgument(0, "jobs update");
    nlohmann::json body = ReadJobDocument(s);
    if (!body.contains("version")) {
        // No version in the file: the one read now (a concurrent change between this read and
        // the PUT is still a 409).
        body["version"] = s.CallFor<api::JobView>(http::Method::kGet, JobPath(id)).version;
    }
    return s.AnswerWith<api::JobView>(http::Method::kPut, JobPath(id), body, [&](const api::JobView& job) {
        s.out() << "job " << id << " updated (version " << job.version << ")\n";
    });
}

// pause (with --note), resume or trigger: POST /api/v1/jobs/{id}/<action>.
int Act(Session& s, const std::string& action) {
    const std::string id = s.IdArgument(0, "jobs " + action);
    const auto& note = s.options().note;
    if (note && action != "pause") Usage("--note: only jobs pause takes a note");
    std::optional<nlohmann::json> body;
    if (note) body = nlohmann::json{{"note", *note}};
    const std::string path = JobPath(id) + "/" + action;
    if (action == "trigger") {
        return s.AnswerWith<api::ItemList<api::FireView>>(http::Method::kPost, path, body,
                                                          [&](const api::ItemList<api::FireView>& created) {
                                                              s.out() << "job " << id << " triggered\n";
                                                              PrintFires(s, created.items);
                                                          });
    }
    return s.AnswerWith<api::JobView>(http::Method::kPost, path, body, [&](const api::JobView&) {
        s.out() << "job " << id << (action == "pause" ? " paused\n" : " resumed\n");
    });
}

// POST /api/v1/jobs/{id}/backfill; the server validates the range (its 400 names the field).
int Backfill(Session& s) {
    const std::string id = s.IdArgument(0, "jobs backfill");
    const Options& o = s.options();
    if (!o.from || !o.to) Usage("jobs backfill: --from and --to are required");
    const auto instant = [](const std::string& text) -> nlohmann::json {
        const bool digits =
            !text.empty() && text.size() <= 18 && text.find_first_not_of("0123456789") == std::string::npos;
        if (digits) return std::stoll(text);
        return text;
    };
    nlohmann::json body = {{"from", instant(*o.from)}, {"to", instant(*o.to)}, {"overlap", "serial"}};
    if (o.parallel) {
        const auto n = instant(*o.parallel);
        if (!n.is_number_integer()) throw CliError("--parallel: expected a positive integer, got " + *o.parallel);
        body["overlap"] = "parallel";
        body["max_parallel"] = n;
    }
    const std::string path = JobPath(id) + "/backfill";
    if (o.dry_run) {
        body["dry_run"] = true;
        return s.AnswerWith<api::BackfillDryRunView>(
            http::Method::kPost, path, body, [&](const api::BackfillDryRunView& dry) {
                s.out() << RenderRows({"SCHEDULED", "ACTION"}, dry.items, [&](const auto& item) {
                    return TableRow{TimeCell(item.scheduled_time),
                                    item.existing ? "skip (has a " + *item.existing + " fire)" : "run"};
                });
                s.out() << dry.would_run << " of " << dry.planned
                        << " scheduled time(s) would run (dry run, nothing stored)\n";
            });
    }
    return s.AnswerWith<api::BackfillView>(http::Method::kPost, path, body, [&](const api::BackfillView& backfill) {
        s.out() << "backfill " << backfill.id << " of job " << id << " created: " << backfill.counts.planned
                << " scheduled time(s), " << backfill.overlap << "\n";
    });
}

int Delete(Session& s) {
    const std::string id = s.IdArgument(0, "jobs delete");
    return s.Answer(s.CallOk(http::Method::kDelete, JobPath(id)), [&] { s.out() << "job " << id << " deleted\n"; });
}

}  // namespace

void AddJobsCommands(CLI::App& app, CommandLine& line) {
    CLI::App* jobs = AddFamily(app, "jobs", "the cluster's jobs");
    Options& o = line.options;
    OnlyFor(*jobs, "--note", "--note: only jobs pause takes a note", line);
    const auto with_id = [&line](CLI::App* command) {
        TakesArguments(*command, "ID", line, "the job's id");
        return command;
    };

    AddCommand(*jobs, "list", "every job (GET /api/v1/jobs, every page)", line, List);
    with_id(AddCommand(*jobs, "get", "one job, a FIELD / VALUE table", line, Get));
    AddFileOption(*AddCommand(*jobs, "create", "a job from -f FILE", line, Create), line,
                  "the job's fields, YAML or JSON");
    AddFileOption(*with_id(AddCommand(*jobs, "update", "a job's fields from -f FILE; left out ones keep their values",
                                      line, Update)),
                  line, "the fields to change, YAML or JSON; version: optional");
    CLI::App* pause =
        with_id(AddCommand(*jobs, "pause", "pause a job", line, [](Session& s) { return Act(s, "pause"); }));
    AddValue(*pause, "--note", o.note, "why: shown in the job's paused and its history");
    with_id(AddCommand(*jobs, "resume", "resume a paused job", line, [](Session& s) { return Act(s, "resume"); }));
    with_id(AddCommand(*jobs, "trigger", "fire a job now; prints the fires created", line,
                       [](Session& s) { return Act(s, "trigger"); }));
    CLI::App* backfill =
        with_id(AddCommand(*jobs, "backfill", "run the job for each scheduled time in [--from, --to)", line, Backfill));
    AddValue(*backfill, "--from", o.from, "the first scheduled time (epoch ms or ISO-8601)");
    AddValue(*backfill, "--to", o.to, "the end of the range, exclusive");
    AddValue(*backfill, "--parallel", o.parallel, "run N at a time (serial without it)");
    backfill->add_flag("--dry-run", o.dry_run, "list the times and which already have a fire, store nothing");
    with_id(AddCommand(*jobs, "delete", "delete a job", line, Delete));
}

}  // namespace sched::ctl
