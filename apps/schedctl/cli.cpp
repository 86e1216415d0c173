#include "cli.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <variant>
#include <vector>

#include "api_client.hpp"
#include "apply.hpp"
#include "bounded_yaml.hpp"
#include "calendar_file.hpp"
#include "job_file.hpp"
#include "plan.hpp"
#include "sched/api/audit.hpp"
#include "sched/api/backfills.hpp"
#include "sched/api/calendars.hpp"
#include "sched/api/cluster.hpp"
#include "sched/api/fires.hpp"
#include "sched/api/jobs.hpp"
#include "sched/api/page.hpp"
#include "sched/api/tokens.hpp"
#include "sched/api/workflows.hpp"
#include "table.hpp"

namespace sched::ctl {
namespace {

constexpr std::string_view kHelp = R"(schedctl: operate a sched cluster over its REST API (/api/v1)

Usage: schedctl [global options] COMMAND [arguments]

Commands:
  jobs list                         jobs get ID
  jobs create -f FILE               jobs update ID -f FILE     (FILE: YAML or JSON job fields)
  jobs pause ID [--note TEXT] | resume ID | trigger ID | delete ID
  jobs backfill ID --from T --to T [--parallel N] [--dry-run]
                                    run the job for each scheduled time in [from, to) (T: epoch
                                    ms or ISO-8601); serial unless --parallel N
  calendars list | get ID|NAME | delete ID|NAME
  calendars apply -f FILE [--dry-run] [--prune]
                                    only the file's calendars: section
  workflows list | get ID | pause ID | resume ID | trigger ID [--params TEXT|JSON]
  workflows runs ID [--limit N]     a workflow's runs, newest first
  workflows run RUN_ID              a run with each step's state, fire and lag
  workflows rerun RUN_ID --from-step NAME
                                    a failed or timed-out run again from that step
  fires list [--job NAME|ID] [--status S] [--limit N]
  fires get ID | log ID | kill ID
  executors list                    cluster status
  tokens list | create --name N --role R [--apps a,b] | revoke ID
  audit [--job NAME|ID] [--actor NAME] [--action A] [--since DURATION|MS] [--limit N]
                                    the audit log, newest first (--since 24h: the last day)
  diff -f jobs.yaml [--prune]       what apply would change; exit 0 no drift, 2 drift, 1 error
  apply -f jobs.yaml [--dry-run] [--prune]
                                    make the cluster's jobs (and the calendars: section's
                                    calendars) match the file (keyed by name)

Global options:
  --server URL        the API's base URL (else $SCHED_SERVER, else the config file's server:,
                      else http://127.0.0.1:8080)
  --config FILE       config file (default ~/.config/schedctl/config.yaml) with server: and token:
  -o, --output FMT    table (default) or json (the API's JSON)
  --timeout DURATION  per request (default 10s)
  -h, --help          this help

The API token comes from $SCHED_TOKEN or the config file's token:, never from a command-line
flag (arguments are visible to every user in ps and /proc).
)";

struct Options {
    std::string server;
    std::string config_path;
    std::string output = "table";
    std::string timeout = "10s";
    std::string file;
    bool dry_run = false;
    bool prune = false;
    std::optional<std::string> job, status, limit, name, role, apps, note, since, actor, action;
    std::optional<std::string> from, to, parallel;  // jobs backfill
    std::optional<std::string> params, from_step;   // workflows trigger, rerun
    std::vector<std::string> args;
    bool help = false;
};

class CliError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

Options ParseArgs(int argc, const char* const* argv) {
    Options o;
    // Each option that takes a value, and the field it sets.
    using Field = std::variant<std::string Options::*, std::optional<std::string> Options::*>;
    static const std::map<std::string_view, Field> kValued = {
        {"--server", &Options::server},   {"--config", &Options::config_path},
        {"-o", &Options::output},         {"--output", &Options::output},
        {"--timeout", &Options::timeout}, {"-f", &Options::file},
        {"--file", &Options::file},       {"--job", &Options::job},
        {"--status", &Options::status},   {"--limit", &Options::limit},
        {"--name", &Options::name},       {"--role", &Options::role},
        {"--apps", &Options::apps},       {"--note", &Options::note},
        {"--since", &Options::since},     {"--actor", &Options::actor},
        {"--action", &Options::action},   {"--from", &Options::from},
        {"--to", &Options::to},           {"--parallel", &Options::parallel},
        {"--params", &Options::params},   {"--from-step", &Options::from_step},
    };
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        std::optional<std::string> value;
        if (arg.rfind("--", 0) == 0 && arg.find('=') != std::string::npos) {
            value = arg.substr(arg.find('=') + 1);
            arg = arg.substr(0, arg.find('='));
        }
        if (arg == "--token") {
            throw CliError(
                "--token is not accepted: command-line arguments show in ps; set SCHED_TOKEN or token: in the config "
                "file");
        }
        if (arg == "-h" || arg == "--help") {
            o.help = true;
            continue;
        }
        if (arg == "--dry-run" || arg == "--prune") {
            if (value) throw CliError(arg + " takes no value");
            (arg == "--dry-run" ? o.dry_run : o.prune) = true;
            continue;
        }
        if (const auto setter = kValued.find(arg); setter != kValued.end()) {
            if (!value) {
                if (i + 1 >= argc) throw CliError(arg + " needs a value");
                value = argv[++i];
            }
            std::visit([&o, &value](auto field) { o.*field = std::move(*value); }, setter->second);
            continue;
        }
        if (arg.size() > 1 && arg[0] == '-') throw CliError("unknown option " + arg + " (see schedctl --help)");
        o.args.push_back(arg);
    }
    if (o.output != "table" && o.output != "json") throw CliError("-o: expected table or json, got " + o.output);
    return o;
}

