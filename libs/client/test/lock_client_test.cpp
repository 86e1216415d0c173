// The SDK's lock client (sched/client/lock.hpp) against a real web module (WebService on a
// SQLite file) over loopback HTTP.

#include <sys/socket.h>

#include <netinet/in.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <thread>

#include <gtest/gtest.h>

#include "sched/client/executor.hpp"
#include "sched/common/node_id.hpp"
#include "sched/http/testing/test_server.hpp"
#include "sched/web/web_service.hpp"

namespace sched::client {
namespace {

using namespace std::chrono_literals;
using http::testing::WaitFor;

constexpr const char* kToken = "lock-test-token";

// A loopback port nobody listens on (bound, then closed).
std::uint16_t FreePort() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    (void)::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    socklen_t len = sizeof(addr);
    (void)::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    ::close(fd);
    return ntohs(addr.sin_port);
}

class LockClientTest : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = std::filesystem::temp_directory_path() / ("sched-lock-client-" + RandomHex(8));
        std::filesystem::create_directories(dir_);
        StartServer("127.0.0.1:0");
    }
    void TearDown() override {
        server_.reset();
        std::filesystem::remove_all(dir_);
    }

    void StartServer(const std::string& listen) {
        web::WebServiceConfig config;
        config.api.token = kToken;
        config.api.ui = false;
        config.http = http::testing::LoopbackOptions();
        config.http.listen = listen;
        config.database.url = *db::ParseDbUrl("sqlite://" + (dir_ / "locks.db").string());
        config.io_threads = 1;
        config.db_threads = 2;
        server_ = std::make_unique<web::WebService>(config);
        const Status started = server_->Start();
        ASSERT_TRUE(started.ok()) << started.ToString();
        url_ = "http://127.0.0.1:" + std::to_string(server_->port());
    }

    ExecutorOptions Options(std::vector<std::string> endpoints = {}) const {
        ExecutorOptions o;
        o.app = "lock-test";
        o.web_endpoints = endpoints.empty() ? std::vector<std::string>{url_} : std::move(endpoints);
        o.token = kToken;
        o.web_timeout = 2s;
        o.spool_dir = dir_ / "spool";
        return o;
    }

    nlohmann::json Inspect(const std::string& key) {
        // The SDK locks in its app's namespace (docs/locks.md).
        auto r = http_.Get(url_ + "/api/v1/locks/" + key + "?app=lock-test", {.bearer_token = kToken});
        EXPECT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().ToString());
        return r.ok() ? *r->Json() : nlohmann::json();
    }

    std::filesystem::path dir_;
    std::unique_ptr<web::WebService> server_;
    std::string url_;
    http::testing::BlockingClient http_;
};

TEST_F(LockClientTest, AcquiresWithAFencingEpochExcludesOthersAndReleasesOnDestruction) {
    Executor a(Options());
    Executor b(Options());
    std::string owner;
    {
        auto lock = a.Lock("order-123", 5s);
        ASSERT_TRUE(lock.ok()) << lock.status().ToString();
        EXPECT_EQ(lock->key(), "order-123");
        EXPECT_EQ(lock->epoch(), 1);
        EXPECT_TRUE(lock->Held());
        EXPECT_FALSE(lock->LostToken().stop_requested());
        owner = lock->owner();
        EXPECT_EQ(Inspect("order-123")["owner"], owner);

        auto other = b.Lock("order-123", 5s);
        ASSERT_FALSE(other.ok());
        EXPECT_EQ(other.status().code(), Code::kAborted) << other.status().ToString();
        EXPECT_NE(other.status().message().find("held by another owner"), std::string::npos);
    }
    const auto state = Inspect("order-123");
    EXPECT_FALSE(state["held"].get<bool>());
    EXPECT_EQ(state["epoch"], 2);
    auto again = b.Lock("order-123", 5s);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->epoch(), 3);
    EXPECT_TRUE(again->Release().ok());
    EXPECT_TRUE(again->Release().ok());  // idempotent
    EXPECT_FALSE(again->Held());
}

TEST_F(LockClientTest, ASecondOwnerWaitsForTheRelease) {
    Executor a(Options());
    Executor b(Options());
    auto first = a.Lock("report", 10s);
    ASSERT_TRUE(first.ok());
    auto waiter = std::async(std::launch::async, [&] { return b.Lock("report", 5s, 8s); });
    EXPECT_EQ(waiter.wait_for(300ms), std::future_status::timeout);
    ASSERT_TRUE(first->Release().ok());
    auto second = waiter.get();
    ASSERT_TRUE(second.ok()) << second.status().ToString();
    EXPECT_EQ(second->epoch(), 3);
}

TEST_F(LockClientTest, TheWatchdogKeepsTheLockPastSeveralLeases) {
    Executor a(Options());
    Executor b(Options());
    auto lock = a.Lock("long-job", 300ms);
    ASSERT_TRUE(lock.ok());
    // Four leases long; without renewals the lock would have expired three times over.
    const auto until = std::chrono::steady_clock::now() + 1200ms;
    while (std::chrono::steady_clock::now() < until) {
        ASSERT_TRUE(lock->Held());
        auto other = b.Lock("long-job", 300ms);
        ASSERT_FALSE(other.ok());
        EXPECT_EQ(other.status().code(), Code::kAborted);
        std::this_thread::sleep_for(100ms);
    }
    const auto state = Inspect("long-job");
    EXPECT_TRUE(state["held"].get<bool>());
    EXPECT_EQ(state["owner"], lock->owner());
    EXPECT_EQ(state["epoch"], 1);
    EXPECT_FALSE(lock->LostToken().stop_requested());
}

