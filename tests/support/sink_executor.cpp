// sched-sink-executor: one executor instance for the chaos suite (tests/cluster/chaos_test.cpp),
// built on the client SDK. It serves the handler `sink`, which appends one JSON line per run to
// a log file and then, if the params say so ({"ms": N}), sleeps N ms (cancellable), or fails
// while a file exists ({"fail_if_exists": PATH}, for the workflow tests). Each line
// is written with one write(2) on an O_APPEND descriptor, so a kill -9 loses at most the line
// being written and never interleaves two lines.
//
// Line: {"arrival_ms", "job_id", "fire_id", "scheduled_ms", "attempt", "epoch", "instance",
// "address", "params"}. arrival_ms is when the handler started (the SDK runs the handler as soon as it
// accepted the run, unless the job's serial block strategy queues it behind a running one).
// The SDK answers a repeated (fire_id, attempt) with 202 without running it again, so a
// re-sent identical request to the same instance leaves no second line; every other double
// (another fire row, another attempt, another instance) does.

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sched/client/executor.hpp"

namespace {

constexpr const char* kUsage =
    "usage: sched-sink-executor --app APP --endpoint URL [--endpoint URL...] --token TOKEN\n"
    "                           --log FILE --instance NAME --spool DIR [--listen HOST:PORT]\n"
    "                           [--capacity N] [--heartbeat MS]\n"
    "Serves the handler `sink` (one JSON line per run to FILE, then sleeps params.ms if given).\n"
    "Prints \"sink ready at HOST:PORT\" once serving; stops on SIGTERM/SIGINT.\n";

std::int64_t WallMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

int main(int argc, char** argv) {
    sched::client::ExecutorOptions options;
    options.http = sched::client::ExecutorOptions::DefaultServerOptions();
    options.http.listen = "127.0.0.1:0";
    options.heartbeat_interval = std::chrono::milliseconds(500);
    options.worker_threads = 16;
    options.capacity = 1000;
    options.callback_max_backoff = std::chrono::seconds(1);
    options.web_timeout = std::chrono::seconds(2);
    options.shutdown_grace = std::chrono::seconds(2);
    std::string log_path;
    std::string instance;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const bool has_value = i + 1 < argc;
        if (arg == "--help") {
            std::fputs(kUsage, stdout);
            return 0;
        }
        if (!has_value) {
            std::fprintf(stderr, "sched-sink-executor: %s needs a value\n%s", arg.c_str(), kUsage);
            return 2;
        }
        const std::string value = argv[++i];
        if (arg == "--app") {
            options.app = value;
        } else if (arg == "--endpoint") {
            options.web_endpoints.push_back(value);
        } else if (arg == "--token") {
            options.token = value;
        } else if (arg == "--log") {
            log_path = value;
        } else if (arg == "--instance") {
            instance = value;
        } else if (arg == "--spool") {
            options.spool_dir = value;
        } else if (arg == "--listen") {
            options.http.listen = value;
        } else if (arg == "--capacity") {
            options.capacity = std::stoi(value);
        } else if (arg == "--heartbeat") {
            options.heartbeat_interval = std::chrono::milliseconds(std::stoi(value));
        } else {
            std::fprintf(stderr, "sched-sink-executor: unexpected argument \"%s\"\n%s", arg.c_str(), kUsage);
            return 2;
        }
    }
    if (log_path.empty() || instance.empty()) {
        std::fprintf(stderr, "sched-sink-executor: --log and --instance are required\n%s", kUsage);
        return 2;
    }
    const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) {
        std::fprintf(stderr, "sched-sink-executor: cannot open %s: %s\n", log_path.c_str(), std::strerror(errno));
        return 1;
    }

    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    try {
        sched::client::Executor executor(options);
        std::mutex log_mu;
        std::string address;
        executor.Handle("sink", [&](sched::client::JobContext& ctx) -> sched::Status {
            {
                std::lock_guard lock(log_mu);
                const nlohmann::json line = {{"arrival_ms", WallMs()},   {"job_id", ctx.job_id()},
                                             {"fire_id", ctx.fire_id()}, {"scheduled_ms", ctx.scheduled_ms()},
                                             {"attempt", ctx.attempt()}, {"epoch", ctx.epoch()},
                                             {"instance", instance},     {"address", address},
                                             {"params", ctx.params()}};
                const std::string text = line.dump() + "\n";
                if (::write(log_fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
                    return sched::Status(sched::Code::kInternal, "sink log write failed");
                }
            }
            const auto& params = ctx.params();
            // {"ms": N} sleeps N ms; {"only_attempt": A} limits that to attempt A (a retry is quick).
            const bool this_attempt = !params.is_object() || !params.contains("only_attempt") ||
                                      params["only_attempt"] == nlohmann::json(ctx.attempt());
            if (this_attempt && params.is_object() && params.contains("ms") && params["ms"].is_number_integer()) {
                if (!ctx.SleepFor(std::chrono::milliseconds(params["ms"].get<std::int64_t>()))) {
                    return sched::Status(sched::Code::kCancelled, "interrupted");
                }
            }
            // {"fail_if_exists": PATH} fails the run while PATH exists (a step that fails until
            // the operator fixes it, for the workflow tests).
            if (params.is_object() && params.contains("fail_if_exists") && params["fail_if_exists"].is_string() &&
                std::filesystem::exists(params["fail_if_exists"].get<std::string>())) {
                return sched::Status(sched::Code::kFailedPrecondition,
                                     params["fail_if_exists"].get<std::string>() + " exists");
            }
            ctx.SetResultMessage("sunk");
            return sched::Status::Ok();
        });
        executor.Start();
        {
            std::lock_guard lock(log_mu);
            address = executor.address();
        }
        std::printf("sink ready at %s\n", address.c_str());
        std::fflush(stdout);
        int signal = 0;
        sigwait(&stop_signals, &signal);
        executor.Stop();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "sched-sink-executor: %s\n", e.what());
        ::close(log_fd);
        return 1;
    }
    ::close(log_fd);
    return 0;
}