std::string EnvOr(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

struct Target {
    http::Url server;
    std::string token;
    Micros timeout{};
    std::vector<std::string> warnings;
};

Target ResolveTarget(const Options& o) {
    std::string config_path = o.config_path;
    bool explicit_config = !config_path.empty();
    if (!explicit_config) {
        const std::string xdg = EnvOr("XDG_CONFIG_HOME");
        const std::string home = EnvOr("HOME");
        if (!xdg.empty())
            config_path = xdg + "/schedctl/config.yaml";
        else if (!home.empty())
            config_path = home + "/.config/schedctl/config.yaml";
    }
    std::string config_server, config_token;
    std::vector<std::string> warnings;
    if (!config_path.empty() && (explicit_config || std::filesystem::exists(config_path))) {
        auto text = ReadBoundedFile(config_path);
        if (!text.ok()) throw CliError(text.status().message());
        auto loaded = LoadBoundedYaml(*text, config_path);
        if (!loaded.ok()) throw CliError(loaded.status().message());
        const YAML::Node& root = *loaded;
        if (root.IsMap()) {
            // As ssh does for a private key: a token that others can read is worth a warning.
            std::error_code ec;
            const auto perms = std::filesystem::status(config_path, ec).permissions();
            if (!ec && root["token"] &&
                (perms & (std::filesystem::perms::group_all | std::filesystem::perms::others_all)) !=
                    std::filesystem::perms::none) {
                warnings.push_back(config_path + ": holds a token and others may read it (chmod 600 it)");
            }
            for (const auto& kv : root) {
                const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
                if (key != "server" && key != "token")
                    throw CliError(config_path + ": " + key + ": unknown key (expected server, token)");
                if (!kv.second.IsScalar()) throw CliError(config_path + ": " + key + ": expected a string");
                (key == "server" ? config_server : config_token) = kv.second.Scalar();
            }
        } else if (!root.IsNull()) {
            throw CliError(config_path + ": expected a mapping with server: and token:");
        }
    }
    std::string server = o.server;
    std::string source = "--server";
    if (server.empty()) {
        server = EnvOr("SCHED_SERVER");
        source = "SCHED_SERVER";
    }
    if (server.empty()) {
        server = config_server;
        source = config_path + ": server";
    }
    if (server.empty()) server = "http://127.0.0.1:8080";
    auto url = http::Url::Parse(server);
    if (!url.ok()) throw CliError(source + ": " + url.status().message());
    auto timeout = ParseDuration(o.timeout);
    if (!timeout.ok() || timeout->count() <= 0) throw CliError("--timeout: expected a positive duration such as 10s");
    std::string token = EnvOr("SCHED_TOKEN");
    if (token.empty()) token = config_token;
    return {*url, token, *timeout, std::move(warnings)};
}

std::string ParseId(const Options& o, std::size_t index, const std::string& what) {
    if (o.args.size() <= index) throw CliError(what + ": missing ID");
    const std::string& id = o.args[index];
    if (id.empty() || id.size() > 18 || id.find_first_not_of("0123456789") != std::string::npos) {
        throw CliError(what + ": ID: expected a positive integer, got \"" + SanitizeCell(id) + "\"");
    }
    return id;
}

// The fields whose values differ between an entry's before and after ("enabled, paused"), or
// the pause note; at most a line's worth.
std::string AuditChanges(const api::AuditEntryView& entry) {
    const auto& before = entry.before;
    const auto& after = entry.after;
    if (!before.is_object() || !after.is_object()) return "";
    std::string out;
    for (auto it = after.begin(); it != after.end(); ++it) {
        if (it.key() == "version" || it.key() == "updated_at") continue;
        if (before.contains(it.key()) && before[it.key()] == it.value()) continue;
        out += (out.empty() ? "" : ", ") + it.key();
    }
    if (after.contains("paused") && after["paused"].is_object()) {
        const std::string note = after["paused"].value("note", std::string());
        if (!note.empty()) out += " (note: " + note + ")";
    }
    if (out.size() > 120) out = out.substr(0, 117) + "...";
    return SanitizeCell(out);
}

class Cli {
  public:
    Cli(Options options, std::ostream& out, std::ostream& err)
        : o_(std::move(options)),
          out_(out),
          err_(err),
          target_(ResolveTarget(o_)),
          api_(target_.server, target_.token, target_.timeout) {
        for (const auto& w : target_.warnings) err_ << "schedctl: warning: " << w << "\n";
    }

    int Run();

  private:
    ApiReply Call(http::Method method, const std::string& path, const std::optional<nlohmann::json>& body = {}) {
        auto r = api_.Call(method, path, body);
        if (!r.ok()) throw CliError(r.status().message());
        return *r;
    }
    ApiReply CallOk(http::Method method, const std::string& path, const std::optional<nlohmann::json>& body = {}) {
        ApiReply reply = Call(method, path, body);
        if (!reply.ok())
            throw CliError(std::string(http::MethodName(method)) + " " + path + ": " + DescribeError(reply));
        return reply;
    }
    bool Json() const { return o_.output == "json"; }
    // The answer read as its view: a 2xx answer that is not one is an error naming the field.
    template <api::ViewType V>
    static V Read(const ApiReply& reply, http::Method method, const std::string& path) {
        auto view = api::FromJson<V>(reply.json);
        if (!view.ok()) {
            throw CliError(std::string(http::MethodName(method)) + " " + path +
                           ": unexpected answer: " + view.status().message());
        }
        return std::move(*view);
    }
    template <api::ViewType V>
    V CallFor(http::Method method, const std::string& path, const std::optional<nlohmann::json>& body = {}) {
        return Read<V>(CallOk(method, path, body), method, path);
    }
    // -o json: the server's answer as it came; otherwise `text` writes what a person reads from
    // the answer's view V.
    template <api::ViewType V, typename Text>
    int AnswerWith(http::Method method, const std::string& path, const std::optional<nlohmann::json>& body,
                   Text&& text) {
        const ApiReply reply = CallOk(method, path, body);
        if (Json()) {
            PrintJson(reply);
        } else {
            text(Read<V>(reply, method, path));
        }
        return 0;
    }
    // -o json: the server's answer as it came; otherwise `text` writes what a person reads.
    int Answer(const ApiReply& reply, const std::function<void(const ApiReply&)>& text) {
        if (Json()) {
            PrintJson(reply);
        } else {
            text(reply);
        }
        return 0;
    }

    void PrintJson(const ApiReply& reply) {
        if (reply.body.empty()) return;  // 204 No Content
        if (reply.json.is_null()) {
            out_ << SanitizeCell(reply.body) << "\n";
        } else {
            out_ << reply.json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
        }
    }
    void PrintObject(const nlohmann::json& object) {
        std::vector<std::vector<std::string>> rows;
        if (object.is_object()) {
            for (const auto& [key, value] : object.items()) {
                const bool is_time = key.size() > 5 && (key.ends_with("_time") || key.ends_with("_at"));
                rows.push_back({key, is_time ? TimeCell(object, key) : CellText(value)});
            }
        }
        out_ << RenderTable({"FIELD", "VALUE"}, rows);
    }
    std::string Sub(std::size_t i) const { return o_.args.size() > i ? o_.args[i] : std::string(); }
    void Usage(const std::string& what) { throw CliError(what + " (see schedctl --help)"); }

    // Every page of a list route (GET base + "&cursor=..."), at most `max_pages`: the items as
    // they came (for -o json and the plan) and as views.
    template <api::ViewType V>
    struct Listed {
        nlohmann::json items = nlohmann::json::array();
        std::vector<V> views;
    };
    template <api::ViewType V>
    Listed<V> ListAll(const std::string& base, int max_pages);
    Listed<api::JobView> ListAllJobs(const std::string& query) {
        return ListAll<api::JobView>("/api/v1/jobs?limit=200" + query, 500);
    }
    int Jobs();
    int JobsBackfill(const std::string& id);
    int Fires();
    int Executors();
    int Cluster();
    int Tokens();
    int Audit();
    std::string JobIdOf(const std::string& job);
    int ApplyOrDiff(bool apply);
    // calendars (issue 17)
    Listed<api::CalendarView> ListAllCalendars() {
        return ListAll<api::CalendarView>("/api/v1/calendars?limit=200", 50);
    }
    std::string CalendarIdOf(const std::string& id_or_name);
    int Calendars();
    int CalendarsApply();
    int Workflows();  // issue 18
    std::string LimitQuery() const;
    int ApplyCalendarPlan(const Plan& plan);
    void PrintJobs(const std::vector<api::JobView>& jobs);
    void PrintFires(const std::vector<api::FireView>& fires);
    nlohmann::json ReadJobDocument();

    Options o_;
    std::ostream& out_;
    std::ostream& err_;
    Target target_;
    ApiClient api_;
};

int Cli::Run() {
    const std::string cmd = Sub(0);
    if (cmd == "jobs") return Jobs();
    if (cmd == "fires") return Fires();
    if (cmd == "executors") return Executors();
    if (cmd == "cluster") return Cluster();
    if (cmd == "tokens") return Tokens();
    if (cmd == "audit") return Audit();
    if (cmd == "calendars") return Calendars();
    if (cmd == "workflows") return Workflows();
    if (cmd == "apply") return ApplyOrDiff(true);
    if (cmd == "diff") return ApplyOrDiff(false);
    Usage(cmd.empty() ? "missing command" : "unknown command \"" + SanitizeCell(cmd) + "\"");
    return 1;
}

// Bounded so that a server answering cursors forever stops.
template <api::ViewType V>
Cli::Listed<V> Cli::ListAll(const std::string& base, int max_pages) {
    Listed<V> out;
    std::string cursor;
    for (int page = 0; page < max_pages; ++page) {
        std::string path = base;
        if (!cursor.empty()) path += "&cursor=" + QueryEscape(cursor);
        const ApiReply reply = CallOk(http::Method::kGet, path);
        auto read = Read<api::Page<V>>(reply, http::Method::kGet, path);
        for (const auto& item : reply.json["items"]) out.items.push_back(item);
        for (auto& view : read.items) out.views.push_back(std::move(view));
        if (!read.next_cursor || read.next_cursor->empty()) return out;
        cursor = *read.next_cursor;
    }
    throw CliError("GET " + base.substr(0, base.find('?')) + ": more than " + std::to_string(max_pages) + " pages");
}

void Cli::PrintJobs(const std::vector<api::JobView>& jobs) {
    std::vector<std::vector<std::string>> rows;
    rows.reserve(jobs.size());
    for (const auto& j : jobs) {
        rows.push_back({Cell(j.id), j.name, j.app, j.handler, j.schedule_type, j.schedule_expr, Cell(j.enabled),
                        TimeCell(j.next_fire_time), Cell(j.version)});
    }
    out_ << RenderTable({"ID", "NAME", "APP", "HANDLER", "TYPE", "SCHEDULE", "ENABLED", "NEXT FIRE", "VERSION"}, rows);
}

void Cli::PrintFires(const std::vector<api::FireView>& fires) {
    std::vector<std::vector<std::string>> rows;
    rows.reserve(fires.size());
    for (const auto& f : fires) {
        rows.push_back({Cell(f.id), Cell(f.job_id), f.kind, f.status, TimeCell(f.scheduled_time), Cell(f.attempt),
                        Cell(f.executor_address), Cell(f.duration_ms), Cell(f.reason)});
    }
    out_ << RenderTable({"ID", "JOB", "KIND", "STATUS", "SCHEDULED", "ATTEMPT", "EXECUTOR", "DURATION MS", "REASON"},
                        rows);
}

nlohmann::json Cli::ReadJobDocument() {
    if (o_.file.empty()) Usage("-f FILE is required");
    auto text = ReadBoundedFile(o_.file);
    if (!text.ok()) throw CliError(text.status().message());
    auto doc = ParseJobDocument(*text, o_.file);
    if (!doc.ok()) throw CliError(doc.status().message());
    return *doc;
}

int Cli::Jobs() {
    const std::string sub = Sub(1);
    if (sub == "list") {
        const auto jobs = ListAllJobs("");
        if (Json())
            out_ << nlohmann::json{{"items", jobs.items}}.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                 << "\n";
        else
            PrintJobs(jobs.views);
        return 0;
    }
    if (sub == "create") {
        return AnswerWith<api::JobView>(http::Method::kPost, "/api/v1/jobs", ReadJobDocument(),
                                        [&](const api::JobView& job) {
                                            out_ << "job " << job.id << " created (" << SanitizeCell(job.name) << ")\n";
                                        });
    }
    const std::string id = ParseId(o_, 2, "jobs " + sub);
    const std::string path = "/api/v1/jobs/" + id;
    if (sub == "get") {
        return Answer(CallOk(http::Method::kGet, path), [&](const ApiReply& reply) { PrintObject(reply.json); });
    }
    if (sub == "update") {
        nlohmann::json body = ReadJobDocument();
        if (!body.contains("version")) {
            // No version in the file: the one read now (a concurrent change between this read and
            // the PUT is still a 409).
            body["version"] = CallFor<api::JobView>(http::Method::kGet, path).version;
        }
        return AnswerWith<api::JobView>(http::Method::kPut, path, body, [&](const api::JobView& job) {
            out_ << "job " << id << " updated (version " << job.version << ")\n";
        });
    }
    if (sub == "pause" || sub == "resume" || sub == "trigger") {
        if (o_.note && sub != "pause") Usage("--note: only jobs pause takes a note");
        std::optional<nlohmann::json> body;
        if (o_.note) body = nlohmann::json{{"note", *o_.note}};
        if (sub == "trigger") {
            return AnswerWith<api::ItemList<api::FireView>>(http::Method::kPost, path + "/trigger", body,
                                                            [&](const api::ItemList<api::FireView>& created) {
                                                                out_ << "job " << id << " triggered\n";
                                                                PrintFires(created.items);
                                                            });
        }
        return AnswerWith<api::JobView>(http::Method::kPost, path + "/" + sub, body, [&](const api::JobView&) {
            out_ << "job " << id << (sub == "pause" ? " paused\n" : " resumed\n");
        });
    }
    if (sub == "backfill") return JobsBackfill(id);
    if (sub == "delete") {
        return Answer(CallOk(http::Method::kDelete, path),
                      [&](const ApiReply&) { out_ << "job " << id << " deleted\n"; });
    }
    Usage("jobs: expected list, get, create, update, pause, resume, trigger, backfill or delete");
    return 1;
}

// POST /api/v1/jobs/{id}/backfill; the server validates the range (its 400 names the field).
int Cli::JobsBackfill(const std::string& id) {
    if (!o_.from || !o_.to) Usage("jobs backfill: --from and --to are required");
    const auto instant = [](const std::string& text) -> nlohmann::json {
        const bool digits =
            !text.empty() && text.size() <= 18 && text.find_first_not_of("0123456789") == std::string::npos;
        if (digits) return std::stoll(text);
        return text;
    };
    nlohmann::json body = {{"from", instant(*o_.from)}, {"to", instant(*o_.to)}, {"overlap", "serial"}};
    if (o_.parallel) {
        const auto n = instant(*o_.parallel);
        if (!n.is_number_integer()) throw CliError("--parallel: expected a positive integer, got " + *o_.parallel);
        body["overlap"] = "parallel";
        body["max_parallel"] = n;
    }
    if (o_.dry_run) body["dry_run"] = true;
    const std::string path = "/api/v1/jobs/" + id + "/backfill";
    if (o_.dry_run) {
        return AnswerWith<api::BackfillDryRunView>(
            http::Method::kPost, path, body, [&](const api::BackfillDryRunView& dry) {
                std::vector<std::vector<std::string>> rows;
                for (const auto& item : dry.items) {
                    rows.push_back({TimeCell(item.scheduled_time),
                                    item.existing ? "skip (has a " + *item.existing + " fire)" : "run"});
                }
                out_ << RenderTable({"SCHEDULED", "ACTION"}, rows);
                out_ << dry.would_run << " of " << dry.planned
                     << " scheduled time(s) would run (dry run, nothing stored)\n";
            });
    }
    return AnswerWith<api::BackfillView>(http::Method::kPost, path, body, [&](const api::BackfillView& backfill) {
        out_ << "backfill " << backfill.id << " of job " << id << " created: " << backfill.counts.planned
             << " scheduled time(s), " << backfill.overlap << "\n";
    });
}

int Cli::Fires() {
    const std::string sub = Sub(1);
    if (sub == "list") {
        std::string query;
        if (o_.job) query += "&job_id=" + JobIdOf(*o_.job);
        if (o_.status) query += "&status=" + QueryEscape(*o_.status);
        if (o_.limit) {
            const std::string& n = *o_.limit;
            if (n.empty() || n.size() > 4 || n.find_first_not_of("0123456789") != std::string::npos) {
                throw CliError("--limit: expected a positive integer");
            }
            query += "&limit=" + n;
        }
        const std::string path = "/api/v1/fires" + (query.empty() ? std::string() : "?" + query.substr(1));
        return AnswerWith<api::Page<api::FireView>>(
            http::Method::kGet, path, std::nullopt,
            [&](const api::Page<api::FireView>& page) { PrintFires(page.items); });
    }
    const std::string id = ParseId(o_, 2, "fires " + sub);
    const std::string path = "/api/v1/fires/" + id;
    if (sub == "get") {
        return Answer(CallOk(http::Method::kGet, path), [&](const ApiReply& reply) { PrintObject(reply.json); });
    }
    if (sub == "log") {
        return AnswerWith<api::FireLogView>(http::Method::kGet, path + "/log", std::nullopt,
                                            [&](const api::FireLogView& log) {
                                                for (const auto& line : log.lines) out_ << SanitizeCell(line) << "\n";
                                            });
    }
    if (sub == "kill") {
        return Answer(CallOk(http::Method::kPost, path + "/kill"),
                      [&](const ApiReply&) { out_ << "fire " << id << " kill requested\n"; });
    }
    Usage("fires: expected list, get, log or kill");
    return 1;
}

int Cli::Executors() {
    if (Sub(1) != "list") Usage("executors: expected list");
    return AnswerWith<api::ExecutorListView>(
        http::Method::kGet, "/api/v1/executors", std::nullopt, [&](const api::ExecutorListView& executors) {
            std::vector<std::vector<std::string>> rows;
            for (const auto& e : executors.items) {
                rows.push_back({e.app, e.address, Cell(e.alive), Cell(e.running), Cell(e.capacity),
                                Cell(e.heartbeat_age_ms), Cell(e.handlers)});
            }
            out_ << RenderTable({"APP", "ADDRESS", "ALIVE", "RUNNING", "CAPACITY", "HEARTBEAT AGE MS", "HANDLERS"},
                                rows);
        });
}

int Cli::Cluster() {
    if (Sub(1) != "status") Usage("cluster: expected status");
    return AnswerWith<api::ClusterView>(
        http::Method::kGet, "/api/v1/cluster", std::nullopt, [&](const api::ClusterView& c) {
            out_ << "leader: " << SanitizeCell(Cell(c.leader)) << "  epoch: " << c.epoch
                 << "  lease remaining ms: " << Cell(c.lease_remaining_ms) << "\n";
            std::vector<std::vector<std::string>> rows;
            for (const auto& n : c.nodes) {
                rows.push_back({n.node_id, n.address, n.state, Cell(n.alive), TimeCell(n.started_at_ms),
                                TimeCell(n.last_heartbeat_ms)});
            }
            out_ << RenderTable({"NODE", "ADDRESS", "STATE", "ALIVE", "STARTED", "LAST HEARTBEAT"}, rows);
        });
}

int Cli::Tokens() {
    const std::string sub = Sub(1);
    if (sub == "list") {
        return AnswerWith<api::ItemList<api::TokenView>>(
            http::Method::kGet, "/api/v1/tokens", std::nullopt, [&](const api::ItemList<api::TokenView>& tokens) {
                std::vector<std::vector<std::string>> rows;
                for (const auto& t : tokens.items) {
                    rows.push_back({Cell(t.id), t.name, t.role, Cell(t.apps), TimeCell(t.created_at),
                                    TimeCell(t.last_used_at), TimeCell(t.revoked_at)});
                }
                out_ << RenderTable({"ID", "NAME", "ROLE", "APPS", "CREATED", "LAST USED", "REVOKED"}, rows);
            });
    }
    if (sub == "create") {
        if (!o_.name || !o_.role) Usage("tokens create: --name and --role are required");
        nlohmann::json body = {{"name", *o_.name}, {"role", *o_.role}};
        if (o_.apps) {
            nlohmann::json apps = nlohmann::json::array();
            std::string rest = *o_.apps;
            for (std::size_t start = 0; start <= rest.size();) {
                const std::size_t comma = rest.find(',', start);
                const std::string app =
                    rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
                if (app.empty()) throw CliError("--apps: expected app names separated by commas");
                apps.push_back(app);
                if (comma == std::string::npos) break;
                start = comma + 1;
            }
            body["apps"] = apps;
        }
        return AnswerWith<api::NewTokenView>(
            http::Method::kPost, "/api/v1/tokens", body, [&](const api::NewTokenView& token) {
                out_ << "token " << token.id << " created (" << SanitizeCell(token.name) << ", " << token.role << ")\n"
                     << "secret (shown only now): " << SanitizeCell(token.token) << "\n";
            });
    }
    if (sub == "revoke") {
        const std::string id = ParseId(o_, 2, "tokens revoke");
        return Answer(CallOk(http::Method::kDelete, "/api/v1/tokens/" + id),
                      [&](const ApiReply&) { out_ << "token " << id << " revoked\n"; });
    }
    Usage("tokens: expected list, create or revoke");
    return 1;
}

// --job: an id as given, or the id of the job with exactly that name.
std::string Cli::JobIdOf(const std::string& job) {
    if (!job.empty() && job.size() <= 18 && job.find_first_not_of("0123456789") == std::string::npos) return job;
    std::string id;
    for (const auto& j : ListAllJobs("&q=" + QueryEscape(job)).views) {
        if (j.name == job) id = std::to_string(j.id);
    }
    if (id.empty()) throw CliError("--job: no job named \"" + SanitizeCell(job) + "\"");
    return id;
}

int Cli::Audit() {
    if (!Sub(1).empty()) Usage("audit: takes no arguments, only options");
    std::string query;
    if (o_.job) query += "&target_kind=job&target_id=" + JobIdOf(*o_.job);
    if (o_.actor) query += "&actor=" + QueryEscape(*o_.actor);
    if (o_.action) query += "&action=" + QueryEscape(*o_.action);
    if (o_.since) {
        const std::string& since = *o_.since;
        if (!since.empty() && since.size() <= 18 && since.find_first_not_of("0123456789") == std::string::npos) {
            query += "&since=" + since;  // epoch ms
        } else {
            auto ago = ParseDuration(since);
            if (!ago.ok() || ago->count() <= 0) {
                throw CliError("--since: expected a duration such as 24h or epoch milliseconds, got \"" +
                               SanitizeCell(since) + "\"");
            }
            // The local clock: a window of "the last day" needs no better than seconds.
            const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::system_clock::now().time_since_epoch());
            const auto from = now - std::chrono::duration_cast<std::chrono::milliseconds>(*ago);
            query += "&since=" + std::to_string(std::max<std::int64_t>(0, from.count()));
        }
    }
    if (o_.limit) {
        const std::string& n = *o_.limit;
        if (n.empty() || n.size() > 4 || n.find_first_not_of("0123456789") != std::string::npos) {
            throw CliError("--limit: expected a positive integer");
        }
        query += "&limit=" + n;
    }
    const std::string path = "/api/v1/audit" + (query.empty() ? std::string() : "?" + query.substr(1));
    return AnswerWith<api::Page<api::AuditEntryView>>(
        http::Method::kGet, path, std::nullopt, [&](const api::Page<api::AuditEntryView>& page) {
            std::vector<std::vector<std::string>> rows;
            for (const auto& e : page.items) {
                rows.push_back({Cell(e.id), TimeCell(e.at), e.actor.name, e.actor.role, e.action,
                                e.target.kind + " " + e.target.id, e.target.name, AuditChanges(e)});
            }
            out_ << RenderTable({"ID", "AT", "ACTOR", "ROLE", "ACTION", "TARGET", "NAME", "CHANGED"}, rows);
        });
}