// Least privilege: a service holding only an executor token scoped to its app takes locks (in its app's
// namespace); a token scoped to another app is refused.
TEST_F(LockClientTest, AnAppScopedExecutorTokenLocksInItsAppsNamespace) {
    const auto create = [&](const std::string& app) {
        auto r =
            http_.PostJson(url_ + "/api/v1/tokens", {{"name", "svc-" + app}, {"role", "executor"}, {"apps", {app}}},
                           {.bearer_token = kToken});
        EXPECT_TRUE(r.ok() && r->status == 201) << (r.ok() ? r->body : r.status().ToString());
        return r.ok() ? (*r->Json()).value("token", "") : "";
    };
    auto mine = Options();
    mine.token = create("lock-test");
    Executor a(mine);
    auto lock = a.Lock("scoped", 5s);
    ASSERT_TRUE(lock.ok()) << lock.status().ToString();
    EXPECT_EQ(Inspect("scoped")["owner"], lock->owner());

    auto theirs = Options();
    theirs.token = create("other-app");
    Executor b(theirs);
    auto refused = b.Lock("scoped", 5s);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), Code::kPermissionDenied) << refused.status().ToString();
    EXPECT_TRUE(lock->Release().ok());
}

TEST_F(LockClientTest, ALockReleasedBehindItsBackIsSignalledLost) {
    Executor a(Options());
    auto lock = a.Lock("stolen", 600ms);
    ASSERT_TRUE(lock.ok());
    // An operator frees it with the owner token (as after a stuck job).
    auto freed = http_.PostJson(url_ + "/api/v1/locks/stolen/release",
                                {{"app", "lock-test"}, {"owner", lock->owner()}, {"epoch", lock->epoch()}},
                                {.bearer_token = kToken});
    ASSERT_TRUE(freed.ok() && freed->status == 200);
    // The next extend (within lease / 3) is refused: the guard says so.
    ASSERT_TRUE(WaitFor([&] { return lock->LostToken().stop_requested(); }, 5s));
    EXPECT_FALSE(lock->Held());
    const Status released = lock->Release();
    EXPECT_EQ(released.code(), Code::kAborted) << released.ToString();
}

TEST_F(LockClientTest, LosingTheServerLosesTheLockByItsLocalDeadline) {
    Executor a(Options());
    auto lock = a.Lock("orphan", 600ms);
    ASSERT_TRUE(lock.ok());
    server_.reset();
    ASSERT_TRUE(WaitFor([&] { return lock->LostToken().stop_requested(); }, 5s));
    EXPECT_FALSE(lock->Held());
    EXPECT_EQ(lock->Release().code(), Code::kUnavailable);
}

TEST_F(LockClientTest, FailsOverToTheNextEndpointAndRetriesUntilAServerAnswers) {
    const std::string dead = "http://127.0.0.1:" + std::to_string(FreePort());
    Executor a(Options({dead, url_}));
    auto lock = a.Lock("failover", 5s);
    ASSERT_TRUE(lock.ok()) << lock.status().ToString();
    EXPECT_EQ(lock->epoch(), 1);
    ASSERT_TRUE(lock->Release().ok());

    // No server at all for a while: the call retries with back-off until one comes up.
    server_.reset();
    const std::uint16_t port = FreePort();
    Executor b(Options({"http://127.0.0.1:" + std::to_string(port)}));
    auto pending = std::async(std::launch::async, [&] { return b.Lock("failover", 5s); });
    std::this_thread::sleep_for(400ms);
    StartServer("127.0.0.1:" + std::to_string(port));
    auto late = pending.get();
    ASSERT_TRUE(late.ok()) << late.status().ToString();
    EXPECT_EQ(late->epoch(), 3);

    // And gives up with kUnavailable when none answers within web-timeout.
    Executor c(Options({dead}));
    const auto start = std::chrono::steady_clock::now();
    auto none = c.Lock("failover", 5s);
    EXPECT_EQ(none.status().code(), Code::kUnavailable) << none.status().ToString();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST_F(LockClientTest, BadKeysAndLeasesAreRefusedNamingThem) {
    Executor a(Options());
    EXPECT_EQ(a.Lock("", 1s).status().code(), Code::kInvalidArgument);
    EXPECT_EQ(a.Lock("a/b", 1s).status().code(), Code::kInvalidArgument);
    EXPECT_NE(a.Lock(std::string(129, 'k'), 1s).status().message().find("lock key"), std::string::npos);
    EXPECT_NE(a.Lock("k", 0ms).status().message().find("lock lease"), std::string::npos);
    // The server's limits come back as they are (max-wait 30 s by default).
    auto too_long = a.Lock("k", 1s, 31s);
    EXPECT_EQ(too_long.status().code(), Code::kInvalidArgument);
    EXPECT_NE(too_long.status().message().find("wait_ms"), std::string::npos) << too_long.status().ToString();
}

}  // namespace
}  // namespace sched::client
