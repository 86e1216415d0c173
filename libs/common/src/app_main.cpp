#include "sched/common/app_main.hpp"

#include <pthread.h>

#include <algorithm>
#include <iostream>

#include <spdlog/spdlog.h>

#include "sched/common/announce.hpp"
#include "sched/common/config.hpp"

namespace sched {

ParsedArgs ParseAppArgs(const AppSpec& spec, const std::vector<std::string>& args, std::ostream& out,
                        std::ostream& err) {
    ParsedArgs parsed;
    parsed.args.config_path = spec.default_config;
    const auto fail = [&](const std::string& why) {
        err << spec.name << ": " << why << " (see --help)\n";
        parsed.exit_code = 2;
        return parsed;
    };
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        // --help and --version win wherever they stand, as people expect of them.
        if (arg == "--help" || arg == "-h") {
            out << spec.usage;
            parsed.exit_code = 0;
            return parsed;
        }
        if (arg == "--version") {
            out << spec.name << " " << spec.version << "\n";
            parsed.exit_code = 0;
            return parsed;
        }
        if (arg == "--check-config") {
            parsed.args.check_config = true;
        } else if (arg == "--config") {
            // A following flag is not a file name: "--config --demo" is a missing value, not a
            // config file called "--demo".
            if (i + 1 >= args.size() || args[i + 1].rfind("--", 0) == 0) return fail("--config needs a FILE");
            parsed.args.config_path = args[++i];
        } else if (arg.rfind("--config=", 0) == 0) {
            if (arg.size() == 9) return fail("--config needs a FILE");
            parsed.args.config_path = arg.substr(9);
        } else if (std::find(spec.flags.begin(), spec.flags.end(), arg) != spec.flags.end()) {
            parsed.args.flags.insert(arg);
        } else {
            return fail("unknown argument \"" + arg + "\"");
        }
    }
    return parsed;
}

ParsedArgs ParseAppArgs(const AppSpec& spec, int argc, char** argv) {
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
    return ParseAppArgs(spec, args, std::cout, std::cerr);
}

int ReportConfigOk() {
    std::cout << "config ok" << std::endl;
    return 0;
}

std::optional<int> LoadAppConfig(const AppSpec& spec, const AppArgs& args,
                                 const std::function<void(const ConfigNode& root)>& load) {
    try {
        load(ConfigNode::LoadFile(args.config_path));
    } catch (const ConfigError& e) {
        std::cerr << spec.name << ": " << e.what() << "\n";
        return 2;
    }
    if (args.check_config) return ReportConfigOk();
    return std::nullopt;
}

int StartFailureExitCode(const Status& started) {
    // A signal during the start (a slow database, say) is a clean stop, not a failure.
    if (started.code() == Code::kCancelled) return 0;
    spdlog::error("cannot start: {}", started.ToString());
    return 1;
}

void AnnounceListening(std::string_view who, bool tls, std::string_view authority) {
    Announce(std::string(who) + " listening on " + (tls ? "https://" : "http://") + std::string(authority));
}

StopSignals::StopSignals() {
    sigemptyset(&signals_);
    sigaddset(&signals_, SIGINT);
    sigaddset(&signals_, SIGTERM);
    sigaddset(&signals_, SIGHUP);
    // Blocked here, and so in every thread started from now on; only sigwait below takes them.
    pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
    waiter_ = std::thread([this] {
        int signo = 0;
        for (;;) {
            sigwait(&signals_, &signo);
            if (signo != SIGHUP || exiting_) break;
            std::function<void()> callback;
            {
                std::lock_guard lock(hangup_mu_);
                callback = on_hangup_;
            }
            if (!callback) {
                spdlog::info("signal {} (SIGHUP) received, nothing to reload", signo);
                continue;
            }
            spdlog::info("signal {} (SIGHUP) received, reloading", signo);
            try {
                callback();
            } catch (const std::exception& e) {
                spdlog::error("SIGHUP reload failed: {}", e.what());
            }
        }
        if (!exiting_) {
            signo_ = signo;
            spdlog::info("signal {} received, stopping", signo);
        }
        stop_requested_ = true;
    });
}

StopSignals::~StopSignals() {
    if (!waiter_.joinable()) return;
    exiting_ = true;
    // The waiter only leaves sigwait on a signal: send it one of its own (it is blocked
    // everywhere, so it can only be taken by that sigwait). SIGHUP, which the waiter leaves on
    // once exiting_ is set: a terminating signal sent to one thread reads as a bug (clang-tidy).
    if (!stop_requested_) pthread_kill(waiter_.native_handle(), SIGHUP);
    waiter_.join();
}

void StopSignals::OnHangup(std::function<void()> callback) {
    std::lock_guard lock(hangup_mu_);
    on_hangup_ = std::move(callback);
}

int StopSignals::Wait() {
    if (waiter_.joinable()) waiter_.join();
    return signo_;
}

int ServeUntilStopped(StopSignals& signals, std::string_view name, const std::function<void()>& stop) {
    signals.Wait();
    stop();
    spdlog::info("{} stopped", name);
    return 0;
}

}  // namespace sched
