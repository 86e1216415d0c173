// Multi-process tests: real lock_test_node processes on one database, killed, paused and
// stopped by PID; and the database itself going away under a running elector.
//
// Timing: the nodes run with tick 200 ms, ttl 1 s, margin 300 ms, so ten failovers fit in
// seconds. Safety (no overlap, increasing epochs, no stale fenced write) is asserted exactly;
// liveness bounds get kSlack on top of the design bound, because this runs on a busy 2-core
// machine next to MariaDB and other test binaries, where a process can wait for a CPU for
// hundreds of milliseconds. The measured latencies are printed so that regressions stay visible.

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "lock_db_fixture.hpp"
#include "sched/common/node_id.hpp"
#include "sched/common/testing/child_process.hpp"
#include "sched/common/testing/private_mariadb.hpp"
#include "sched/common/testing/wait_for.hpp"
#include "sched/db/migrator.hpp"
#include "sched/lock/lease_elector.hpp"

namespace sched::lock {
namespace {

using namespace std::chrono_literals;
using sched::testing::ChildProcess;
using sched::testing::OutputFile;
using sched::testing::PrivateMariaDb;
using sched::testing::WaitFor;
using testing::LockDbTest;

constexpr auto kTick = 200ms;
constexpr auto kTtl = 1000ms;
constexpr auto kMargin = 300ms;
constexpr auto kSlack = 1000ms;

long long RealtimeUs() {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

long long Us(std::chrono::microseconds d) {
    return d.count();
}

struct LogLine {
    std::string kind;
    std::map<std::string, std::string> kv;
    long long Num(const std::string& k) const {
        auto it = kv.find(k);
        return it == kv.end() ? -1 : std::stoll(it->second);
    }
    std::string Str(const std::string& k) const {
        auto it = kv.find(k);
        return it == kv.end() ? "" : it->second;
    }
};

std::vector<LogLine> ReadLog(const std::filesystem::path& path) {
    std::vector<LogLine> lines;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
        std::istringstream words(line);
        LogLine l;
        words >> l.kind;
        for (std::string w; words >> w;) {
            const auto eq = w.find('=');
            if (eq != std::string::npos) l.kv[w.substr(0, eq)] = w.substr(eq + 1);
        }
        lines.push_back(std::move(l));
    }
    return lines;
}

struct Node {
    std::filesystem::path log;
    std::unique_ptr<ChildProcess> process;
    std::string id;
};

struct Term {
    std::string node;
    long long epoch = 0;
    long long start_us = 0;
    long long end_us = 0;
};

struct TimedRecorder : ElectionObserver {
    void OnStoppedLeading(const LeadershipEnd& end) override {
        std::lock_guard lock(mu);
        ends.emplace_back(end, std::chrono::steady_clock::now());
    }
    std::optional<std::pair<LeadershipEnd, std::chrono::steady_clock::time_point>> First() {
        std::lock_guard lock(mu);
        if (ends.empty()) return std::nullopt;
        return ends.front();
    }
    std::mutex mu;
    std::vector<std::pair<LeadershipEnd, std::chrono::steady_clock::time_point>> ends;
};

class LockClusterTest : public LockDbTest {
  protected:
    void SetUpDatabase() override {
        dir_ = std::filesystem::temp_directory_path() / ("lock-cluster-" + RandomHex(8));
        std::filesystem::create_directories(dir_);
    }

    void TearDown() override {
        nodes_.clear();  // SIGKILL + waitpid for any process still running
        if (!dir_.empty()) {
            if (HasFailure()) {
                std::cerr << "node logs kept in " << dir_ << "\n";
            } else {
                std::error_code ec;
                std::filesystem::remove_all(dir_, ec);
            }
        }
        LockDbTest::TearDown();
    }

    void CreateFencedTable() {
        const std::string ddl =
            IsMySql() ? "CREATE TABLE lock_test_fenced (id BIGINT AUTO_INCREMENT PRIMARY KEY, epoch BIGINT NOT NULL, "
                        "node VARCHAR(191) NOT NULL, t_us BIGINT NOT NULL)"
                      : "CREATE TABLE lock_test_fenced (id INTEGER PRIMARY KEY AUTOINCREMENT, epoch INTEGER NOT NULL, "
                        "node TEXT NOT NULL, t_us INTEGER NOT NULL)";
        ASSERT_TRUE(db().Run([&](soci::session& s) { s << ddl; }).ok());
    }

