#pragma once

/// What every scheduler app's main() shares (apps/scheduler-trigger, -web, -standalone): the
/// command line and waiting for SIGINT/SIGTERM.
///
/// Command line (ParseAppArgs):
///   --config FILE | --config=FILE   the YAML configuration (default: AppSpec::default_config)
///   --check-config                  load and validate the configuration, print "config ok" and
///                                   exit 0, or print the error naming the key and exit 2; the
///                                   app must not open its database or bind a port
///   --help | -h                     print AppSpec::usage to stdout, exit 0
///   --version                       print "<name> <version>" to stdout, exit 0
///   any of AppSpec::flags           a boolean flag of the app's own (e.g. --demo)
/// Anything else (an unknown flag, --config without a value, a positional argument) prints one
/// line to stderr naming the argument and exits 2. Exit codes of the apps: 0 stopped cleanly
/// (or config ok), 1 runtime failure, 2 bad arguments or configuration.

#include <atomic>
#include <functional>
#include <iosfwd>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <signal.h>

#include "sched/common/status.hpp"

namespace sched {

class ConfigNode;

struct AppSpec {
    std::string name;                ///< the program name used in messages ("scheduler-trigger")
    std::string version;             ///< printed by --version
    std::string usage;               ///< printed by --help
    std::string default_config;      ///< used when --config is absent
    std::vector<std::string> flags;  ///< extra boolean flags this app accepts ("--demo")
};

struct AppArgs {
    std::string config_path;
    bool check_config = false;
    std::set<std::string> flags;  ///< the AppSpec::flags given on the command line

    bool Has(const std::string& flag) const { return flags.count(flag) != 0; }
};

struct ParsedArgs {
    /// Set when main must return at once with this code (help, version, bad arguments); what
    /// there was to say has been written to `out` / `err` already.
    std::optional<int> exit_code;
    AppArgs args;
};

/// Parses `args` (argv without argv[0]). Never throws for user input.
ParsedArgs ParseAppArgs(const AppSpec& spec, const std::vector<std::string>& args, std::ostream& out,
                        std::ostream& err);
/// The same over main's argc/argv, writing to std::cout / std::cerr.
ParsedArgs ParseAppArgs(const AppSpec& spec, int argc, char** argv);

/// The end of a --check-config run: prints "config ok" to stdout and returns exit code 0.
int ReportConfigOk();

/// Loads the configuration file `args` names: `load` reads its root into the app's settings
/// (throwing ConfigError naming the key). Returns the code main must return at once: 2 after
/// printing "<spec.name>: <error>" to stderr when the file does not load, ReportConfigOk's 0 for
/// --check-config; nothing when the app goes on to start.
std::optional<int> LoadAppConfig(const AppSpec& spec, const AppArgs& args,
                                 const std::function<void(const ConfigNode& root)>& load);

/// The exit code of an app whose service did not start (`started` not ok): 0 when a stop signal
/// cancelled the start (kCancelled), else 1 after logging "cannot start: <status>".
int StartFailureExitCode(const Status& started);

/// Announces (announce.hpp) "<who> listening on http://<authority>", https:// when `tls`: the
/// line scripts and tests wait for once the app listens. `authority` is the "host:port" it is
/// bound to (http::HostPort::ToString: an IPv6 host in brackets).
void AnnounceListening(std::string_view who, bool tls, std::string_view authority);

/// Waits for SIGINT/SIGTERM on a thread of its own, and runs the OnHangup callback for each
/// SIGHUP (reload certificates) meanwhile. The constructor blocks the three signals in the
/// calling thread, so construct it in main() before any other thread starts (threads inherit
/// the mask): then the signals reach only this waiter, never a random thread.
///
///   StopSignals signals;
///   Status s = service.Start([&] { return signals.stop_requested(); });
///   if (!s.ok()) return StartFailureExitCode(s);  // the destructor wakes and joins the waiter
///   return ServeUntilStopped(signals, "scheduler-x", [&] { service.Stop(); });
class StopSignals {
  public:
    StopSignals();
    /// Wakes the waiter if no signal came (without logging one) and joins it.
    ~StopSignals();
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;

    /// Runs `callback` on the waiter's thread for every SIGHUP from now on (replacing an earlier
    /// one); without a callback SIGHUP is logged and ignored. Must not block for long.
    void OnHangup(std::function<void()> callback);

    /// True once SIGINT or SIGTERM arrived; for start-up loops that can be abandoned.
    bool stop_requested() const { return stop_requested_.load(); }
    /// Blocks until SIGINT or SIGTERM arrives (logged at info: "signal N received, stopping");
    /// returns the signal number. Call at most once.
    int Wait();

  private:
    sigset_t signals_;
    std::atomic<bool> stop_requested_{false};
    std::atomic<bool> exiting_{false};  ///< set when the destructor wakes the waiter itself
    std::atomic<int> signo_{0};
    std::mutex hangup_mu_;
    std::function<void()> on_hangup_;  // guarded by hangup_mu_
    std::thread waiter_;
};

/// The end of an app's main() once its service started: waits for SIGINT/SIGTERM
/// (signals.Wait()), stops the service with `stop`, logs "<name> stopped" and returns the exit
/// code of a clean stop, 0.
int ServeUntilStopped(StopSignals& signals, std::string_view name, const std::function<void()>& stop);

}  // namespace sched
