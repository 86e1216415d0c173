// RedisLockStore and RedlockStore against real redis-server processes (RedisServer: free
// loopback ports, no persistence, stopped by PID), on their own and under DistributedLock; and
// the multi-process counter with lock_test_node.

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "sched/common/testing/child_process.hpp"
#include "sched/common/testing/wait_for.hpp"
#include "sched/db/database.hpp"
#include "sched/lock/distributed_lock.hpp"
#include "sched/lock/redis_lock_store.hpp"
#include "sched/lock/testing/redis_server.hpp"

namespace sched::lock {
namespace {

using namespace std::chrono_literals;
using sched::testing::ChildProcess;
using sched::testing::OutputFile;
using sched::testing::WaitFor;
using testing::RedisServer;

std::string HeldKey(const std::string& lock_key) {
    return "sched:held:lock:" + lock_key;
}

std::vector<RedisServerAddress> Addresses(const std::vector<std::unique_ptr<RedisServer>>& servers) {
    std::vector<RedisServerAddress> out;
    for (const auto& s : servers) out.push_back(s->address());
    return out;
}

std::vector<std::unique_ptr<RedisServer>> StartServers(int n) {
    std::vector<std::unique_ptr<RedisServer>> out;
    for (int i = 0; i < n; ++i) out.push_back(std::make_unique<RedisServer>());
    return out;
}

// ---- one server: the store's contract ----

TEST(RedisLockStore, AcquireIsExclusiveReleaseIsOwnerCheckedAndEpochsIncrease) {
    RedisServer redis;
    RedisLockStore store(redis.address());
    EXPECT_TRUE(store.fenced());

    auto a = store.AcquireLock("lock:a", "owner-1", 5s, nullptr);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ASSERT_TRUE(a->has_value());
    EXPECT_EQ((*a)->epoch, 1);
    EXPECT_EQ(redis.Command({"GET", HeldKey("a")}), "1 owner-1");
    const long long pttl = std::stoll(redis.Command({"PTTL", HeldKey("a")}));
    EXPECT_GT(pttl, 4000);
    EXPECT_LE(pttl, 5000);

    std::optional<LockRow> seen;
    auto b = store.AcquireLock("lock:a", "owner-2", 5s, &seen);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_FALSE(b->has_value());
    ASSERT_TRUE(seen.has_value());
    EXPECT_EQ(seen->owner, "owner-1");
    EXPECT_FALSE(seen->Available());
    EXPECT_GT(seen->lease_until_us - seen->db_now_us, 4'000'000);

    // Not owner-2's (nor owner-1's at another epoch): nothing changes.
    EXPECT_FALSE(*store.ReleaseLock("lock:a", Holding{0, 1}, "owner-2"));
    EXPECT_FALSE(*store.ReleaseLock("lock:a", Holding{0, 7}, "owner-1"));
    EXPECT_FALSE(*store.RenewLock("lock:a", Holding{0, 1}, "owner-2", 5s));
    EXPECT_EQ(redis.Command({"GET", HeldKey("a")}), "1 owner-1");

    EXPECT_TRUE(*store.RenewLock("lock:a", Holding{0, 1}, "owner-1", 9s));
    EXPECT_GT(std::stoll(redis.Command({"PTTL", HeldKey("a")})), 8000);
    EXPECT_TRUE(*store.ReleaseLock("lock:a", Holding{0, 1}, "owner-1"));
    EXPECT_EQ(redis.Command({"GET", HeldKey("a")}), "(nil)");
    EXPECT_FALSE(*store.ReleaseLock("lock:a", Holding{0, 1}, "owner-1"));  // twice: not ours any more
    // The release moved the epoch on, as the SQL release does: nobody is at epoch 1 any more.
    auto after = store.InspectLock("lock:a");
    ASSERT_TRUE(after.ok() && after->has_value()) << after.status().ToString();
    EXPECT_EQ((*after)->epoch, 2);
    EXPECT_FALSE((*after)->owner);

    auto c = store.AcquireLock("lock:a", "owner-2", 5s, nullptr);
    ASSERT_TRUE(c.ok() && c->has_value());
    EXPECT_EQ((*c)->epoch, 3);
    EXPECT_GT(store.commands(), 0u);
}

TEST(RedisLockStore, RetryWithTheSameOwnerFindsItsOwnAcquisition) {
    RedisServer redis;
    RedisLockStore store(redis.address());
    auto first = store.AcquireLock("lock:r", "owner-1", 5s, nullptr);
    ASSERT_TRUE(first.ok() && first->has_value());
    // As if the first reply had been lost and DistributedLock tried again with the same owner.
    auto again = store.AcquireLock("lock:r", "owner-1", 5s, nullptr);
    ASSERT_TRUE(again.ok() && again->has_value());
    EXPECT_EQ((*again)->epoch, (*first)->epoch);
}

TEST(RedisLockStore, BadArgumentsAreRejected) {
    RedisServer redis;
    RedisLockStore store(redis.address());
    EXPECT_EQ(store.AcquireLock("", "o", 1s, nullptr).status().code(), Code::kInvalidArgument);
    EXPECT_EQ(store.AcquireLock(std::string(kMaxLockNameLength + 1, 'x'), "o", 1s, nullptr).status().code(),
              Code::kInvalidArgument);
    EXPECT_EQ(store.AcquireLock("lock:x", "o", 0s, nullptr).status().code(), Code::kInvalidArgument);
}

// The grammar is HostPort's (sched/common/host_port_test.cpp); a Redis server also needs a port.
TEST(RedisServerAddress, IsAHostPortWithAPortAndSaysWhichServerIsWrong) {
    auto v6 = RedisServerAddress::Parse("[::1]:7000");
    ASSERT_TRUE(v6.ok());
    EXPECT_EQ(v6->host, "::1");
    EXPECT_EQ(v6->port, 7000);
    EXPECT_EQ(v6->ToString(), "[::1]:7000");
    for (const char* bad : {"h:0", "h:1;h:2", "[h]:1"}) {
        const auto refused = RedisServerAddress::Parse(bad);
        EXPECT_EQ(refused.status().code(), Code::kInvalidArgument) << bad;
        EXPECT_NE(refused.status().message().find("redis server \"" + std::string(bad) + "\""), std::string::npos)
            << refused.status().message();
    }
}

TEST(RedisServerAddress, ParsesACommaSeparatedListAndNamesTheBadEntry) {
    auto three = RedisServerAddress::ParseList("127.0.0.1:7001,[::1]:7002,redis-3:7003");
    ASSERT_TRUE(three.ok()) << three.status().ToString();
    ASSERT_EQ(three->size(), 3u);
    EXPECT_EQ((*three)[1].ToString(), "[::1]:7002");
    EXPECT_EQ((*three)[2].host, "redis-3");
    for (const char* bad : {"", "h:1,", ",h:1", "h:1,h:0", "h:1,,h:2"}) {
        EXPECT_EQ(RedisServerAddress::ParseList(bad).status().code(), Code::kInvalidArgument) << bad;
    }
}

// ---- one server under DistributedLock ----

// Two nodes' DistributedLocks on one private redis-server.
class RedisDistributedLockTwoNodes : public ::testing::Test {
  protected:
    RedisServer redis;
    DistributedLock a{std::make_shared<RedisLockStore>(redis.address()), "node-a"};
    DistributedLock b{std::make_shared<RedisLockStore>(redis.address()), "node-b"};
};

TEST_F(RedisDistributedLockTwoNodes, StaleUnlockAndExtendNeverTouchTheNextOwner) {
    auto ha = a.TryLock("job", 0s, 200ms);
    ASSERT_TRUE(ha.ok() && ha->has_value()) << ha.status().ToString();
    auto blocked = b.TryLock("job", 0s, 5s);
    ASSERT_TRUE(blocked.ok());
    EXPECT_FALSE(blocked->has_value());

    std::this_thread::sleep_for(300ms);  // A's lease runs out (A is "paused")
    auto hb = b.TryLock("job", 0s, 5s);
    ASSERT_TRUE(hb.ok() && hb->has_value()) << hb.status().ToString();
    EXPECT_GT((*hb)->epoch, (*ha)->epoch);
    const std::string b_value = std::to_string((*hb)->epoch) + " " + (*hb)->owner;
    EXPECT_EQ(redis.Command({"GET", HeldKey("job")}), b_value);

    Status unlock = a.Unlock(**ha);
    EXPECT_TRUE(IsLeaseLost(unlock)) << unlock.ToString();
    Status extend = a.Extend(**ha, 5s);
    EXPECT_TRUE(IsLeaseLost(extend)) << extend.ToString();

    // B still holds it, untouched.
    EXPECT_EQ(redis.Command({"GET", HeldKey("job")}), b_value);
    EXPECT_TRUE(b.Extend(**hb, 5s).ok());
    auto third = a.TryLock("job", 0s, 5s);
    ASSERT_TRUE(third.ok());
    EXPECT_FALSE(third->has_value());
    EXPECT_TRUE(b.Unlock(**hb).ok());
}

TEST_F(RedisDistributedLockTwoNodes, WaiterGetsTheLockWhenTheHolderUnlocks) {
    auto ha = a.TryLock("w", 0s, 10s);
    ASSERT_TRUE(ha.ok() && ha->has_value());
    std::thread releaser([&] {
        std::this_thread::sleep_for(200ms);
        EXPECT_TRUE(a.Unlock(**ha).ok());
    });
    const auto t0 = std::chrono::steady_clock::now();
    auto hb = b.TryLock("w", 5s, 10s);
    releaser.join();
    ASSERT_TRUE(hb.ok() && hb->has_value()) << hb.status().ToString();
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 150ms);
}

TEST_F(RedisDistributedLockTwoNodes, WatchdogKeepsTheLockPastSeveralLeasesAndReportsItsLoss) {
    auto h = a.TryLock("wd", 0s, 300ms);
    ASSERT_TRUE(h.ok() && h->has_value());
    LockGuard guard = a.Guard(std::move(**h), 300ms);
    std::this_thread::sleep_for(1200ms);  // four leases
    EXPECT_TRUE(guard.Held());
    auto other = b.TryLock("wd", 0s, 5s);
    ASSERT_TRUE(other.ok());
    EXPECT_FALSE(other->has_value()) << "the watchdog did not keep the lock alive";
    EXPECT_FALSE(guard.LostToken().stop_requested());

    // Someone else's value replaces ours (as if it had expired and been taken): the next renewal
    // finds it gone and the guard says so.
    ASSERT_EQ(redis.Command({"SET", HeldKey("wd"), "99 intruder", "PX", "10000"}), "OK");
    EXPECT_TRUE(WaitFor([&] { return guard.LostToken().stop_requested(); }, 2s));
    EXPECT_FALSE(guard.Held());
    EXPECT_TRUE(IsLeaseLost(guard.Unlock()));
    EXPECT_EQ(redis.Command({"GET", HeldKey("wd")}), "99 intruder");
}

TEST(RedisDistributedLock, DeadServerIsAnErrorValueAndTheLockWorksAgainWhenItIsBack) {
    RedisServer redis;
    DistributedLock locks(std::make_shared<RedisLockStore>(redis.address()), "node-a");
    auto held = locks.TryLock("d", 0s, 5s);
    ASSERT_TRUE(held.ok() && held->has_value());

    redis.Kill();
    const auto t0 = std::chrono::steady_clock::now();
    auto h = locks.TryLock("d2", 300ms, 5s);
    EXPECT_FALSE(h.ok());
    EXPECT_EQ(h.status().code(), Code::kUnavailable) << h.status().ToString();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
    Status extend = locks.Extend(**held, 5s);
    EXPECT_FALSE(extend.ok());
    EXPECT_FALSE(IsLeaseLost(extend)) << "an unreachable server must not read as a lost lease";
    EXPECT_EQ(locks.Unlock(**held).code(), Code::kUnavailable);

    redis.Start();  // same port, empty data
    auto again = locks.TryLock("d2", 5s, 5s);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_TRUE(again->has_value());
    EXPECT_TRUE(IsLeaseLost(locks.Extend(**held, 5s)));  // the restart forgot it
}

TEST(RedisDistributedLock, PasswordAndDatabaseIndex) {
    RedisServer redis(RedisServer::Options{"s3cret"});
    RedisOptions wrong;
    DistributedLock anonymous(std::make_shared<RedisLockStore>(redis.address(), wrong), "node-a");
    auto refused = anonymous.TryLock("p", 2s, 5s);
    EXPECT_EQ(refused.status().code(), Code::kUnauthenticated) << refused.status().ToString();

    RedisOptions options;
    options.password = "s3cret";
    options.db = 3;
    options.key_prefix = "app:";
    DistributedLock locks(std::make_shared<RedisLockStore>(redis.address(), options), "node-b");
    auto h = locks.TryLock("p", 0s, 5s);
    ASSERT_TRUE(h.ok() && h->has_value()) << h.status().ToString();
    EXPECT_EQ(redis.Command({"EXISTS", "app:held:lock:p"}), "0");  // not in db 0
    EXPECT_EQ(
        redis.Command({"EVAL", "redis.call('SELECT', 3) return redis.call('GET', KEYS[1])", "1", "app:held:lock:p"}),
        std::to_string((*h)->epoch) + " " + (*h)->owner);
}

// ---- Redlock ----

TEST(Redlock, MajorityHoldsTheLockWithEpochZeroAndTheDriftAllowance) {
    auto servers = StartServers(3);
    auto store = std::make_shared<RedlockStore>(Addresses(servers));
    EXPECT_FALSE(store->fenced());
    EXPECT_EQ(store->quorum(), 2u);
    EXPECT_EQ(store->DriftAllowance(10s), 102ms);
    DistributedLock a(store, "node-a");
    DistributedLock b(std::make_shared<RedlockStore>(Addresses(servers)), "node-b");
    EXPECT_FALSE(a.fenced());

    const auto before = std::chrono::steady_clock::now();
    auto h = a.TryLock("r", 0s, 10s);
    ASSERT_TRUE(h.ok() && h->has_value()) << h.status().ToString();
    EXPECT_EQ((*h)->epoch, 0);
    EXPECT_LE((*h)->valid_until, std::chrono::steady_clock::now() + 10s - 102ms);
    EXPECT_GE((*h)->valid_until, before + 10s - 102ms);
    for (auto& s : servers) EXPECT_EQ(s->Command({"GET", HeldKey("r")}), "0 " + (*h)->owner);

    auto blocked = b.TryLock("r", 0s, 10s);
    ASSERT_TRUE(blocked.ok());
    EXPECT_FALSE(blocked->has_value());
    EXPECT_TRUE(a.Extend(**h, 10s).ok());
    EXPECT_TRUE(a.Unlock(**h).ok());
    for (auto& s : servers) EXPECT_EQ(s->Command({"GET", HeldKey("r")}), "(nil)");
    auto now_b = b.TryLock("r", 0s, 10s);
    ASSERT_TRUE(now_b.ok() && now_b->has_value());
}

TEST(Redlock, FailedAcquisitionIsReleasedOnEveryServer) {
    auto servers = StartServers(3);
    // Another client holds the lock on two of the three servers.
    ASSERT_EQ(servers[0]->Command({"SET", HeldKey("f"), "0 other", "PX", "10000"}), "OK");
    ASSERT_EQ(servers[2]->Command({"SET", HeldKey("f"), "0 other", "PX", "10000"}), "OK");
    auto store = std::make_shared<RedlockStore>(Addresses(servers));
    std::optional<LockRow> seen;
    auto r = store->AcquireLock("lock:f", "me", 10s, &seen);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_FALSE(r->has_value());
    ASSERT_TRUE(seen.has_value());
    EXPECT_EQ(seen->owner, "other");
    // The middle server accepted us, and was given back at once.
    EXPECT_EQ(servers[1]->Command({"GET", HeldKey("f")}), "(nil)");
    EXPECT_EQ(servers[0]->Command({"GET", HeldKey("f")}), "0 other");
}

TEST(Redlock, OneOfThreeServersDownStillLocksAMajorityDownRefuses) {
    auto servers = StartServers(3);
    DistributedLock a(std::make_shared<RedlockStore>(Addresses(servers)), "node-a");
    DistributedLock b(std::make_shared<RedlockStore>(Addresses(servers)), "node-b");

    servers[1]->Kill();
    auto h = a.TryLock("m", 0s, 10s);
    ASSERT_TRUE(h.ok() && h->has_value()) << h.status().ToString();
    auto blocked = b.TryLock("m", 0s, 10s);
    ASSERT_TRUE(blocked.ok()) << blocked.status().ToString();
    EXPECT_FALSE(blocked->has_value());
    EXPECT_TRUE(a.Extend(**h, 10s).ok());
    EXPECT_TRUE(a.Unlock(**h).ok());

    servers[2]->Kill();  // two of three down: no majority
    for (int i = 0; i < 3; ++i) {
        auto refused = a.TryLock("m", 200ms, 10s);
        ASSERT_FALSE(refused.ok()) << "acquired a lock with only one of three servers";
        EXPECT_EQ(refused.status().code(), Code::kUnavailable) << refused.status().ToString();
    }
    EXPECT_EQ(servers[0]->Command({"GET", HeldKey("m")}), "(nil)") << "the refused attempts must not leave a key";

    servers[1]->Start();
    servers[2]->Start();
    auto back = a.TryLock("m", 5s, 10s);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_TRUE(back->has_value());
}

TEST(Redlock, ExtendNeedsAMajority) {
    auto servers = StartServers(3);
    DistributedLock a(std::make_shared<RedlockStore>(Addresses(servers)), "node-a");
    auto h = a.TryLock("e", 0s, 10s);
    ASSERT_TRUE(h.ok() && h->has_value());
    // Gone on two servers (expired there, or those servers restarted empty).
    ASSERT_EQ(servers[0]->Command({"DEL", HeldKey("e")}), "1");
    ASSERT_EQ(servers[1]->Command({"DEL", HeldKey("e")}), "1");
    EXPECT_TRUE(IsLeaseLost(a.Extend(**h, 10s)));
    EXPECT_TRUE(a.Unlock(**h).ok());  // still ours on the third server: released there
    EXPECT_EQ(servers[2]->Command({"GET", HeldKey("e")}), "(nil)");
}

TEST(Redlock, NeedsAtLeastThreeDistinctServers) {
    EXPECT_THROW(RedlockStore({{"127.0.0.1", 1}, {"127.0.0.1", 2}}), std::invalid_argument);
    EXPECT_THROW(RedlockStore({{"127.0.0.1", 1}, {"127.0.0.1", 2}, {"127.0.0.1", 1}}), std::invalid_argument);
}

// ---- many processes: read-sleep-write of a shared counter ----

class RedisCounterTest : public ::testing::Test {
  protected:
    static constexpr int kProcesses = 4;
    static constexpr int kIterations = 30;