int Cli::ApplyOrDiff(bool apply) {
    if (o_.file.empty()) Usage(std::string(apply ? "apply" : "diff") + ": -f FILE is required");
    auto text = ReadBoundedFile(o_.file);
    if (!text.ok()) throw CliError(text.status().message());
    auto desired = ParseJobFile(*text, o_.file);
    if (!desired.ok()) throw CliError(desired.status().message());
    auto calendars = ParseCalendarSection(*text, o_.file);
    if (!calendars.ok()) throw CliError(calendars.status().message());
    // Without a calendars: key the cluster's calendars are not the file's business, even with --prune.
    const Plan calendar_plan =
        *calendars ? PlanCalendarChanges(**calendars, ListAllCalendars().items, o_.prune) : Plan{};
    const Plan plan = PlanChanges(*desired, ListAllJobs("").items, o_.prune);
    if (*calendars) out_ << FormatPlan(calendar_plan, "calendar ", "Calendars");
    out_ << FormatPlan(plan);
    const bool drift = plan.HasDrift() || calendar_plan.HasDrift();
    if (!apply) return drift ? 2 : 0;
    if (o_.dry_run || !drift) return 0;

    const ApiCall call = [this](http::Method method, const std::string& path,
                                const std::optional<nlohmann::json>& body) {
        return api_.Call(method, path, body);
    };
    // Calendars are created and updated before the jobs (a job may name a new one) and deleted
    // after them (the API refuses to delete a calendar a job still names).
    const auto [calendar_upserts, calendar_deletes] = SplitDeletes(calendar_plan);
    int failures = ApplyPlan(calendar_upserts, call, out_, err_, "calendar");
    failures += ApplyPlan(plan, call, out_, err_);
    failures += ApplyPlan(calendar_deletes, call, out_, err_, "calendar");
    return failures == 0 ? 0 : 1;
}

