// Measures POST /v1/run on loopback: requests per second and latency percentiles of the
// executor's admission path with a no-op handler.
//
//   client_run_bench [--seconds 10] [--warmup 2] [--connections 16] [--batch N] [--io-threads N]
//                    [--callback-batch N] [--callback-urls N] [--tls-dir DIR]
//                    [--target http://127.0.0.1:9999 --token T --handler echo [--sink-port 8080]]
//
// Without --target it starts, in this process, an Executor with a "noop" handler and a sink
// standing in for the web module (it counts callbacks), then drives the executor over HTTP
// with `connections` keep-alive connections from one load thread. With --target it drives an
// executor in another process (e.g. apps/demo-client, handler "echo"); --sink-port then starts
// the callback sink on that port for it (point its web-endpoints there). The sink's heartbeat
// answers hand out a fixed signing key, and every run is signed with it as a node signs
// (docs/protocol.md), so the measured path includes the signature check. With --batch N every
// request is a POST /v1/runs of N runs (what a node sends for a burst): the latency is then the
// batch's (its answer comes after every run is admitted) and the throughput counts runs.
// With --tls-dir DIR (in-process mode) every hop is HTTPS: the executor and the sink serve
// DIR/server.crt and DIR/server.key (naming 127.0.0.1), and the load and the executor verify
// them against DIR/ca.crt, so the figure includes TLS on the admission path.

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "sched/client/executor.hpp"
#include "sched/common/net.hpp"
#include "sched/http/client.hpp"
#include "sched/http/server.hpp"
#include "sched/http/url.hpp"
#include "sched/protocol/request_signature.hpp"
#include "sched/protocol/run_answer.hpp"
#include "sched/protocol/run_batch.hpp"

#include <spdlog/spdlog.h>

namespace {

using namespace sched;
using Clock = std::chrono::steady_clock;

const protocol::SigningKey kBenchKey{"k-bench", std::string(64, 'b')};

std::int64_t WallMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

struct Args {
    double seconds = 10;
    double warmup = 2;
    int connections = 16;
    std::string target;
    std::string token = "bench-token";
    std::string handler = "noop";
    int sink_port = -1;         // external mode: start the sink on this port (-1: none)
    int batch = 0;              // runs per /v1/runs request (0: one /v1/run per run)
    int io_threads = 0;         // the in-process executor's io-threads (0: its default)
    int callback_batch = 1000;  // the in-process executor's callback-batch-size
    // In-process mode: connection i names callback URL i % N, as N trigger nodes each name
    // themselves (0: the runs name none; results go to the web endpoint).
    int callback_urls = 0;
    std::string tls_dir;  // in-process mode: HTTPS on every hop with the files in it
};

Args Parse(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        const std::string k = argv[i];
        const auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "%s needs a value\n", k.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (k == "--seconds")
            a.seconds = std::stod(next());
        else if (k == "--warmup")
            a.warmup = std::stod(next());
        else if (k == "--connections")
            a.connections = std::stoi(next());
        else if (k == "--target")
            a.target = next();
        else if (k == "--token")
            a.token = next();
        else if (k == "--handler")
            a.handler = next();
        else if (k == "--sink-port")
            a.sink_port = std::stoi(next());
        else if (k == "--batch")
            a.batch = std::stoi(next());
        else if (k == "--io-threads")
            a.io_threads = std::stoi(next());
        else if (k == "--callback-batch")
            a.callback_batch = std::stoi(next());
        else if (k == "--callback-urls")
            a.callback_urls = std::stoi(next());
        else if (k == "--tls-dir")
            a.tls_dir = next();
        else {
            std::fprintf(
                stderr,
                "usage: client_run_bench [--seconds N] [--warmup N] [--connections N] [--batch N] [--io-threads N] "
                "[--callback-batch N] [--callback-urls N] [--tls-dir DIR] "
                "[--target URL --token T --handler NAME [--sink-port N]]\n");
            std::exit(2);
        }
    }
    return a;
}

struct Shared {
    std::atomic<std::int64_t> next_fire{1};
    std::atomic<bool> measuring{false};
    std::atomic<bool> done{false};
};

struct Worker {
    std::vector<std::uint32_t> latencies_us;
    std::uint64_t ok = 0;
    std::uint64_t errors = 0;
};

