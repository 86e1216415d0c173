// Measures the SDK's lock client: acquire + release pairs per second and their latency through
// Executor::Lock against a real lock API over loopback HTTP.
//
//   client_lock_bench [--seconds 5] [--threads 1] [--db-url sqlite://... | mysql://...] [--redis h:p]
//                     [--url http://127.0.0.1:8080 --token T]
//
// Without --url it starts, in this process, a web module (WebService) on --db-url (default: a
// SQLite file in a temp dir) and measures against it. Each thread takes and releases its own key
// ("bench-<thread>-<n>" cycles over 64 keys), so the figure is the cost of the path, not of
// contention.

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "sched/client/executor.hpp"
#include "sched/common/node_id.hpp"
#include "sched/lock/lock_backend.hpp"
#include "sched/web/web_service.hpp"

namespace {

using namespace sched;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct Args {
    double seconds = 5;
    int threads = 1;
    std::string db_url;
    std::string redis;  // host:port: the web module keeps the locks in Redis
    std::string url;
    std::string token = "bench-token";
};

[[noreturn]] void Usage(const std::string& why) {
    std::fprintf(stderr,
                 "client_lock_bench: %s\nusage: client_lock_bench [--seconds S] [--threads N] [--db-url URL] "
                 "[--redis host:port] [--url http://host:port --token T]\n",
                 why.c_str());
    std::exit(2);
}

Args Parse(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        const std::string k = argv[i];
        const auto next = [&]() -> std::string {
            if (i + 1 >= argc) Usage(k + " needs a value");
            return argv[++i];
        };
        if (k == "--seconds") {
            a.seconds = std::atof(next().c_str());
        } else if (k == "--threads") {
            a.threads = std::atoi(next().c_str());
        } else if (k == "--db-url") {
            a.db_url = next();
        } else if (k == "--redis") {
            a.redis = next();
        } else if (k == "--url") {
            a.url = next();
        } else if (k == "--token") {
            a.token = next();
        } else {
            Usage("unknown argument " + k);
        }
    }
    if (a.seconds <= 0 || a.threads < 1) Usage("--seconds and --threads must be positive");
    return a;
}

double Percentile(std::vector<double>& v, double p) {
    if (v.empty()) return 0;
    const auto k = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return v[k];
}

std::string Describe(const Args& args, const std::string& url) {
    if (!args.url.empty()) return url;
    if (!args.redis.empty()) return "in-process web module, locks in Redis " + args.redis;
    return args.db_url.empty() ? "in-process web module on SQLite" : "in-process web module on --db-url";
}

}  // namespace

int main(int argc, char** argv) {
    const Args args = Parse(argc, argv);
    spdlog::set_level(spdlog::level::warn);
    const auto dir = std::filesystem::temp_directory_path() / ("sched-lock-bench-" + RandomHex(8));
    std::filesystem::create_directories(dir);
    std::unique_ptr<web::WebService> server;
    std::string url = args.url;
    if (url.empty()) {
        web::WebServiceConfig config;
        config.api.token = args.token;
        config.api.ui = false;
        config.http.listen = "127.0.0.1:0";
        auto db_url = db::ParseDbUrl(args.db_url.empty() ? "sqlite://" + (dir / "locks.db").string() : args.db_url);
        if (!db_url.ok()) Usage("--db-url: " + db_url.status().message());
        config.database.url = *db_url;
        if (!args.redis.empty()) {
            auto server_address = lock::RedisServerAddress::Parse(args.redis);
            if (!server_address.ok()) Usage("--redis: " + server_address.status().message());
            config.api.locks.backend.backend = lock::LockBackend::kRedis;
            config.api.locks.backend.servers = {*server_address};
        }
        config.io_threads = 2;
        config.db_threads = 4;
        server = std::make_unique<web::WebService>(config);
        if (Status s = server->Start(); !s.ok()) {
            std::fprintf(stderr, "client_lock_bench: cannot start the web module: %s\n", s.ToString().c_str());
            return 1;
        }
        url = "http://127.0.0.1:" + std::to_string(server->port());
    }

    std::atomic<bool> stop{false};
    std::atomic<long> failures{0};
    std::vector<std::vector<double>> latencies(static_cast<std::size_t>(args.threads));
    std::vector<std::thread> workers;
    for (int t = 0; t < args.threads; ++t) {
        workers.emplace_back([&, t] {
            client::ExecutorOptions o;
            o.app = "lock-bench";
            o.web_endpoints = {url};
            o.token = args.token;
            o.spool_dir = dir / ("spool-" + std::to_string(t));
            client::Executor executor(o);
            auto& mine = latencies[static_cast<std::size_t>(t)];
            for (long n = 0; !stop.load(std::memory_order_relaxed); ++n) {
                const std::string key = "bench-" + std::to_string(t) + "-" + std::to_string(n % 64);
                const auto start = Clock::now();
                auto lock = executor.Lock(key, 10s);
                if (!lock.ok() || !lock->Release().ok()) {
                    ++failures;
                    continue;
                }
                mine.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
            }
        });
    }
    const auto started = Clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(args.seconds));
    stop = true;
    for (auto& w : workers) w.join();
    const double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
    std::vector<double> all;
    for (auto& v : latencies) all.insert(all.end(), v.begin(), v.end());
    const double pairs = static_cast<double>(all.size());
    std::printf("target %s, %d thread(s), %.1f s: %.0f acquire+release pairs/s, p50 %.3f ms, p99 %.3f ms, %ld failed\n",
                Describe(args, url).c_str(), args.threads, elapsed, pairs / elapsed, Percentile(all, 0.5),
                Percentile(all, 0.99), failures.load());
    server.reset();
    std::filesystem::remove_all(dir);
    return failures.load() == 0 && pairs > 0 ? 0 : 1;
}
