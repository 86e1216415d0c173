// demo-client: an example business service built on the client SDK. Wires config, logging,
// the executor and the demo handlers together, then waits for SIGTERM/SIGINT (SIGHUP reloads the
// TLS certificate files).

#include <pthread.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include "demo_handlers.hpp"
#include "sched/client/executor.hpp"
#include "sched/common/config.hpp"
#include "sched/common/logging.hpp"
#include "sched/http/server.hpp"

#include <spdlog/spdlog.h>

namespace {

constexpr const char* kUsage =
    "usage: demo-client [--config FILE] [--help] [--version]\n"
    "\n"
    "An example business service: serves the job handlers echo, sleep, fail, count and pay (and\n"
    "the conformance handler set conformance.echo, .sleep, .fail) to the scheduler, heartbeating\n"
    "to the web module. Stops gracefully on SIGTERM or SIGINT.\n"
    "\n"
    "  --config FILE  YAML configuration (default config/demo-client.yaml)\n"
    "  --help         this text\n"
    "  --version      the version\n"
    "\n"
    "Environment: SCHED_TOKEN overrides executor.token.\n"
    "Exit codes: 0 stopped normally, 1 failed at run time, 2 bad arguments or configuration.\n";

}  // namespace

int main(int argc, char** argv) {
    std::string config_path = "config/demo-client.yaml";
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            std::fputs(kUsage, stdout);
            return 0;
        }
        if (arg == "--version") {
            std::printf("demo-client %s\n", SCHED_VERSION);
            return 0;
        }
        if (arg == "--config" && i + 1 < argc) {
            config_path = argv[++i];
        } else {
            std::fprintf(stderr, "demo-client: unexpected argument \"%s\"\n%s", arg.c_str(), kUsage);
            return 2;
        }
    }

    sched::client::ExecutorOptions options;
    sched::demo::DemoOptions demo;
    try {
        const auto root = sched::ConfigNode::LoadFile(config_path);
        sched::SetupLogging(sched::LogConfig::FromYaml(root.Child("log")));
        options = sched::client::ExecutorOptions::FromYaml(root.Child("executor"));
        demo = sched::demo::DemoOptions::FromYaml(root.Child("demo"));
        root.RejectUnknownKeys();
    } catch (const sched::ConfigError& e) {
        std::fprintf(stderr, "demo-client: %s\n", e.what());
        return 2;
    }

    // Signals are taken synchronously by this thread; every thread started later inherits the mask.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    // SIGHUP's default action would end the process: an operator renewing certificates sends it.
    sigaddset(&stop_signals, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    std::atomic<std::int64_t> count_calls{0};
    try {
        sched::client::Executor executor(options);
        sched::demo::RegisterDemoHandlers(executor, count_calls);
        sched::demo::RegisterPayHandler(executor, demo);
        sched::demo::RegisterConformanceHandlers(executor);
        executor.Start();
        int signal = 0;
        while (sigwait(&stop_signals, &signal) == 0 && signal == SIGHUP) {
            spdlog::info("demo-client: SIGHUP received, reloading TLS certificates");
            sched::http::ReloadAllTls();
        }
        spdlog::info("demo-client: {} received, stopping", strsignal(signal));
        executor.Stop();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "demo-client: %s\n", e.what());
        return 1;
    }
    return 0;
}