net::awaitable<void> Load(http::HttpClient& client, std::string url, std::string callback_url, const Args& args,
                          Shared& shared, Worker& w) {
    http::CallOptions call;
    call.timeout = std::chrono::seconds(5);
    const auto target = http::Url::Parse(url)->target;
    const int runs_per_request = std::max(1, args.batch);
    while (!shared.done.load()) {
        std::string text;
        for (int k = 0; k < runs_per_request; ++k) {
            const std::int64_t fire = shared.next_fire.fetch_add(1);
            nlohmann::json run = {{"fire_id", fire},
                                  {"job_id", fire % 10000},
                                  {"attempt", 0},
                                  {"epoch", 1},
                                  {"handler", args.handler},
                                  {"params", nlohmann::json::object()},
                                  {"block_strategy", "serial"}};
            if (!callback_url.empty()) run["callback_url"] = callback_url;
            if (k > 0) text += ',';
            text += run.dump();
        }
        const auto t0 = Clock::now();
        http::ClientRequest request{.method = http::Method::kPost,
                                    .url = url,
                                    .body = args.batch > 0 ? protocol::RunsBatchBody(text) : std::move(text)};
        for (auto& [name, value] : protocol::SignatureHeaders(kBenchKey, "POST", target, WallMs(), request.body)) {
            request.headers.Set(name, std::move(value));
        }
        request.headers.Set("Content-Type", "application/json");
        auto r = co_await client.Send(std::move(request), call);
        const auto us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
        if (!shared.measuring.load()) continue;
        if (r.ok() && r->status == (args.batch > 0 ? 200 : 202)) {
            w.ok += static_cast<std::uint64_t>(runs_per_request);
            w.latencies_us.push_back(static_cast<std::uint32_t>(us));
        } else {
            ++w.errors;
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    const Args args = Parse(argc, argv);
    spdlog::set_level(spdlog::level::warn);

    // In-process mode: a callback sink and the executor under test, on their own threads.
    std::atomic<std::uint64_t> callbacks{0};
    net::io_context sink_io;
    std::unique_ptr<http::Server> sink;
    std::thread sink_thread;
    std::unique_ptr<client::Executor> executor;
    std::string target = args.target;
    const bool tls = !args.tls_dir.empty();
    const std::string scheme = tls ? "https://" : "http://";
    http::ServerTlsOptions server_tls;
    http::ClientTlsOptions client_tls;
    if (tls) {
        server_tls.cert_file = args.tls_dir + "/server.crt";
        server_tls.key_file = args.tls_dir + "/server.key";
        client_tls.ca_file = args.tls_dir + "/ca.crt";
    }
    if (target.empty() || args.sink_port >= 0) {
        http::Router router;
        router.Add(http::Method::kPost, "/api/v1/callback", [&](http::Request& req) {
            auto j = req.Json();
            if (j.ok() && j->is_array()) callbacks += j->size();
            return http::Response::Json({{"ok", true}});
        });
        router.Add(http::Method::kPost, "/api/v1/registry/{what}", [](http::Request&) {
            const nlohmann::json keys = nlohmann::json::array({{{"id", kBenchKey.id}, {"secret", kBenchKey.secret}}});
            return http::Response::Json({{"signing", {{"keys", keys}, {"server_time_ms", WallMs()}}}});
        });
        http::ServerOptions sink_options;
        sink_options.listen = "127.0.0.1:" + std::to_string(std::max(args.sink_port, 0));
        sink_options.access_log = http::AccessLog::kOff;
        sink_options.tls = server_tls;
        sink = std::make_unique<http::Server>(sink_io.get_executor(), sink_options, std::move(router));
        sink->Start();
        sink_thread = std::thread([&] { sink_io.run(); });
    }
    if (target.empty()) {
        client::ExecutorOptions o;
        o.app = "bench";
        o.web_endpoints = {scheme + "127.0.0.1:" + std::to_string(sink->port())};
        o.web_tls = client_tls;
        o.http.tls = server_tls;
        o.token = args.token;
        o.capacity = 1'000'000;
        o.worker_threads = 2;
        if (args.io_threads > 0) o.io_threads = args.io_threads;
        o.callback_batch_size = args.callback_batch;
        o.spool_dir = std::filesystem::temp_directory_path() / ("sched-run-bench-" + std::to_string(getpid()));
        o.http.listen = "127.0.0.1:0";
        o.http.access_log = http::AccessLog::kOff;
        o.http.max_connections = 4096;
        executor = std::make_unique<client::Executor>(o);
        executor->Handle("noop", [](client::JobContext&) { return Status::Ok(); });
        executor->Start();
        while (executor->Stats().signing_keys == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        target = scheme + "127.0.0.1:" + std::to_string(executor->port());
    }

    net::io_context load_io;
    http::ClientOptions client_options;
    client_options.max_idle_per_host = static_cast<std::size_t>(args.connections);
    client_options.tls = client_tls;
    http::HttpClient client(load_io.get_executor(), client_options);
    Shared shared;
    std::vector<Worker> workers(static_cast<std::size_t>(args.connections));
    const std::string path(args.batch > 0 ? protocol::kRunsPath : protocol::kRunPath);
    for (std::size_t i = 0; i < workers.size(); ++i) {
        std::string callback_url;
        if (sink && args.callback_urls > 0) {
            callback_url = scheme + "127.0.0.1:" + std::to_string(sink->port()) +
                           "/api/v1/callback?node=" + std::to_string(i % static_cast<std::size_t>(args.callback_urls));
        }
        net::co_spawn(load_io, Load(client, target + path, std::move(callback_url), args, shared, workers[i]),
                      net::detached);
    }
    std::thread load_thread([&] { load_io.run(); });

    std::this_thread::sleep_for(std::chrono::duration<double>(args.warmup));
    shared.measuring = true;
    const auto start = Clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(args.seconds));
    shared.measuring = false;
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    shared.done = true;
    load_thread.join();

    std::vector<std::uint32_t> all;
    std::uint64_t ok = 0;
    std::uint64_t errors = 0;
    for (auto& w : workers) {
        all.insert(all.end(), w.latencies_us.begin(), w.latencies_us.end());
        ok += w.ok;
        errors += w.errors;
    }
    std::sort(all.begin(), all.end());
    const auto pct = [&](double p) -> double {
        if (all.empty()) return 0;
        return all[std::min(all.size() - 1, static_cast<std::size_t>(p * static_cast<double>(all.size())))] / 1000.0;
    };
    std::printf("target %s, handler %s, %d connections, %.1f s measured after %.1f s warm-up\n", target.c_str(),
                args.handler.c_str(), args.connections, elapsed, args.warmup);
    if (args.batch > 0) std::printf("%d runs per POST %s; latency is per request\n", args.batch, path.c_str());
    std::printf("runs accepted (202): %llu, other responses or errors: %llu\n", static_cast<unsigned long long>(ok),
                static_cast<unsigned long long>(errors));
    std::printf("throughput: %.0f runs/s\n", static_cast<double>(ok) / elapsed);
    std::printf("latency ms: p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f\n", pct(0.50), pct(0.90), pct(0.99),
                pct(0.999), all.empty() ? 0.0 : all.back() / 1000.0);

    if (sink && !executor) {
        std::this_thread::sleep_for(std::chrono::seconds(1));  // let the last batches arrive
        std::printf("callbacks at sink: %llu (requests sent %lld)\n", static_cast<unsigned long long>(callbacks.load()),
                    static_cast<long long>(shared.next_fire.load() - 1));
        net::co_spawn(sink_io, sink->Shutdown(), net::use_future).get();
        sink_io.stop();
        sink_thread.join();
    }
    if (executor) {
        const auto sent = shared.next_fire.load() - 1;
        executor->Stop();
        const auto stats = executor->Stats();
        std::printf(
            "executor: accepted %llu, succeeded %llu, results delivered %llu, callbacks at sink %llu "
            "(requests sent %lld)\n",
            static_cast<unsigned long long>(stats.accepted), static_cast<unsigned long long>(stats.succeeded),
            static_cast<unsigned long long>(stats.results_delivered), static_cast<unsigned long long>(callbacks.load()),
            static_cast<long long>(sent));
        executor.reset();
        std::filesystem::remove_all(std::filesystem::temp_directory_path() /
                                    ("sched-run-bench-" + std::to_string(getpid())));
        net::co_spawn(sink_io, sink->Shutdown(), net::use_future).get();
        sink_io.stop();
        sink_thread.join();
    }
    return errors == 0 ? 0 : 1;
}