// ---- calendars (issue 17) ----

// An id as given, or the id of the calendar with exactly that name.
std::string Cli::CalendarIdOf(const std::string& id_or_name) {
    if (id_or_name.empty()) Usage("calendars: missing ID or NAME");
    if (id_or_name.size() <= 18 && id_or_name.find_first_not_of("0123456789") == std::string::npos) return id_or_name;
    for (const auto& c : ListAllCalendars().views) {
        if (c.name == id_or_name) return std::to_string(c.id);
    }
    throw CliError("calendars: no calendar named \"" + SanitizeCell(id_or_name) + "\"");
}

int Cli::Calendars() {
    const std::string sub = Sub(1);
    if (sub == "list") {
        const auto calendars = ListAllCalendars();
        if (Json()) {
            out_ << nlohmann::json{{"items", calendars.items}}.dump(2, ' ', false,
                                                                    nlohmann::json::error_handler_t::replace)
                 << "\n";
            return 0;
        }
        // Which jobs name each calendar: the API's calendar objects do not say, the jobs do.
        std::map<std::string, std::vector<std::string>> used_by;
        for (const auto& j : ListAllJobs("").views) {
            if (j.calendar) used_by[*j.calendar].push_back(j.name);
        }
        std::vector<std::vector<std::string>> rows;
        for (const auto& c : calendars.views) {
            const auto& jobs = used_by[c.name];
            std::string jobs_cell;
            for (std::size_t i = 0; i < jobs.size() && i < 3; ++i) jobs_cell += (i ? ", " : "") + jobs[i];
            if (jobs.size() > 3) jobs_cell += " (+" + std::to_string(jobs.size() - 3) + ")";
            rows.push_back({Cell(c.id), c.name, c.time_zone, SanitizeCell(CalendarRulesSummary(api::ToJson(c))),
                            Cell(c.version), jobs_cell.empty() ? "-" : SanitizeCell(jobs_cell)});
        }
        out_ << RenderTable({"ID", "NAME", "ZONE", "EXCLUDES", "VERSION", "USED BY"}, rows);
        return 0;
    }
    if (sub == "apply") return CalendarsApply();
    if (sub != "get" && sub != "delete") Usage("calendars: expected list, get, apply or delete");
    const std::string id = CalendarIdOf(Sub(2));
    const std::string path = "/api/v1/calendars/" + id;
    if (sub == "get") {
        return Answer(CallOk(http::Method::kGet, path), [&](const ApiReply& reply) { PrintObject(reply.json); });
    }
    // A calendar still named by jobs: 409, the message names them.
    return Answer(CallOk(http::Method::kDelete, path),
                  [&](const ApiReply&) { out_ << "calendar " << id << " deleted\n"; });
}

