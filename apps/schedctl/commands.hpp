#pragma once

/// schedctl's commands (docs/schedctl.md "Commands"), one family per file, each added to the
/// CLI11 command tree by its Add...Commands. Each option belongs to the commands that take it,
/// so that `schedctl jobs backfill --help` lists its own; an option the command line puts after
/// another command of the family is an unknown option, or, for the few OnlyFor names, says which
/// command takes it ("--note: only jobs pause takes a note").

#include <functional>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "sched/api/cluster.hpp"
#include "sched/api/fires.hpp"
#include "session.hpp"

namespace sched::ctl {

/// A command the command line selected: runs against the session, returns the exit code.
using Command = std::function<int(Session&)>;

/// The command tree being built: CLI11 parses into `options`, and the command that parsing
/// selects stores itself in `chosen`.
struct CommandLine {
    Options& options;
    Command chosen;
    /// The usage error of an option given to a command of its family that does not take it.
    std::string misplaced;
};

/// Adds command `name` to `parent`; when parsing selects it, `command` is the one that runs.
CLI::App* AddCommand(CLI::App& parent, const std::string& name, const std::string& description, CommandLine& line,
                     Command command);
/// A family of commands (`jobs`): it runs nothing itself, one of its commands does.
CLI::App* AddFamily(CLI::App& parent, const std::string& name, const std::string& description);
/// The command takes arguments ("ID"), kept in Options::args.
void TakesArguments(CLI::App& command, const std::string& name, CommandLine& line, const std::string& description);
/// An option whose value is kept in `target`, set only when the option is given.
CLI::Option* AddValue(CLI::App& app, const std::string& names, std::optional<std::string>& target,
                      const std::string& description);
/// -f FILE.
void AddFileOption(CLI::App& app, CommandLine& line, const std::string& description);
/// `name` (an option with a value) given to any other command of `family` than the one that
/// takes it is the usage error `message` (the option is hidden from the family's help).
void OnlyFor(CLI::App& family, const std::string& name, const std::string& message, CommandLine& line);

/// Fires as a table (jobs trigger, fires list).
void PrintFires(Session& s, const std::vector<api::FireView>& fires);

/// `cluster status` as text: the leader line (shard 0), the shards table when the cluster has
/// more than one shard, then the nodes.
std::string ClusterStatusText(const api::ClusterView& cluster);

void AddJobsCommands(CLI::App& app, CommandLine& line);       // jobs ...
void AddFiresCommands(CLI::App& app, CommandLine& line);      // fires ...
void AddClusterCommands(CLI::App& app, CommandLine& line);    // executors, cluster, tokens, audit
void AddCalendarsCommands(CLI::App& app, CommandLine& line);  // calendars ...
void AddWorkflowsCommands(CLI::App& app, CommandLine& line);  // workflows ...
void AddApplyCommands(CLI::App& app, CommandLine& line);      // diff, apply
void AddAlertsCommands(CLI::App& app, CommandLine& line);     // alerts ...

}  // namespace sched::ctl