    Node& StartElector(bool fenced_writes) {
        auto node = std::make_unique<Node>();
        const int n = started_++;
        node->log = dir_ / ("node-" + std::to_string(n) + ".log");
        std::vector<std::string> argv = {SCHED_LOCK_TEST_NODE,
                                         "elector",
                                         "--url",
                                         test_db().url().ToString(),
                                         "--log",
                                         node->log.string(),
                                         "--tick",
                                         "200ms",
                                         "--ttl",
                                         "1s",
                                         "--margin",
                                         "300ms"};
        if (fenced_writes) argv.push_back("--fenced-writes");
        node->process =
            std::make_unique<ChildProcess>(argv, OutputFile{(dir_ / ("node-" + std::to_string(n) + ".out")).string()});
        Node& ref = *node;
        nodes_.push_back(std::move(node));
        const bool ready = WaitFor(
            [&] {
                for (const auto& l : ReadLog(ref.log)) {
                    if (l.kind == "READY") ref.id = l.Str("node");
                }
                return !ref.id.empty() || !ref.process->Running();
            },
            15s);
        EXPECT_TRUE(ready && !ref.id.empty()) << "node " << n << " did not start; see " << dir_;
        return ref;
    }

    Node* FindLive(const std::string& id) {
        for (auto& n : nodes_) {
            if (n->id == id && n->process->Running()) return n.get();
        }
        return nullptr;
    }

    std::optional<LockRow> MasterRow() {
        auto row = store_->Read("master");
        if (!row.ok() || !row->has_value()) return std::nullopt;
        return **row;
    }

    static bool Logged(const Node& n, const std::string& kind, long long epoch) {
        for (const auto& l : ReadLog(n.log)) {
            if (l.kind == kind && l.Num("epoch") == epoch) return true;
        }
        return false;
    }

    /// Waits until `n` has logged a fenced write of term `epoch` that committed.
    static bool WaitForFencedWrite(const Node& n, long long epoch) {
        return WaitFor(
            [&] {
                for (const auto& l : ReadLog(n.log)) {
                    if (l.kind == "FENCED" && l.Num("epoch") == epoch && l.Str("ok") == "1") return true;
                }
                return false;
            },
            5s);
    }

    /// Waits until a live node holds a live lease and has logged the START of that term.
    Node* WaitForLeader(std::chrono::milliseconds timeout, const std::string& not_this = "") {
        Node* leader = nullptr;
        WaitFor(
            [&] {
                auto row = MasterRow();
                if (!row || row->Available() || !row->owner || *row->owner == not_this) return false;
                Node* n = FindLive(*row->owner);
                if (n == nullptr || !Logged(*n, "START", row->epoch)) return false;
                leader = n;
                return true;
            },
            timeout);
        return leader;
    }

    /// Every term from every log; a term without STOP ends at its node's kill time.
    std::vector<Term> Terms(const std::map<std::string, long long>& killed_at_us) {
        std::vector<Term> terms;
        for (const auto& n : nodes_) {
            std::map<long long, Term> by_epoch;
            for (const auto& l : ReadLog(n->log)) {
                if (l.kind == "START") {
                    by_epoch[l.Num("epoch")] = Term{n->id, l.Num("epoch"), l.Num("t_us"), -1};
                } else if (l.kind == "STOP") {
                    by_epoch[l.Num("epoch")].end_us = l.Num("t_us");
                }
            }
            for (auto& [epoch, t] : by_epoch) {
                if (t.end_us < 0) {
                    auto k = killed_at_us.find(n->id);
                    EXPECT_NE(k, killed_at_us.end())
                        << n->id << " epoch " << epoch << " never ended and was not killed";
                    if (k != killed_at_us.end()) t.end_us = k->second;
                }
                terms.push_back(t);
            }
        }
        std::sort(terms.begin(), terms.end(), [](const Term& a, const Term& b) { return a.start_us < b.start_us; });
        return terms;
    }

    static void ExpectNoOverlapAndIncreasingEpochs(const std::vector<Term>& terms) {
        for (std::size_t i = 1; i < terms.size(); ++i) {
            const Term& prev = terms[i - 1];
            const Term& next = terms[i];
            EXPECT_LE(prev.end_us, next.start_us)
                << "terms overlap: " << prev.node << " epoch " << prev.epoch << " ended " << prev.end_us << ", "
                << next.node << " epoch " << next.epoch << " started " << next.start_us;
            EXPECT_LT(prev.epoch, next.epoch) << "epochs out of order at term " << i;
        }
    }