    void SetUp() override {
        char tmpl[] = "/tmp/sched-redis-counter-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        url_ = "sqlite://" + (dir_ / "counter.db").string();
        auto url = db::ParseDbUrl(url_);
        ASSERT_TRUE(url.ok()) << url.status().ToString();
        auto d = db::Database::Open(*url);
        ASSERT_TRUE(d.ok()) << d.status().ToString();
        db_ = *d;
        ASSERT_TRUE(db_->Run([](soci::session& s) {
                           s << "CREATE TABLE lock_test_counter (id INT PRIMARY KEY, value BIGINT NOT NULL)";
                           s << "INSERT INTO lock_test_counter (id, value) VALUES (1, 0)";
                       })
                        .ok());
    }
    void TearDown() override {
        db_.reset();
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }

    // Runs the processes to the end and returns the counter.
    long long Run(const std::vector<std::string>& lock_args) {
        std::vector<std::unique_ptr<ChildProcess>> procs;
        for (int i = 0; i < kProcesses; ++i) {
            std::vector<std::string> argv{
                SCHED_LOCK_TEST_NODE,       "counter", "--url", url_, "--key", "counter", "--iterations",
                std::to_string(kIterations)};
            argv.insert(argv.end(), lock_args.begin(), lock_args.end());
            procs.push_back(std::make_unique<ChildProcess>(
                argv, OutputFile{(dir_ / ("counter-" + std::to_string(i) + ".out")).string()}));
        }
        for (auto& p : procs) EXPECT_EQ(p->WaitForExit(60s), 0);
        auto v = db_->Run([](soci::session& s) {
            long long v = 0;
            s << "SELECT value FROM lock_test_counter WHERE id = 1", soci::into(v);
            return v;
        });
        EXPECT_TRUE(v.ok()) << v.status().ToString();
        return v.ok() ? *v : -1;
    }

