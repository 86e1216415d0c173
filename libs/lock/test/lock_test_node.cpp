// A node for the multi-process lock tests (lock_cluster_test.cpp); not a product binary.
//
//   lock_test_node elector --url URL --log FILE [--tick 200ms --ttl 1s --margin 300ms] [--fenced-writes]
//       Runs a LeaseElector until SIGTERM/SIGINT, then resigns. Appends to FILE, one line each:
//         READY node=<id> pid=<pid>
//         START node=<id> epoch=<e> t_us=<CLOCK_REALTIME us when the term began>
//         STOP node=<id> epoch=<e> reason=<r> t_us=<CLOCK_REALTIME us when the term ended>
//         FENCED node=<id> epoch=<e> ok=<0|1> start_us=<..> end_us=<..> status=<..>
//         EXIT node=<id>
//       With --fenced-writes, a writer inserts (epoch, node, DB time) into lock_test_fenced every
//       20 ms through RunFenced, using the epoch of its latest term even after that term has
//       ended: it deliberately ignores the local leadership check, so only the database fence
//       can stop a stale write (at most 10 attempts per stale epoch).
//   lock_test_node counter --url URL --key K --iterations M [--no-lock] [--redis HOST:PORT[,HOST:PORT...]]
//       M times: lock K (DistributedLock, watchdog), read lock_test_counter.value, sleep 1 ms,
//       write value + 1, unlock. --no-lock skips the lock (to see the test fail without it).
//       The lock is on the database at URL, or with --redis on one Redis server
//       (RedisLockStore) or on several (RedlockStore); the counter is always in URL.
//
// All times in the log are CLOCK_REALTIME: every node runs on one machine, so they share it.

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "sched/common/node_id.hpp"
#include "sched/db/database.hpp"
#include "sched/lock/distributed_lock.hpp"
#include "sched/lock/fenced.hpp"
#include "sched/lock/lease_elector.hpp"
#include "sched/lock/redis_lock_store.hpp"
#include "sched/lock/sql_lock_store.hpp"

namespace {

using namespace std::chrono_literals;
using sched::Micros;

long long RealtimeUs() {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

long long RealtimeUsOf(std::chrono::steady_clock::time_point t) {
    return RealtimeUs() -
           std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t).count();
}

class LogFile {
  public:
    explicit LogFile(const std::string& path) : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644)) {
        if (fd_ < 0) throw std::runtime_error("cannot open " + path);
    }
    ~LogFile() { ::close(fd_); }
    // One write() per line: a kill -9 can cut the log short but never interleave two lines.
    void Line(const std::string& line) {
        std::lock_guard lock(mu_);
        const std::string l = line + "\n";
        if (::write(fd_, l.data(), l.size()) < 0) std::perror("write log");
    }

  private:
    int fd_;
    std::mutex mu_;
};

std::map<std::string, std::string> ParseFlags(int argc, char** argv) {
    std::map<std::string, std::string> flags;
    for (int i = 2; i < argc; ++i) {
        std::string a = argv[i];
        if (a.rfind("--", 0) != 0) throw std::runtime_error("unexpected argument " + a);
        a = a.substr(2);
        if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) {
            flags[a] = argv[++i];
        } else {
            flags[a] = "1";
        }
    }
    return flags;
}

std::string Need(const std::map<std::string, std::string>& f, const std::string& k) {
    auto it = f.find(k);
    if (it == f.end()) throw std::runtime_error("missing --" + k);
    return it->second;
}

Micros DurationFlag(const std::map<std::string, std::string>& f, const std::string& k, Micros fallback) {
    auto it = f.find(k);
    if (it == f.end()) return fallback;
    auto d = sched::ParseDuration(it->second);
    if (!d.ok()) throw std::runtime_error("--" + k + ": " + d.status().ToString());
    return *d;
}

std::shared_ptr<sched::db::Database> OpenDb(const sched::db::DbUrl& url) {
    auto db = sched::db::Database::OpenWithRetry(url, 10s);
    if (!db.ok()) throw std::runtime_error("open database: " + db.status().ToString());
    return *db;
}

class LoggingObserver : public sched::lock::ElectionObserver {
  public:
    LoggingObserver(LogFile& log, std::string node) : log_(log), node_(std::move(node)) {}
    void OnStartedLeading(std::int64_t epoch) override {
        latest_epoch.store(epoch);
        log_.Line("START node=" + node_ + " epoch=" + std::to_string(epoch) + " t_us=" + std::to_string(RealtimeUs()));
    }
    void OnStoppedLeading(const sched::lock::LeadershipEnd& end) override {
        log_.Line("STOP node=" + node_ + " epoch=" + std::to_string(end.epoch) +
                  " reason=" + std::string(sched::lock::StopReasonName(end.reason)) +
                  " t_us=" + std::to_string(RealtimeUsOf(end.ended_at)));
    }
    std::atomic<std::int64_t> latest_epoch{0};

  private:
    LogFile& log_;
    std::string node_;
};

