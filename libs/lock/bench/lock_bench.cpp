// Lock benchmark (a tool, not a test; figures go to docs/locks.md and docs/benchmarks.md).
//
//   lock_bench --url URL [--seconds 5] [--idle-seconds 10]
//   lock_bench --redis HOST:PORT[,HOST:PORT...] [--seconds 5]
//
// With --redis the lock store is one Redis server (RedisLockStore: one script per acquire and
// one per release) or, with several servers, Redlock (RedlockStore: one script per server for
// each); only part 1 runs (the election always uses the SQL table).
//
// 1. Acquire + release pairs per second (TryLock with wait 0, then Unlock) for 1 and for 8
//    concurrent clients, each client with its own DistributedLock and its own connection, on
//    distinct keys and on one shared key (there only successful acquisitions count).
// 2. Database statements per second that an idle 3-node election cluster costs (default config:
//    tick 1s, ttl 3s, margin 1s): counted by the stores, and on MySQL also by the server's
//    `Questions` counter.
// The schema is migrated first; use a database of its own.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "sched/common/duration.hpp"
#include "sched/db/database.hpp"
#include "sched/db/migrator.hpp"
#include "sched/lock/distributed_lock.hpp"
#include "sched/lock/lease_elector.hpp"
#include "sched/lock/redis_lock_store.hpp"
#include "sched/lock/sql_lock_store.hpp"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::shared_ptr<sched::db::Database> Open(sched::db::DbUrl url, int pool) {
    url.pool = pool;
    auto db = sched::db::Database::Open(url);
    if (!db.ok()) throw std::runtime_error(db.status().ToString());
    return *db;
}

struct PairStats {
    long long pairs = 0;
    long long misses = 0;
    long long errors = 0;
    std::vector<double> latencies_us;
};

using StoreFactory = std::function<std::shared_ptr<sched::lock::KeyLockStore>()>;

void AcquireRelease(const StoreFactory& make_store, int clients, bool shared_key, std::chrono::seconds duration) {
    std::vector<PairStats> stats(static_cast<std::size_t>(clients));
    std::vector<std::unique_ptr<sched::lock::DistributedLock>> locks;
    locks.reserve(static_cast<std::size_t>(clients));
    for (int c = 0; c < clients; ++c) {
        locks.push_back(std::make_unique<sched::lock::DistributedLock>(make_store(), "bench-" + std::to_string(c)));
    }
    std::atomic<bool> go{false};
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    threads.reserve(static_cast<std::size_t>(clients));
    for (int c = 0; c < clients; ++c) {
        threads.emplace_back([&, c] {
            const std::string key = shared_key ? "bench-shared" : "bench-" + std::to_string(c);
            PairStats& st = stats[static_cast<std::size_t>(c)];
            while (!go.load()) std::this_thread::yield();
            while (!stop.load()) {
                const auto t0 = Clock::now();
                auto h = locks[static_cast<std::size_t>(c)]->TryLock(key, 0s, 10s);
                if (!h.ok()) {
                    ++st.errors;
                    continue;
                }
                if (!h->has_value()) {
                    ++st.misses;
                    continue;
                }
                if (!locks[static_cast<std::size_t>(c)]->Unlock(**h).ok()) ++st.errors;
                ++st.pairs;
                st.latencies_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
            }
        });
    }
    const auto start = Clock::now();
    go = true;
    std::this_thread::sleep_for(duration);
    stop = true;
    for (auto& t : threads) t.join();
    const double secs = std::chrono::duration<double>(Clock::now() - start).count();
    PairStats total;
    for (auto& s : stats) {
        total.pairs += s.pairs;
        total.misses += s.misses;
        total.errors += s.errors;
        total.latencies_us.insert(total.latencies_us.end(), s.latencies_us.begin(), s.latencies_us.end());
    }
    std::sort(total.latencies_us.begin(), total.latencies_us.end());
    const auto pct = [&](double p) {
        if (total.latencies_us.empty()) return 0.0;
        return total.latencies_us[static_cast<std::size_t>(p * static_cast<double>(total.latencies_us.size() - 1))];
    };
    std::printf(
        "acquire+release  clients=%d  keys=%-8s  %8.0f pairs/s  p50 %7.0f us  p99 %7.0f us  (held elsewhere: %lld, "
        "errors: %lld)\n",
        clients, shared_key ? "shared" : "distinct", static_cast<double>(total.pairs) / secs, pct(0.5), pct(0.99),
        total.misses, total.errors);
}

long long Questions(sched::db::Database& admin) {
    auto q = admin.Run([](soci::session& s) {
        std::string name;
        std::string value;
        s << "SHOW GLOBAL STATUS LIKE 'Questions'", soci::into(name), soci::into(value);
        return std::stoll(value);
    });
    return q.ok() ? *q : -1;
}

