// scheduler-web: the REST API, the web UI and the SDK's registry and callback routes over the
// cluster's database (sched/web/web_service.hpp). Wiring only.

#include <pthread.h>

#include <atomic>
#include <csignal>
#include <iostream>
#include <string>
#include <thread>

#include <spdlog/spdlog.h>

#include "sched/common/config.hpp"
#include "sched/common/logging.hpp"
#include "sched/web/web_service.hpp"

namespace {

constexpr const char* kUsage = R"(usage: scheduler-web [--config FILE]

Serves the scheduler's REST API (/api/v1, described at /api/v1/openapi.json), the web UI (/),
the client SDK's registry and callback routes, /healthz, /readyz and /metrics. Stateless: run
as many as you need against the cluster's database.

  --config FILE   YAML configuration (default: config/web.yaml)
  --help          print this help and exit
  --version       print the version and exit

Environment: SCHED_TOKEN (the cluster token), SCHED_EXECUTOR_TOKEN, SCHED_DB_PASSWORD.
Exit codes: 0 stopped cleanly, 1 runtime failure, 2 bad arguments or configuration.
)";

}  // namespace

int main(int argc, char** argv) {
    std::string config_path = "config/web.yaml";
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            std::cout << kUsage;
            return 0;
        }
        if (arg == "--version") {
            std::cout << "scheduler-web " SCHED_VERSION "\n";
            return 0;
        }
        if (arg == "--config" && i + 1 < argc) {
            config_path = argv[++i];
        } else if (arg.rfind("--config=", 0) == 0) {
            config_path = arg.substr(9);
        } else {
            std::cerr << "scheduler-web: unknown argument \"" << arg << "\" (see --help)\n";
            return 2;
        }
    }
    sched::web::WebServiceConfig config;
    try {
        config = sched::web::WebServiceConfig::FromYaml(sched::ConfigNode::LoadFile(config_path));
    } catch (const sched::ConfigError& e) {
        std::cerr << "scheduler-web: " << e.what() << "\n";
        return 2;
    }
    sched::SetupLogging(config.log);

    // Signals are waited for on one thread; every other thread runs with them blocked.
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
        if (!exiting) spdlog::info("signal {} received, stopping", signo);
        stop_requested = true;
    });
    const auto wake_waiter = [&] {
        exiting = true;
        if (!stop_requested) pthread_kill(signal_waiter.native_handle(), SIGTERM);
        signal_waiter.join();
    };

    sched::web::WebService service(config);
    spdlog::info("scheduler-web {} starting with database {}", SCHED_VERSION, config.database.url.Redacted());
    sched::Status started = service.Start([&] { return stop_requested.load(); });
    if (!started.ok()) {
        wake_waiter();
        if (started.code() == sched::Code::kCancelled) return 0;
        spdlog::error("cannot start: {}", started.ToString());
        return 1;
    }
    std::cout << "scheduler-web listening on http://127.0.0.1:" << service.port() << std::endl;
    signal_waiter.join();
    service.Stop();
    spdlog::info("scheduler-web stopped");
    return 0;
}