int RunElector(const std::map<std::string, std::string>& flags) {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    // Blocked before any thread starts, so only sigwait below ever sees them.
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    auto url = sched::db::ParseDbUrl(Need(flags, "url"));
    if (!url.ok()) throw std::runtime_error(url.status().ToString());
    sched::lock::ElectionConfig config;
    config.tick = DurationFlag(flags, "tick", 200ms);
    config.ttl = DurationFlag(flags, "ttl", 1s);
    config.margin = DurationFlag(flags, "margin", 300ms);
    LogFile log(Need(flags, "log"));
    const std::string node = sched::MakeNodeId();

    auto election_db = OpenDb(sched::lock::ElectionDbUrl(*url, config));
    sched::lock::SqlLockStore store(election_db);
    sched::lock::LeaseElector elector(store, node, config);
    LoggingObserver observer(log, node);
    elector.AddObserver(observer);
    log.Line("READY node=" + node + " pid=" + std::to_string(::getpid()));

    std::jthread writer;
    if (flags.count("fenced-writes") != 0) {
        sched::db::DbUrl work_url = *url;
        work_url.pool = 2;
        auto work_db = OpenDb(work_url);
        writer = std::jthread([&log, &observer, node, work_db, name = config.name](const std::stop_token& stop) {
            sched::lock::Fence fence(work_db, name, node);
            std::map<std::int64_t, int> failures;
            while (!stop.stop_requested()) {
                std::this_thread::sleep_for(20ms);
                const std::int64_t epoch = observer.latest_epoch.load();
                if (epoch == 0 || failures[epoch] >= 10) continue;
                const long long start_us = RealtimeUs();
                const long long e = epoch;
                const std::string now(work_db->dialect().NowUs());
                sched::Status s = fence.RunFenced(epoch, [&](soci::session& session) {
                    session << "INSERT INTO lock_test_fenced (epoch, node, t_us) VALUES (:e, :n, " + now + ")",
                        soci::use(e), soci::use(node);
                });
                if (!s.ok()) ++failures[epoch];
                log.Line("FENCED node=" + node + " epoch=" + std::to_string(epoch) + " ok=" + (s.ok() ? "1" : "0") +
                         " start_us=" + std::to_string(start_us) + " end_us=" + std::to_string(RealtimeUs()) +
                         " status=" + std::string(sched::CodeName(s.code())) +
                         (sched::lock::IsLeaseLost(s) ? "/lease-lost" : ""));
            }
        });
    }

    std::jthread driver([&elector](const std::stop_token& stop) { elector.Run(stop); });
    int signo = 0;
    sigwait(&signals, &signo);
    driver.request_stop();
    driver.join();  // Run() resigns before it returns
    if (writer.joinable()) {
        writer.request_stop();
        writer.join();
    }
    log.Line("EXIT node=" + node);
    return 0;
}

int RunCounter(const std::map<std::string, std::string>& flags) {
    auto url = sched::db::ParseDbUrl(Need(flags, "url"));
    if (!url.ok()) throw std::runtime_error(url.status().ToString());
    url->pool = 2;
    auto db = OpenDb(*url);
    const std::string key = Need(flags, "key");
    const int iterations = std::stoi(Need(flags, "iterations"));
    const bool use_lock = flags.count("no-lock") == 0;
    std::shared_ptr<sched::lock::KeyLockStore> store;
    if (auto redis = flags.find("redis"); redis != flags.end()) {
        auto servers = sched::lock::RedisServerAddress::ParseList(redis->second);
        if (!servers.ok()) throw std::runtime_error(servers.status().ToString());
        if (servers->size() == 1) {
            store = std::make_shared<sched::lock::RedisLockStore>(servers->front());
        } else {
            store = std::make_shared<sched::lock::RedlockStore>(*servers);
        }
    } else {
        store = std::make_shared<sched::lock::SqlLockStore>(db);
    }
    sched::lock::DistributedLock locks(store);
    for (int i = 0; i < iterations;) {
        std::optional<sched::lock::LockGuard> guard;
        if (use_lock) {
            auto handle = locks.Lock(key, 5s, {});
            if (!handle.ok()) {
                std::fprintf(stderr, "lock: %s\n", handle.status().ToString().c_str());
                std::this_thread::sleep_for(10ms);
                continue;
            }
            guard.emplace(locks.Guard(std::move(*handle), 5s));
        }
        sched::Status s = db->Run([&](soci::session& session) {
            long long value = 0;
            session << "SELECT value FROM lock_test_counter WHERE id = 1", soci::into(value);
            // The gap between read and write is what a lock must protect.
            std::this_thread::sleep_for(1ms);
            session << "UPDATE lock_test_counter SET value = :v WHERE id = 1", soci::use(value + 1);
        });
        if (!s.ok()) {
            // Nothing was written (a failed statement changes nothing): do the iteration again.
            std::fprintf(stderr, "iteration %d: %s\n", i, s.ToString().c_str());
            continue;
        }
        ++i;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        if (argc < 2) throw std::runtime_error("usage: lock_test_node elector|counter --url URL ...");
        const std::string mode = argv[1];
        const auto flags = ParseFlags(argc, argv);
        if (mode == "elector") return RunElector(flags);
        if (mode == "counter") return RunCounter(flags);
        throw std::runtime_error("unknown mode " + mode);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "lock_test_node: %s\n", e.what());
        return 2;
    }
}
