// The example of docs/client-sdk.md ("A complete service"), built against the installed SDK
// and run by client_package_test: keep the two identical.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>

#include <sched/client/executor.hpp>
#include <sched/common/logging.hpp>

using sched::Status;
using sched::client::JobContext;

Status SendInvoices(JobContext& ctx) {
    const auto day = ctx.params().value("day", "today");
    ctx.Log("sending invoices for {} (shard {}/{})", day, ctx.shard_index(), ctx.shard_total());
    for (int batch = 0; batch < 10; ++batch) {
        if (ctx.cancelled()) return sched::Cancelled("stopped");  // killed, timed out, covered, shutdown
        // ... send one batch ...
    }
    ctx.SetResultMessage("10 batches sent");
    return Status::Ok();  // an error Status = failed
}

// argv[1], else $BILLING_CONFIG, else billing.yaml next to the executable (not the working directory).
std::filesystem::path ConfigPath(int argc, char** argv) {
    if (argc > 1) return argv[1];
    if (const char* env = std::getenv("BILLING_CONFIG"); env != nullptr && *env != '\0') return env;
    return std::filesystem::read_symlink("/proc/self/exe").parent_path() / "billing.yaml";
}

int main(int argc, char** argv) {
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, nullptr);  // before the executor starts its threads
    try {
        auto config = sched::ConfigNode::LoadFile(ConfigPath(argc, argv));
        sched::SetupLogging(sched::LogConfig::FromYaml(config.Child("log")));
        sched::client::Executor executor(sched::client::ExecutorOptions::FromYaml(config.Child("executor")));
        executor.Handle("send-invoices", SendInvoices);
        executor.Start();  // throws if the port cannot be bound
        int signal = 0;
        sigwait(&stop, &signal);
        executor.Stop();  // deregisters, finishes or cancels runs, delivers or spools results
    } catch (const sched::ConfigError& e) {
        std::fprintf(stderr, "billing: %s\n", e.what());  // names the key: "executor.token: required"
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "billing: %s\n", e.what());
        return 1;
    }
}
