// scheduler-trigger: one node of the trigger cluster. Wiring only (sched/trigger/node.hpp).

#include <csignal>
#include <iostream>
#include <string>

#include <spdlog/spdlog.h>

#include "sched/trigger/node.hpp"

namespace {

constexpr const char* kUsage = R"(usage: scheduler-trigger [--config FILE]

Runs one trigger node: competes for the master lease, schedules while it leads, dispatches the
fires assigned to it, and serves /healthz, /readyz, /metrics, /status on its HTTP port.

  --config FILE   YAML configuration (default: config/trigger.yaml)
  --help          print this help and exit
  --version       print the version and exit

Environment: SCHED_TOKEN (cluster token), SCHED_DB_PASSWORD, SCHED_EXECUTOR_TOKEN.
Exit codes: 0 stopped cleanly, 1 runtime failure, 2 bad arguments or configuration.
)";

volatile std::sig_atomic_t g_signal = 0;

}  // namespace

int main(int argc, char** argv) {
    std::string config_path = "config/trigger.yaml";
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            std::cout << kUsage;
            return 0;
        }
        if (arg == "--version") {
            std::cout << "scheduler-trigger " SCHED_VERSION "\n";
            return 0;
        }
        if (arg == "--config" && i + 1 < argc) {
            config_path = argv[++i];
        } else if (arg.rfind("--config=", 0) == 0) {
            config_path = arg.substr(9);
        } else {
            std::cerr << "scheduler-trigger: unknown argument \"" << arg << "\" (see --help)\n";
            return 2;
        }
    }
    sched::trigger::NodeConfig config;
    try {
        config = sched::trigger::NodeConfig::FromYaml(sched::ConfigNode::LoadFile(config_path), {});
    } catch (const sched::ConfigError& e) {
        std::cerr << "scheduler-trigger: " << e.what() << "\n";
        return 2;
    }
    sched::SetupLogging(config.log);

    // Signals are waited for on this thread; every other thread runs with them blocked.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    std::atomic<bool> stop_requested{false};
    std::atomic<bool> exiting{false};  // set when main wakes the waiter itself
    std::thread signal_waiter([&] {
        int signo = 0;
        sigwait(&signals, &signo);
        if (!exiting) g_signal = signo;
        stop_requested = true;
    });

    sched::trigger::TriggerNode node(config);
    spdlog::info("scheduler-trigger {} starting as {} with database {}", SCHED_VERSION, node.node_id(),
                 config.database.url.Redacted());
    sched::Status started = node.Start([&] { return stop_requested.load(); });
    if (!started.ok()) {
        if (started.code() == sched::Code::kCancelled) {
            signal_waiter.join();
            return 0;
        }
        spdlog::error("cannot start: {}", started.ToString());
        exiting = true;
        pthread_kill(signal_waiter.native_handle(), SIGTERM);
        signal_waiter.join();
        return 1;
    }
    std::cout << "scheduler-trigger " << node.node_id() << " listening on http://127.0.0.1:" << node.port()
              << std::endl;
    signal_waiter.join();
    spdlog::info("signal {} received", static_cast<int>(g_signal));
    node.Stop();
    return 0;
}
