#include "cli.hpp"

#include <yaml-cpp/yaml.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "bounded_yaml.hpp"
#include "commands.hpp"
#include "job_file.hpp"
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
  workflows create -f FILE          workflows update ID -f FILE | delete ID
                                    (FILE: YAML or JSON workflow fields; steps name their jobs)
  workflows runs ID [--limit N]     a workflow's runs, newest first
  workflows run RUN_ID              a run with each step's state, fire and lag
  workflows rerun RUN_ID --from-step NAME
                                    a failed or timed-out run again from that step
  alerts list | get ID | delete ID | test ID
                                    alert rules (admin); test queues one delivery to the webhook
  alerts create -f FILE             alerts update ID -f FILE   (FILE: YAML or JSON rule fields)
  alerts deliveries [--rule ID] [--status S] [--limit N]
  fires list [--job NAME|ID] [--status S] [--limit N]
  fires get ID | log ID | kill ID
  executors list                    cluster status
  tokens list | create --name N --role R [--apps a,b] | revoke ID
  audit [--job NAME|ID] [--actor NAME] [--action A] [--since DURATION|MS] [--limit N]
                                    the audit log, newest first (--since 24h: the last day)
  diff -f jobs.yaml [--prune]       what apply would change; exit 0 no drift, 2 drift, 1 error
  apply -f jobs.yaml [--dry-run] [--prune]
                                    make the cluster's jobs (and the calendars: and workflows:
                                    sections' objects) match the file (keyed by name)

Global options:
  --server URL        the API's base URL (else $SCHED_SERVER, else the config file's server:,
                      else http://127.0.0.1:8080)
  --config FILE       config file (default ~/.config/schedctl/config.yaml) with server: and token:
  -o, --output FMT    table (default) or json (the API's JSON)
  --timeout DURATION  per request (default 10s)
  -h, --help          this help; after a command, that command's arguments and options

The API token comes from $SCHED_TOKEN or the config file's token:, never from a command-line
flag (arguments are visible to every user in ps and /proc).
)";

std::string EnvOr(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

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

// "list, get, apply or delete": the commands of a family, for its usage error.
std::string CommandNames(const CLI::App& family) {
    const auto commands = family.get_subcommands([](const CLI::App*) { return true; });
    std::string out;
    for (std::size_t i = 0; i < commands.size(); ++i) {
        if (i > 0) out += i + 1 == commands.size() ? " or " : ", ";
        out += commands[i]->get_name();
    }
    return out;
}

// What parsing left over that schedctl does not take, as the usage error it is; nullopt when
// the line is complete. `extras` are CLI11's remaining arguments.
std::optional<std::string> Leftover(const CLI::App& app, std::vector<std::string> extras) {
    for (const auto& arg : extras) {
        if (arg.size() > 1 && arg[0] == '-') return "unknown option " + SanitizeCell(arg);
    }
    const auto chosen = app.get_subcommands();
    if (chosen.empty()) {
        if (extras.empty()) return std::nullopt;
        return "unknown command \"" + SanitizeCell(extras.front()) + "\"";
    }
    // A second command name after the first ("audit jobs") is an argument of the first.
    for (std::size_t i = 1; i < chosen.size(); ++i) extras.insert(extras.begin(), chosen[i]->get_name());
    const CLI::App* command = chosen.front();
    std::string path = command->get_name();
    const bool family = !command->get_subcommands([](const CLI::App*) { return true; }).empty();
    if (family) {
        const auto sub = command->get_subcommands();
        if (sub.empty()) return path + ": expected " + CommandNames(*command);
        command = sub.front();
        path += " " + command->get_name();
    }
    if (extras.empty()) return std::nullopt;
    if (command->get_subcommands([](const CLI::App*) { return true; }).empty() &&
        command->get_options([](const CLI::Option* o) { return o->get_positional(); }).empty() && !family) {
        return path + ": takes no arguments, only options";
    }
    return path + ": unexpected argument \"" + SanitizeCell(extras.front()) + "\"";
}

// The help for what was asked: the overview, or the chosen command's arguments and options.
std::string HelpFor(const CLI::App& app) {
    if (app.get_subcommands().empty()) return std::string(kHelp);
    std::string path = "schedctl";
    const CLI::App* command = app.get_subcommands().front();
    while (!command->get_subcommands().empty()) {
        path += " " + command->get_name();
        command = command->get_subcommands().front();
    }
    return command->help(path);
}

}  // namespace

int RunCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
    try {
        // Refused before anything else: the value would already be in ps and /proc.
        for (int i = 1; i < argc; ++i) {
            const std::string_view arg = argv[i];
            if (arg == "--token" || arg.starts_with("--token=")) {
                throw CliError(
                    "--token is not accepted: command-line arguments show in ps; set SCHED_TOKEN or token: in the "
                    "config file");
            }
        }
        Options options;
        CommandLine line{options, nullptr};
        CLI::App app("schedctl: operate a sched cluster over its REST API (/api/v1)", "schedctl");
        app.set_help_flag();  // -h anywhere shows the help of what it follows (HelpFor)
        bool help = false;
        app.add_flag("-h,--help", help, "this help");
        // Global options anywhere on the line: a command hands what it does not know to its parent.
        app.fallthrough();
        // What no command takes is collected and answered as schedctl's own usage error (Leftover).
        app.allow_extras();
        app.add_option("--server", options.server, "the API's base URL");
        app.add_option("--config", options.config_path, "config file with server: and token:");
        app.add_option("-o,--output", options.output, "table (default) or json");
        app.add_option("--timeout", options.timeout, "per request (default 10s)");
        AddJobsCommands(app, line);
        AddCalendarsCommands(app, line);
        AddWorkflowsCommands(app, line);
        AddFiresCommands(app, line);
        AddClusterCommands(app, line);
        AddApplyCommands(app, line);
        AddAlertsCommands(app, line);
        try {
            app.parse(argc, argv);
        } catch (const CLI::ArgumentMismatch& e) {
            // "--server: 1 required TEXT missing"
            const std::string what = e.what();
            throw CliError(what.substr(0, what.find(':')) + " needs a value");
        } catch (const CLI::ParseError& e) {
            Usage(e.what());
        }
        auto leftover = Leftover(app, app.remaining());
        if (!leftover && !line.misplaced.empty()) leftover = line.misplaced;
        // An unknown option is an error even beside -h; a missing command is what -h explains.
        if (leftover && (!help || leftover->starts_with("unknown option"))) Usage(*leftover);
        if (help) {
            out << HelpFor(app);
            return 0;
        }
        if (options.output != "table" && options.output != "json") {
            throw CliError("-o: expected table or json, got " + options.output);
        }
        if (!line.chosen) {
            out << kHelp;
            return 1;
        }
        const Target target = ResolveTarget(options);
        for (const auto& w : target.warnings) err << "schedctl: warning: " << w << "\n";
        Session session(std::move(options), target, out, err);
        return line.chosen(session);
    } catch (const CliError& e) {
        err << "schedctl: " << e.what() << "\n";
        return 1;
    }
}

}  // namespace sched::ctl