    static std::string ServerList(const std::vector<std::unique_ptr<RedisServer>>& servers) {
        std::string out;
        for (const auto& s : servers) out += (out.empty() ? "" : ",") + s->address().ToString();
        return out;
    }

    std::filesystem::path dir_;
    std::string url_;
    std::shared_ptr<db::Database> db_;
};

TEST_F(RedisCounterTest, WithoutALockUpdatesAreLost) {
    // The same processes without the lock: the counter comes out short, so the exact totals
    // below are the lock's doing.
    const long long total = Run({"--no-lock"});
    std::printf("counter without a lock: %lld of %d\n", total, kProcesses * kIterations);
    EXPECT_LT(total, kProcesses * kIterations);
}

TEST_F(RedisCounterTest, ExactUnderOneRedis) {
    auto servers = StartServers(1);
    EXPECT_EQ(Run({"--redis", ServerList(servers)}), kProcesses * kIterations);
}

TEST_F(RedisCounterTest, ExactUnderRedlockOfThree) {
    auto servers = StartServers(3);
    EXPECT_EQ(Run({"--redis", ServerList(servers)}), kProcesses * kIterations);
}

TEST_F(RedisCounterTest, ExactUnderRedlockOfFive) {
    auto servers = StartServers(5);
    EXPECT_EQ(Run({"--redis", ServerList(servers)}), kProcesses * kIterations);
}

TEST_F(RedisCounterTest, ExactUnderRedlockOfThreeWithOneServerDown) {
    auto servers = StartServers(3);
    const std::string list = ServerList(servers);
    servers[0]->Kill();
    EXPECT_EQ(Run({"--redis", list}), kProcesses * kIterations);
}

TEST(RedisServerHelper, MissingBinaryFailsWithAClearMessage) {
    ::setenv("SCHED_REDIS_SERVER", "/nonexistent/redis-server", 1);
    try {
        RedisServer redis;
        ::unsetenv("SCHED_REDIS_SERVER");
        FAIL() << "started a server from a missing binary";
    } catch (const std::runtime_error& e) {
        ::unsetenv("SCHED_REDIS_SERVER");
        EXPECT_NE(std::string(e.what()).find("redis-server not found at /nonexistent/redis-server"), std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace sched::lock