    /// Fenced rows in commit order: epochs never go back, and each epoch belongs to one node.
    void ExpectFencedRowsInEpochOrder() {
        auto rows = db().Run([](soci::session& s) {
            std::vector<std::pair<long long, std::string>> out;
            long long epoch = 0;
            std::string node;
            soci::statement st = (s.prepare << "SELECT epoch, node FROM lock_test_fenced ORDER BY id",
                                  soci::into(epoch), soci::into(node));
            st.execute(false);
            while (st.fetch()) out.emplace_back(epoch, node);
            return out;
        });
        ASSERT_TRUE(rows.ok()) << rows.status().ToString();
        EXPECT_FALSE(rows->empty());
        std::map<long long, std::string> owner_of;
        long long last = 0;
        for (const auto& [epoch, node] : *rows) {
            EXPECT_GE(epoch, last) << "a fenced write of epoch " << epoch << " landed after one of epoch " << last;
            last = std::max(last, epoch);
            auto [it, inserted] = owner_of.emplace(epoch, node);
            EXPECT_EQ(it->second, node) << "epoch " << epoch << " written by two nodes";
        }
    }

    std::filesystem::path dir_;
    std::vector<std::unique_ptr<Node>> nodes_;
    std::unique_ptr<SqlLockStore> store_;
    int started_ = 0;
};

TEST_P(LockClusterTest, CounterUnderDistributedLockAcrossProcessesIsExact) {
    ASSERT_TRUE(CreateCounter("lock_test_counter", "value", "BIGINT NOT NULL").ok());
    constexpr int kProcesses = 4;
    constexpr int kIterations = 40;
    std::vector<std::unique_ptr<ChildProcess>> procs;
    for (int i = 0; i < kProcesses; ++i) {
        procs.push_back(std::make_unique<ChildProcess>(
            std::vector<std::string>{SCHED_LOCK_TEST_NODE, "counter", "--url", test_db().url().ToString(), "--key",
                                     "counter", "--iterations", std::to_string(kIterations)},
            OutputFile{(dir_ / ("counter-" + std::to_string(i) + ".out")).string()}));
    }
    for (auto& p : procs) EXPECT_EQ(p->WaitForExit(90s), 0);
    auto v = SelectValue<long long>("SELECT value FROM lock_test_counter WHERE id = 1");
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_EQ(*v, kProcesses * kIterations);
}

TEST_P(LockClusterTest, ElectionHistoryUnderRepeatedKillsHasNoOverlapAndIncreasingEpochs) {
    store_ = std::make_unique<SqlLockStore>(Pool(1));
    CreateFencedTable();
    constexpr int kNodes = 5;
    constexpr int kRounds = 13;  // 10 kill -9 and 3 graceful stops
    for (int i = 0; i < kNodes; ++i) StartElector(true);
    ASSERT_FALSE(HasFailure());

    struct Stop {
        bool graceful;
        std::string node;
        long long epoch;
        long long at_us;
    };
    std::vector<Stop> stops;
    std::map<std::string, long long> killed_at_us;
    for (int round = 0; round < kRounds; ++round) {
        Node* leader = WaitForLeader(kTtl + kTick + 10s);
        ASSERT_NE(leader, nullptr) << "no leader before round " << round;
        const bool graceful = round % 4 == 3;
        const long long epoch = MasterRow()->epoch;
        const long long at_us = RealtimeUs();
        if (graceful) {
            leader->process->Signal(SIGTERM);
            ASSERT_EQ(leader->process->WaitForExit(10s), 0) << "graceful stop failed";
        } else {
            leader->process->Signal(SIGKILL);
            ASSERT_TRUE(leader->process->WaitForExit(10s).has_value());
            killed_at_us[leader->id] = RealtimeUs();  // the process cannot act after this
        }
        stops.push_back({graceful, leader->id, epoch, at_us});
        StartElector(true);  // keep five nodes
        ASSERT_FALSE(HasFailure());
    }
    ASSERT_NE(WaitForLeader(kTtl + kTick + 10s), nullptr);
    for (auto& n : nodes_) {
        if (n->process->Running()) n->process->Signal(SIGTERM);
    }
    for (auto& n : nodes_) EXPECT_TRUE(n->process->WaitForExit(10s).has_value());

    const std::vector<Term> terms = Terms(killed_at_us);
    ExpectNoOverlapAndIncreasingEpochs(terms);
    ExpectFencedRowsInEpochOrder();

    int kills = 0;
    for (const Stop& stop : stops) {
        auto next = std::find_if(terms.begin(), terms.end(), [&](const Term& t) { return t.epoch > stop.epoch; });
        ASSERT_NE(next, terms.end()) << "no term after stopping epoch " << stop.epoch;
        const long long latency_us = next->start_us - stop.at_us;
        std::cout << (stop.graceful ? "graceful stop" : "kill -9") << " of epoch " << stop.epoch << ": epoch "
                  << next->epoch << " leads after " << latency_us / 1000 << " ms\n";
        if (stop.graceful) {
            EXPECT_LE(latency_us, Us(kTick + kSlack));
            EXPECT_EQ(next->epoch, stop.epoch + 2) << "handed over by expiry, not by release";
        } else {
            ++kills;
            EXPECT_LE(latency_us, Us(kTtl + kTick + kSlack));
        }
    }
    EXPECT_GE(kills, 10);
}

TEST_P(LockClusterTest, PausedLeaderCannotWriteAfterTakeoverAndDemotesWhenResumed) {
    if (!IsMySql()) {
        GTEST_SKIP() << "SQLite: a writer paused inside a transaction holds the file's write lock, and no server "
                        "can abort it, so a take-over must wait until it resumes (documented in docs/locks.md)";
    }
    store_ = std::make_unique<SqlLockStore>(Pool(1));
    CreateFencedTable();
    for (int i = 0; i < 3; ++i) StartElector(true);
    ASSERT_FALSE(HasFailure());
    Node* a = WaitForLeader(10s);
    ASSERT_NE(a, nullptr);
    const long long epoch_a = MasterRow()->epoch;
    ASSERT_TRUE(WaitForFencedWrite(*a, epoch_a));

    const auto paused = std::chrono::steady_clock::now();
    a->process->Signal(SIGSTOP);
    // Take-over: at the lease's end, or - if a was paused inside a fenced transaction - once
    // MariaDB has aborted that idle transaction (idle_transaction_timeout 1 s).
    Node* b = WaitForLeader(kTtl + kTick + 1s + kSlack + 5s, a->id);
    ASSERT_NE(b, nullptr) << "no take-over while the leader was paused";
    const long long epoch_b = MasterRow()->epoch;
    EXPECT_GT(epoch_b, epoch_a);
    ASSERT_TRUE(WaitForFencedWrite(*b, epoch_b));
    // Keep a paused for longer than the TTL in total (usually already the case).
    while (std::chrono::steady_clock::now() - paused < kTtl + 500ms) std::this_thread::sleep_for(20ms);

    const long long resumed_us = RealtimeUs();
    a->process->Signal(SIGCONT);
    // a notices: its term ended (STOP) and its writer's stale-epoch attempts are refused.
    ASSERT_TRUE(WaitFor(
        [&] {
            bool stopped = false;
            bool refused = false;
            for (const auto& l : ReadLog(a->log)) {
                if (l.kind == "STOP" && l.Num("epoch") == epoch_a) stopped = true;
                if (l.kind == "FENCED" && l.Num("epoch") == epoch_a && l.Str("status") == "aborted/lease-lost") {
                    refused = true;
                }
            }
            return stopped && refused;
        },
        10s))
        << "see " << a->log;
    for (const auto& l : ReadLog(a->log)) {
        if (l.kind == "FENCED" && l.Num("epoch") == epoch_a && l.Num("start_us") > resumed_us) {
            EXPECT_EQ(l.Str("ok"), "0") << "a stale fenced write succeeded after the pause";
        }
        if (l.kind == "STOP" && l.Num("epoch") == epoch_a) {
            // The deadline passed during the pause: a had stopped leading before b started.
            EXPECT_EQ(l.Str("reason"), "self-demoted");
        }
    }
    for (auto& n : nodes_) {
        if (n->process->Running()) n->process->Signal(SIGTERM);
    }
    for (auto& n : nodes_) EXPECT_TRUE(n->process->WaitForExit(10s).has_value());
    ExpectNoOverlapAndIncreasingEpochs(Terms({}));
    ExpectFencedRowsInEpochOrder();
}

TEST_P(LockClusterTest, DatabaseDownDemotesTheLeaderOnTimeAndLeadershipResumesAfterwards) {
    // MariaDB: a private server, really stopped (SIGTERM by PID) and started again. SQLite has no
    // server to stop: another connection holds the file's write lock, so every write fails busy.
    std::unique_ptr<PrivateMariaDb> server;
    db::DbUrl url = test_db().url();
    if (IsMySql()) {
        std::string why;
        server = PrivateMariaDb::Start(std::string(SCHED_SOURCE_DIR) + "/scripts/mariadb.sh", "127.0.0.1", &why);
        ASSERT_TRUE(server) << "could not start a private MariaDB: " << why;
        auto parsed = db::ParseDbUrl(server->url());
        ASSERT_TRUE(parsed.ok());
        url = *parsed;
        auto admin = db::Database::Open(url);
        ASSERT_TRUE(admin.ok()) << admin.status().ToString();
        ASSERT_TRUE(db::Migrator(**admin).Migrate().ok());
    }
    ElectionConfig config;
    config.tick = kTick;
    config.ttl = kTtl;
    config.margin = kMargin;
    SqlLockStore store(PoolWith(ElectionDbUrl(url, config)));
    LeaseElector elector(store, "solo", config);
    TimedRecorder recorder;
    elector.AddObserver(recorder);
    std::jthread driver([&](const std::stop_token& stop) { elector.Run(stop); });
    ASSERT_TRUE(WaitFor([&] { return elector.IsLeading(); }, 10s));
    const std::int64_t first_epoch = elector.CurrentLeadership()->epoch;

    std::shared_ptr<db::Database> blocker_db;  // declared first: outlives its session
    std::optional<db::PooledSession> blocker;
    if (IsMySql()) {
        server->Stop();
    } else {
        blocker_db = Pool(1);
        auto session = blocker_db->Acquire();
        ASSERT_TRUE(session.ok());
        blocker.emplace(std::move(*session));
        **blocker << "BEGIN IMMEDIATE";
    }
    const auto down = std::chrono::steady_clock::now();  // no renew can succeed from here on

    ASSERT_TRUE(WaitFor([&] { return !elector.IsLeading(); }, kTtl + kSlack));
    if (blocker) {
        // At the moment the leader stopped, the database still held its lease: nobody else
        // could have started leading before it stopped.
        long long lease_until = 0;
        long long now = 0;
        **blocker << "SELECT lease_until_us, " + std::string(blocker_db->dialect().NowUs()) +
                         " FROM scheduler_lock WHERE namespace = 'master'",
            soci::into(lease_until), soci::into(now);
        EXPECT_GT(lease_until, now);
    }
    ASSERT_TRUE(WaitFor([&] { return recorder.First().has_value(); }, kSlack));
    const auto [end, notified] = *recorder.First();
    EXPECT_EQ(end.reason, StopReason::kSelfDemoted) << end.detail;
    EXPECT_EQ(end.epoch, first_epoch);
    // On time: the last renew that could have succeeded started before `down`.
    EXPECT_LE(end.ended_at, down + kTtl - kMargin);
    EXPECT_LT(notified - end.ended_at, kSlack);  // and the observers heard about it promptly
    EXPECT_EQ(elector.Counters().self_demotions, 1u);
    EXPECT_GE(elector.Counters().renew_failures, 1u);

    while (std::chrono::steady_clock::now() - down < 2s) std::this_thread::sleep_for(20ms);  // down for 2 s
    if (IsMySql()) {
        ASSERT_TRUE(server->Restart()) << "MariaDB did not come back";
        ASSERT_TRUE(WaitFor([&] { return db::Database::Open(url).ok(); }, 60s));
    } else {
        **blocker << "ROLLBACK";
        blocker.reset();
    }
    ASSERT_TRUE(WaitFor([&] { return elector.IsLeading(); }, kTtl + kTick + kSlack + 5s));
    EXPECT_GT(elector.CurrentLeadership()->epoch, first_epoch);
    driver.request_stop();
}

SCHED_DB_TEST_SUITE(LockClusterTest);

}  // namespace
}  // namespace sched::lock