// `calendars apply -f FILE`: the file's calendars: section alone (its jobs are not looked at).
int Cli::CalendarsApply() {
    if (o_.file.empty()) Usage("calendars apply: -f FILE is required");
    auto text = ReadBoundedFile(o_.file);
    if (!text.ok()) throw CliError(text.status().message());
    auto calendars = ParseCalendarSection(*text, o_.file);
    if (!calendars.ok()) throw CliError(calendars.status().message());
    if (!*calendars) throw CliError(o_.file + ": no calendars: section");
    const Plan plan = PlanCalendarChanges(**calendars, ListAllCalendars().items, o_.prune);
    out_ << FormatPlan(plan, "calendar ", "Calendars");
    if (o_.dry_run || !plan.HasDrift()) return 0;
    return ApplyCalendarPlan(plan);
}

int Cli::ApplyCalendarPlan(const Plan& plan) {
    const ApiCall call = [this](http::Method method, const std::string& path,
                                const std::optional<nlohmann::json>& body) {
        return api_.Call(method, path, body);
    };
    return ApplyPlan(plan, call, out_, err_, "calendar") == 0 ? 0 : 1;
}

// ---- workflows (issue 18) ----

// "&limit=N" from --limit (checked as fires list does), or "".
std::string Cli::LimitQuery() const {
    if (!o_.limit) return "";
    const std::string& n = *o_.limit;
    if (n.empty() || n.size() > 4 || n.find_first_not_of("0123456789") != std::string::npos) {
        throw CliError("--limit: expected a positive integer");
    }
    return "&limit=" + n;
}