void IdleCluster(const sched::db::DbUrl& url, std::chrono::seconds duration) {
    sched::lock::ElectionConfig config;  // defaults: tick 1s, ttl 3s, margin 1s
    struct Node {
        std::unique_ptr<sched::lock::SqlLockStore> store;
        std::unique_ptr<sched::lock::LeaseElector> elector;
        std::jthread driver;
    };
    std::vector<Node> nodes(3);
    for (int i = 0; i < 3; ++i) {
        nodes[i].store = std::make_unique<sched::lock::SqlLockStore>(Open(sched::lock::ElectionDbUrl(url, config), 2));
        nodes[i].elector =
            std::make_unique<sched::lock::LeaseElector>(*nodes[i].store, "bench-node-" + std::to_string(i), config);
    }
    for (auto& n : nodes) n.driver = std::jthread([&e = *n.elector](const std::stop_token& st) { e.Run(st); });
    std::this_thread::sleep_for(config.tick * 2);  // settled: one leader, two followers
    std::shared_ptr<sched::db::Database> admin;
    if (url.backend == sched::db::Backend::kMySql) admin = Open(url, 1);
    std::uint64_t before = 0;
    for (auto& n : nodes) before += n.store->statements();
    const long long q_before = admin ? Questions(*admin) : 0;
    const auto start = Clock::now();
    std::this_thread::sleep_for(duration);
    const long long q_after = admin ? Questions(*admin) : 0;
    const double secs = std::chrono::duration<double>(Clock::now() - start).count();
    std::uint64_t after = 0;
    for (auto& n : nodes) after += n.store->statements();
    int leaders = 0;
    for (auto& n : nodes) leaders += n.elector->IsLeading() ? 1 : 0;
    std::printf("idle 3-node cluster (tick %s): %.2f statements/s counted by the stores",
                sched::FormatDuration(config.tick).c_str(), static_cast<double>(after - before) / secs);
    if (admin) {
        // Minus the one SHOW STATUS of ours that falls inside the window.
        std::printf(", %.2f by the server's Questions counter", static_cast<double>(q_after - q_before - 1) / secs);
    }
    std::printf(" (%d leader)\n", leaders);
    for (auto& n : nodes) n.driver.request_stop();
}

}  // namespace

int main(int argc, char** argv) {
    try {
        std::map<std::string, std::string> flags;
        for (int i = 1; i + 1 < argc; i += 2) flags[std::string(argv[i]).substr(2)] = argv[i + 1];
        if (flags.count("url") == flags.count("redis")) {
            std::fprintf(stderr,
                         "usage: lock_bench --url URL [--seconds 5] [--idle-seconds 10]\n"
                         "       lock_bench --redis HOST:PORT[,HOST:PORT...] [--seconds 5]\n");
            return 2;
        }
        const auto seconds = std::chrono::seconds(flags.count("seconds") ? std::stoi(flags["seconds"]) : 5);
        if (flags.count("redis") != 0) {
            auto parsed = sched::lock::RedisServerAddress::ParseList(flags["redis"]);
            if (!parsed.ok()) throw std::runtime_error(parsed.status().ToString());
            const auto servers = *parsed;
            const StoreFactory make_store = [&]() -> std::shared_ptr<sched::lock::KeyLockStore> {
                if (servers.size() == 1) return std::make_shared<sched::lock::RedisLockStore>(servers.front());
                return std::make_shared<sched::lock::RedlockStore>(servers);
            };
            if (servers.size() == 1) {
                std::printf("backend redis (one server)\n");
            } else {
                std::printf("backend redlock (%zu servers)\n", servers.size());
            }
            for (const int clients : {1, 8}) AcquireRelease(make_store, clients, false, seconds);
            AcquireRelease(make_store, 8, true, seconds);
            return 0;
        }
        auto url = sched::db::ParseDbUrl(flags["url"]);
        if (!url.ok()) throw std::runtime_error(url.status().ToString());
        const auto idle = std::chrono::seconds(flags.count("idle-seconds") ? std::stoi(flags["idle-seconds"]) : 10);
        {
            auto db = Open(*url, 1);
            auto migrated = sched::db::Migrator(*db).Migrate();
            if (!migrated.ok()) throw std::runtime_error(migrated.status().ToString());
        }
        std::printf("backend %s\n", std::string(sched::db::BackendName(url->backend)).c_str());
        const StoreFactory make_store = [&]() -> std::shared_ptr<sched::lock::KeyLockStore> {
            return std::make_shared<sched::lock::SqlLockStore>(Open(*url, 1));
        };
        for (const int clients : {1, 8}) AcquireRelease(make_store, clients, false, seconds);
        AcquireRelease(make_store, 8, true, seconds);
        IdleCluster(*url, idle);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "lock_bench: %s\n", e.what());
        return 1;
    }
}