int Cli::Workflows() {
    const std::string sub = Sub(1);
    if (o_.params && sub != "trigger") Usage("--params: only workflows trigger takes params");
    if (o_.from_step && sub != "rerun") Usage("--from-step: only workflows rerun takes a step");
    if (sub == "list") {
        return AnswerWith<api::Page<api::WorkflowView>>(
            http::Method::kGet, "/api/v1/workflows?limit=200", std::nullopt,
            [&](const api::Page<api::WorkflowView>& page) {
                std::vector<std::vector<std::string>> rows;
                for (const auto& w : page.items) {
                    rows.push_back({Cell(w.id), SanitizeCell(w.name),
                                    w.schedule_type + " " + SanitizeCell(w.schedule_expr),
                                    std::to_string(w.steps.size()), Cell(w.paused), TimeCell(w.next_fire_time)});
                }
                out_ << RenderTable({"ID", "NAME", "SCHEDULE", "STEPS", "PAUSED", "NEXT"}, rows);
            });
    }
    const std::string what = "workflows " + sub;
    if (sub == "run" || sub == "rerun") {
        const std::string run_id = ParseId(o_, 2, what);
        const std::string path = "/api/v1/workflow-runs/" + run_id;
        if (sub == "rerun") {
            if (!o_.from_step || o_.from_step->empty()) Usage("workflows rerun: --from-step NAME is required");
            const nlohmann::json rerun = {{"from_step", *o_.from_step}};
            return AnswerWith<api::WorkflowRunView>(
                http::Method::kPost, path + "/rerun", rerun, [&](const api::WorkflowRunView& run) {
                    out_ << "run " << run_id << " re-run from " << SanitizeCell(*o_.from_step) << " (generation "
                         << run.generation << ")\n";
                });
        }
        return AnswerWith<api::WorkflowRunDetailView>(
            http::Method::kGet, path, std::nullopt, [&](const api::WorkflowRunDetailView& run) {
                out_ << "run " << run_id << ": " << run.status;
                if (run.reason) out_ << " (" << SanitizeCell(*run.reason) << ")";
                out_ << ", generation " << run.generation << "\n";
                std::vector<std::vector<std::string>> rows;
                for (const auto& step : run.steps) {
                    rows.push_back({SanitizeCell(step.name), Cell(step.job_id), step.state, Cell(step.fire_id),
                                    Cell(step.fire_status), Cell(step.attempts), Cell(step.lag_ms),
                                    SanitizeCell(Cell(step.message))});
                }
                out_ << RenderTable({"STEP", "JOB", "STATE", "FIRE", "FIRE STATUS", "ATTEMPTS", "LAG MS", "MESSAGE"},
                                    rows);
            });
    }
    if (sub != "get" && sub != "pause" && sub != "resume" && sub != "trigger" && sub != "runs") {
        Usage("workflows: expected list, get, pause, resume, trigger, runs, run or rerun");
    }
    const std::string id = ParseId(o_, 2, what);
    const std::string path = "/api/v1/workflows/" + id;
    if (sub == "get") {
        return Answer(CallOk(http::Method::kGet, path), [&](const ApiReply& reply) { PrintObject(reply.json); });
    }
    if (sub == "runs") {
        const std::string query = LimitQuery();
        const std::string runs_path = path + "/runs" + (query.empty() ? std::string() : "?" + query.substr(1));
        return AnswerWith<api::Page<api::WorkflowRunView>>(
            http::Method::kGet, runs_path, std::nullopt, [&](const api::Page<api::WorkflowRunView>& page) {
                std::vector<std::vector<std::string>> rows;
                for (const auto& run : page.items) {
                    rows.push_back({Cell(run.id), TimeCell(run.scheduled_time), run.kind, run.status,
                                    Cell(run.generation), SanitizeCell(Cell(run.reason))});
                }
                out_ << RenderTable({"RUN", "SCHEDULED", "KIND", "STATUS", "GENERATION", "REASON"}, rows);
            });
    }
    if (sub == "trigger") {
        std::optional<nlohmann::json> body;
        if (o_.params) {
            // JSON text is sent as JSON (the steps receive its compact text); anything else as a string.
            nlohmann::json params = nlohmann::json::parse(*o_.params, nullptr, false);
            if (params.is_discarded()) params = *o_.params;
            body = nlohmann::json{{"params", std::move(params)}};
        }
        return AnswerWith<api::WorkflowRunView>(http::Method::kPost, path + "/trigger", body,
                                                [&](const api::WorkflowRunView& run) {
                                                    out_ << "workflow " << id << " triggered: run " << run.id << "\n";
                                                });
    }
    return Answer(CallOk(http::Method::kPost, path + "/" + sub),
                  [&](const ApiReply&) { out_ << "workflow " << id << (sub == "pause" ? " paused\n" : " resumed\n"); });
}

}  // namespace

int RunCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
    try {
        Options options = ParseArgs(argc, argv);
        if (options.help || options.args.empty()) {
            out << kHelp;
            return options.help ? 0 : 1;
        }
        Cli cli(std::move(options), out, err);
        return cli.Run();
    } catch (const CliError& e) {
        err << "schedctl: " << e.what() << "\n";
        return 1;
    }
}

}  // namespace sched::ctl
