// The lock API (sched/web/lock_api.hpp) over real HTTP, on SQLite and MariaDB.

#include <atomic>
#include <future>
#include <thread>

#include "sched/lock/sql_lock_store.hpp"
#include "sched/lock/testing/redis_server.hpp"
#include "web_test_base.hpp"

namespace sched::web::testing {
namespace {

using namespace std::chrono_literals;
using http::Method;
using http::testing::WaitFor;

// The real store, counting reads (every acquisition attempt reads the row): lets a test see that a waiter is waiting
// (and shows that the store is an injected dependency).
class CountingStore final : public lock::LockStore {
  public:
    explicit CountingStore(std::shared_ptr<db::Database> db) : sql_(std::move(db)) {}
    Result<std::optional<lock::LockRow>> Read(std::string_view name) override {
        ++reads;
        return sql_.Read(name);
    }
    Result<std::optional<lock::Holding>> Insert(std::string_view name, std::string_view owner, Micros lease) override {
        return sql_.Insert(name, owner, lease);
    }
    Result<bool> TakeOver(const lock::LockRow& seen, std::string_view owner, Micros lease,
                          const lock::ClockStepGuard& guard) override {
        return sql_.TakeOver(seen, owner, lease, guard);
    }
    Result<bool> Renew(std::int64_t id, std::string_view owner, std::int64_t epoch, Micros lease) override {
        return sql_.Renew(id, owner, epoch, lease);
    }
    Result<bool> Release(std::int64_t id, std::string_view owner, std::int64_t epoch) override {
        return sql_.Release(id, owner, epoch);
    }
    std::atomic<int> reads{0};

  private:
    lock::SqlLockStore sql_;
};

class LockApiTest : public WebApiTest {
  protected:
    WebOptions Options() override {
        WebOptions o = WebApiTest::Options();
        store_ = std::make_shared<CountingStore>(pool_db_);
        o.locks.store = store_;
        o.locks.max_lease = 60s;
        o.locks.max_wait = 10s;
        o.locks.max_waiters = 1;
        return o;
    }

    // `app` nullopt: the global namespace (no "app" in the body).
    http::ClientResponse Acquire(const std::string& key, std::int64_t lease_ms, std::int64_t wait_ms = 0,
                                 const std::string& token = kClusterToken,
                                 const std::optional<std::string>& app = std::nullopt) {
        nlohmann::json body = {{"lease_ms", lease_ms}, {"wait_ms", wait_ms}};
        if (app) body["app"] = *app;
        return Post("/api/v1/locks/" + key + "/acquire", body, token);
    }
    // Extend and release name the holding's app (as acquire answered it) unless `app` is given.
    http::ClientResponse Extend(const std::string& key, const nlohmann::json& holding, std::int64_t lease_ms,
                                const std::string& token = kClusterToken,
                                const std::optional<std::string>& app = std::nullopt) {
        nlohmann::json body = {{"owner", holding["owner"]}, {"epoch", holding["epoch"]}, {"lease_ms", lease_ms}};
        if (app) {
            body["app"] = *app;
        } else if (holding.contains("app") && !holding["app"].is_null()) {
            body["app"] = holding["app"];
        }
        return Post("/api/v1/locks/" + key + "/extend", body, token);
    }
    http::ClientResponse Release(const std::string& key, const nlohmann::json& holding,
                                 const std::string& token = kClusterToken,
                                 const std::optional<std::string>& app = std::nullopt) {
        nlohmann::json body = {{"owner", holding["owner"]}, {"epoch", holding["epoch"]}};
        if (app) {
            body["app"] = *app;
        } else if (holding.contains("app") && !holding["app"].is_null()) {
            body["app"] = holding["app"];
        }
        return Post("/api/v1/locks/" + key + "/release", body, token);
    }
    nlohmann::json Inspect(const std::string& key) {
        auto r = Get("/api/v1/locks/" + key);
        EXPECT_EQ(r.status, 200) << r.body;
        return Body(r);
    }
    // A waiting acquire on another thread; `done` turns true once it has its answer.
    std::future<http::ClientResponse> AcquireInBackground(const std::string& key, std::int64_t lease_ms,
                                                          std::int64_t wait_ms, std::atomic<bool>& done) {
        return std::async(std::launch::async, [this, key, lease_ms, wait_ms, &done] {
            http::testing::BlockingClient own;
            http::ClientRequest req;
            req.method = Method::kPost;
            req.url = Url("/api/v1/locks/" + key + "/acquire");
            req.body = nlohmann::json{{"lease_ms", lease_ms}, {"wait_ms", wait_ms}}.dump();
            http::CallOptions call;
            call.bearer_token = kClusterToken;
            call.timeout = 30s;
            auto r = own.Send(req, call);
            done = true;
            return r.ok() ? *r : http::ClientResponse{};
        });
    }

    std::shared_ptr<CountingStore> store_;
};

TEST_P(LockApiTest, AcquireInspectExtendReleaseWithOwnerAndFencingEpoch) {
    const std::int64_t before = DbNowMs();
    auto acquired = Acquire("order-1", 5000);
    ASSERT_EQ(acquired.status, 200) << acquired.body;
    const auto holding = Body(acquired);
    EXPECT_EQ(holding["key"], "order-1");
    EXPECT_EQ(holding["epoch"], 1);
    EXPECT_EQ(holding["lease_ms"], 5000);
    EXPECT_EQ(holding["waited_ms"], 0);
    ASSERT_FALSE(holding["owner"].get<std::string>().empty());
    EXPECT_GE(holding["lease_until_ms"].get<std::int64_t>(), before + 5000);

    auto state = Inspect("order-1");
    EXPECT_TRUE(state["held"].get<bool>());
    EXPECT_EQ(state["owner"], holding["owner"]);
    EXPECT_EQ(state["epoch"], 1);
    EXPECT_GT(state["remaining_ms"].get<std::int64_t>(), 0);
    EXPECT_LE(state["remaining_ms"].get<std::int64_t>(), 5000);

    // Held: another acquire without waiting is 409 naming the key and showing the holder.
    auto busy = Acquire("order-1", 5000);
    EXPECT_EQ(busy.status, 409) << busy.body;
    EXPECT_EQ(Body(busy)["error"]["code"], "aborted");
    EXPECT_EQ(ErrorField(busy), "key");
    EXPECT_EQ(Body(busy)["lock"]["owner"], holding["owner"]);
    // Another key is independent.
    EXPECT_EQ(Acquire("order-2", 5000).status, 200);

    auto extended = Extend("order-1", holding, 30000);
    ASSERT_EQ(extended.status, 200) << extended.body;
    EXPECT_EQ(Body(extended)["epoch"], 1);
    EXPECT_GT(Inspect("order-1")["remaining_ms"].get<std::int64_t>(), 5000);

    auto released = Release("order-1", holding);
    ASSERT_EQ(released.status, 200) << released.body;
    EXPECT_EQ(Body(released)["epoch"], 2);
    state = Inspect("order-1");
    EXPECT_FALSE(state["held"].get<bool>());
    EXPECT_TRUE(state["owner"].is_null());
    EXPECT_EQ(state["epoch"], 2);
    EXPECT_EQ(state["remaining_ms"], 0);

    // A released holding is gone: extending or releasing it again is a stale epoch.
    EXPECT_EQ(RefusedField(Release("order-1", holding), 409), "epoch");
    // The next owner gets a new owner token and a higher epoch.
    auto next = Body(Acquire("order-1", 5000));
    EXPECT_EQ(next["epoch"], 3);
    EXPECT_NE(next["owner"], holding["owner"]);
}

TEST_P(LockApiTest, ASecondOwnerWaitsWithoutBlockingTheServerAndGetsTheLockAfterRelease) {
    const auto holding = Body(Acquire("job-7", 30000));
    ASSERT_EQ(holding["epoch"], 1);
    const int reads_before = store_->reads.load();
    std::atomic<bool> done{false};
    auto waiter = AcquireInBackground("job-7", 5000, 8000, done);
    // The waiter is retrying ...
    ASSERT_TRUE(WaitFor([&] { return store_->reads.load() >= reads_before + 4; }, 5s));
    // ... and the server (one I/O thread) still answers everything else at once.
    for (int i = 0; i < 5; ++i) {
        EXPECT_TRUE(Inspect("job-7")["held"].get<bool>());
        EXPECT_EQ(Acquire("other-" + std::to_string(i), 1000).status, 200);
    }
    EXPECT_FALSE(done.load()) << "the waiter returned while the lock was still held";

    ASSERT_EQ(Release("job-7", holding).status, 200);
    const auto got = waiter.get();
    ASSERT_EQ(got.status, 200) << got.body;
    const auto second = Body(got);
    EXPECT_EQ(second["epoch"], 3);  // release + 1, take-over + 1
    EXPECT_NE(second["owner"], holding["owner"]);
    EXPECT_GT(second["waited_ms"].get<std::int64_t>(), 0);
    EXPECT_EQ(Inspect("job-7")["owner"], second["owner"]);
}

TEST_P(LockApiTest, AWaitEndsWith409WhenTheLockStaysHeld) {
    ASSERT_EQ(Acquire("k", 30000).status, 200);
    const auto start = std::chrono::steady_clock::now();
    auto r = Acquire("k", 1000, 300);
    EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);
    EXPECT_EQ(r.status, 409) << r.body;
    EXPECT_EQ(ErrorField(r), "key");
    EXPECT_NE(Body(r)["error"]["message"].get<std::string>().find("after waiting 300 ms"), std::string::npos) << r.body;
}

TEST_P(LockApiTest, WaitingAcquiresAreBounded) {
    ASSERT_EQ(Acquire("k", 30000).status, 200);
    const int reads_before = store_->reads.load();
    std::atomic<bool> done{false};
    auto waiter = AcquireInBackground("k", 1000, 1500, done);
    ASSERT_TRUE(WaitFor([&] { return store_->reads.load() >= reads_before + 4; }, 5s));
    // max_waiters is 1 here: a second waiter is refused at once; a try without waiting is not.
    auto refused = Acquire("k", 1000, 1000);
    EXPECT_EQ(refused.status, 429) << refused.body;
    EXPECT_EQ(ErrorField(refused), "wait_ms");
    EXPECT_EQ(Acquire("k", 1000, 0).status, 409);
    EXPECT_FALSE(done.load());
    EXPECT_EQ(waiter.get().status, 409);
    // The slot is free again.
    EXPECT_EQ(Acquire("k", 1000, 50).status, 409);
}

TEST_P(LockApiTest, AnExpiredLockGoesToTheNextOwnerAndTheOldEpochIsRefused) {
    const auto first = Body(Acquire("report", 300));
    ASSERT_EQ(first["epoch"], 1);
    ASSERT_TRUE(WaitFor([&] { return !Inspect("report")["held"].get<bool>(); }, 5s));
    // Expired, not yet taken: it cannot be extended back to life ...
    auto revive = Extend("report", first, 5000);
    EXPECT_EQ(revive.status, 409) << revive.body;
    EXPECT_EQ(ErrorField(revive), "epoch");
    EXPECT_NE(Body(revive)["error"]["message"].get<std::string>().find("expired"), std::string::npos) << revive.body;

    const auto second = Body(Acquire("report", 5000));
    EXPECT_EQ(second["epoch"], 2);
    // The first owner's epoch is stale now: no extend, no release of the new holder's lock.
    auto stale_extend = Extend("report", first, 5000);
    EXPECT_EQ(stale_extend.status, 409);
    EXPECT_EQ(ErrorField(stale_extend), "epoch");
    EXPECT_EQ(Body(stale_extend)["lock"]["epoch"], 2);
    EXPECT_EQ(RefusedField(Release("report", first), 409), "epoch");
    EXPECT_EQ(Inspect("report")["owner"], second["owner"]);

    // An expired holding nobody took over may still be released by its owner.
    const auto third = Body(Acquire("cleanup", 200));
    ASSERT_TRUE(WaitFor([&] { return !Inspect("cleanup")["held"].get<bool>(); }, 5s));
    EXPECT_EQ(Release("cleanup", third).status, 200);
}

TEST_P(LockApiTest, AWrongOwnerOrAStaleEpochIsRefusedAndChangesNothing) {
    const auto holding = Body(Acquire("k1", 30000));
    nlohmann::json wrong_owner = holding;
    wrong_owner["owner"] = "someone-else#1";
    auto r = Release("k1", wrong_owner);
    EXPECT_EQ(r.status, 409) << r.body;
    EXPECT_EQ(ErrorField(r), "owner");
    EXPECT_EQ(ErrorField(Extend("k1", wrong_owner, 1000)), "owner");
    nlohmann::json future_epoch = holding;
    future_epoch["epoch"] = 5;
    EXPECT_EQ(ErrorField(Release("k1", future_epoch)), "epoch");
    const auto state = Inspect("k1");
    EXPECT_TRUE(state["held"].get<bool>());
    EXPECT_EQ(state["owner"], holding["owner"]);
    EXPECT_EQ(state["epoch"], 1);
}

TEST_P(LockApiTest, BadInputGets4xxNamingTheField) {
    const auto field_of = [&](const http::ClientResponse& r, int status) {
        EXPECT_EQ(r.status, status) << r.body;
        return ErrorField(r);
    };
    EXPECT_EQ(field_of(Acquire(std::string(129, 'k'), 1000), 400), "key");
    EXPECT_EQ(field_of(Acquire("a%20b", 1000), 400), "key");
    EXPECT_EQ(field_of(Acquire("a%2Fb", 1000), 400), "key");
    EXPECT_EQ(field_of(Acquire("caf%C3%A9", 1000), 400), "key");
    EXPECT_EQ(field_of(Acquire(std::string(128, 'k'), 1000), 200), "");
    EXPECT_EQ(field_of(Acquire("k", 0), 400), "lease_ms");
    EXPECT_EQ(field_of(Acquire("k", -5), 400), "lease_ms");
    EXPECT_EQ(field_of(Acquire("k", 60001), 400), "lease_ms");       // max-lease 60 s here
    EXPECT_EQ(field_of(Acquire("k", 1000, 10001), 400), "wait_ms");  // max-wait 10 s here
    EXPECT_EQ(field_of(Acquire("k", 1000, -1), 400), "wait_ms");
    EXPECT_EQ(field_of(Post("/api/v1/locks/k/acquire", {{"wait_ms", 10}}), 400), "lease_ms");
    EXPECT_EQ(field_of(Post("/api/v1/locks/k/acquire", {{"lease_ms", "1s"}}), 400), "lease_ms");
    EXPECT_EQ(field_of(Post("/api/v1/locks/k/acquire", {{"lease_ms", 10}, {"ttl", 5}}), 400), "ttl");
    EXPECT_EQ(field_of(Call(Method::kPost, "/api/v1/locks/k/acquire", "{oops"), 400), "body");

    EXPECT_EQ(field_of(Post("/api/v1/locks/never/release", {{"owner", "o"}, {"epoch", 1}}), 404), "key");
    EXPECT_EQ(field_of(Post("/api/v1/locks/never/extend", {{"owner", "o"}, {"epoch", 1}, {"lease_ms", 10}}), 404),
              "key");
    EXPECT_EQ(field_of(Get("/api/v1/locks/never"), 404), "key");
    EXPECT_EQ(field_of(Get("/api/v1/locks/k?verbose=1"), 400), "verbose");
    EXPECT_EQ(field_of(Post("/api/v1/locks/k/release", {{"epoch", 1}}), 400), "owner");
    EXPECT_EQ(field_of(Post("/api/v1/locks/k/release", {{"owner", "o"}, {"epoch", 0}}), 400), "epoch");
    EXPECT_EQ(field_of(Post("/api/v1/locks/k/release", {{"owner", "o"}, {"epoch", 1}, {"lease_ms", 5}}), 400),
              "lease_ms");
    EXPECT_EQ(field_of(Post("/api/v1/locks/k/extend", {{"owner", "o"}, {"epoch", 1}}), 400), "lease_ms");
    EXPECT_EQ(field_of(Post("/api/v1/locks/k/extend", {{"owner", "o"}, {"epoch", 1}, {"lease_ms", 0}}), 400),
              "lease_ms");
}

TEST_P(LockApiTest, ExecutorsOperatorsAndAdminsTakeLocksViewersOnlyLook) {
    const auto executor = CreateToken("sdk", "executor", {"demo"});
    const auto op = CreateToken("op", "operator");
    const auto admin = CreateToken("admin", "admin");
    const auto viewer = CreateToken("viewer", "viewer");
    for (const auto& token : {executor, op, admin}) {
        auto r = Acquire("auth-" + token.substr(token.size() - 8), 5000, 0, token, "demo");
        ASSERT_EQ(r.status, 200) << r.body;
        const auto holding = Body(r);
        const std::string key = holding["key"];
        EXPECT_EQ(Extend(key, holding, 5000, token).status, 200);
        EXPECT_EQ(Get("/api/v1/locks/" + key + "?app=demo", token).status, 200);
        EXPECT_EQ(Release(key, holding, token).status, 200);
    }
    const auto held = Body(Acquire("shared", 5000));
    EXPECT_EQ(RefusedField(Acquire("shared-2", 5000, 0, viewer), 403), "Authorization");
    EXPECT_EQ(Release("shared", held, viewer).status, 403);
    EXPECT_EQ(Extend("shared", held, 1000, viewer).status, 403);
    EXPECT_EQ(Get("/api/v1/locks/shared", viewer).status, 200);
    EXPECT_EQ(Acquire("shared-3", 5000, 0, "").status, 401);
    EXPECT_EQ(Get("/api/v1/locks/shared", "").status, 401);
    EXPECT_EQ(Get("/api/v1/locks/shared", "wrong").status, 401);
    // Executor tokens still reach nothing else.
    EXPECT_EQ(Get("/api/v1/jobs", executor).status, 403);
}

// Least privilege: an executor token locks only in its apps' namespaces; people's tokens and the
// cluster token keep the global namespace and reach every app's.
TEST_P(LockApiTest, AnExecutorTokenLocksOnlyInItsAppsNamespaces) {
    const auto pay = CreateToken("pay-svc", "executor", {"pay"});
    const auto op = CreateToken("op", "operator");

    auto global = Acquire("order-1", 5000, 0, pay);
    EXPECT_EQ(global.status, 403) << global.body;
    EXPECT_EQ(ErrorField(global), "app");
    auto foreign = Acquire("order-1", 5000, 0, pay, "shop");
    EXPECT_EQ(foreign.status, 403) << foreign.body;
    EXPECT_EQ(ErrorField(foreign), "app");
    EXPECT_NE(foreign.body.find("shop"), std::string::npos) << foreign.body;
    EXPECT_EQ(ErrorField(Acquire("order-1", 5000, 0, pay, "*")), "app");
    EXPECT_EQ(ErrorField(Acquire("order-1", 5000, 0, pay, "")), "app");

    auto mine = Acquire("order-1", 5000, 0, pay, "pay");
    ASSERT_EQ(mine.status, 200) << mine.body;
    const auto holding = Body(mine);
    EXPECT_EQ(holding["key"], "order-1");
    EXPECT_EQ(holding["app"], "pay");

    // Namespaces do not collide: the same key globally or in another app is another lock.
    EXPECT_EQ(Acquire("order-1", 5000).status, 200);
    EXPECT_EQ(Acquire("order-1", 5000, 0, op, "shop").status, 200);
    // ...and the same key in the same app is this one, whoever asks.
    EXPECT_EQ(Acquire("order-1", 5000, 0, kClusterToken, "pay").status, 409);

    // Another app's name on extend, release and inspect is refused and changes nothing.
    EXPECT_EQ(ErrorField(Extend("order-1", holding, 9000, pay, "shop")), "app");
    EXPECT_EQ(ErrorField(Release("order-1", holding, pay, "shop")), "app");
    EXPECT_EQ(RefusedField(Get("/api/v1/locks/order-1?app=shop", pay), 403), "app");
    EXPECT_EQ(Get("/api/v1/locks/order-1", pay).status, 403);
    auto state = Get("/api/v1/locks/order-1?app=pay", pay);
    ASSERT_EQ(state.status, 200) << state.body;
    EXPECT_EQ(Body(state)["owner"], holding["owner"]);
    EXPECT_EQ(Body(state)["epoch"], holding["epoch"]);
    EXPECT_EQ(Body(state)["held"], true);
    EXPECT_EQ(ErrorField(Get("/api/v1/locks/order-1?app=pay&x=1", pay)), "x");

    EXPECT_EQ(Extend("order-1", holding, 9000, pay).status, 200);
    EXPECT_EQ(Release("order-1", holding, pay).status, 200);
}

SCHED_DB_TEST_SUITE(LockApiTest);

// The same API with `locks.backend: redis` (a real redis-server): the store is made from the
// config, not injected.
class LockApiRedisTest : public LockApiTest {
  protected:
    WebOptions Options() override {
        WebOptions o = LockApiTest::Options();
        o.locks.store = nullptr;
        o.locks.backend.backend = lock::LockBackend::kRedis;
        o.locks.backend.servers = {redis_.address()};
        return o;
    }
    lock::testing::RedisServer redis_;
};

TEST_P(LockApiRedisTest, LocksLiveInRedisWithOwnersAndEpochs) {
    auto acquired = Acquire("order-9", 5000);
    ASSERT_EQ(acquired.status, 200) << acquired.body;
    const auto holding = Body(acquired);
    EXPECT_EQ(holding["epoch"], 1);
    // The holding is in Redis, not in the scheduler's database.
    EXPECT_NE(redis_.Command({"GET", "sched:held:lock:order-9"}).find(holding["owner"].get<std::string>()),
              std::string::npos);
    auto state = Inspect("order-9");
    EXPECT_TRUE(state["held"].get<bool>()) << state;
    EXPECT_EQ(state["owner"], holding["owner"]);
    EXPECT_GT(state["remaining_ms"].get<std::int64_t>(), 0);
    EXPECT_EQ(Acquire("order-9", 5000).status, 409);

    auto extended = Extend("order-9", holding, 30000);
    ASSERT_EQ(extended.status, 200) << extended.body;
    EXPECT_GT(Inspect("order-9")["remaining_ms"].get<std::int64_t>(), 5000);
    nlohmann::json stranger = holding;
    stranger["owner"] = "someone-else";
    EXPECT_EQ(Release("order-9", stranger).status, 409);

    // A release answers the epoch the lock has now, + 1 as on the SQL backend (docs/api.md).
    auto released = Release("order-9", holding);
    ASSERT_EQ(released.status, 200) << released.body;
    EXPECT_EQ(Body(released)["epoch"], 2);
    state = Inspect("order-9");
    EXPECT_FALSE(state["held"].get<bool>()) << state;
    EXPECT_EQ(state["epoch"], 2) << state;
    EXPECT_EQ(Release("order-9", holding).status, 409);
    auto next = Body(Acquire("order-9", 5000));
    EXPECT_EQ(next["epoch"], 3);  // fencing epochs keep rising across holders: a release, then a take-over
    EXPECT_EQ(Get("/api/v1/locks/never-taken").status, 404);

    // Redis down: a clear 503, no crash; back up: served again.
    redis_.Kill();
    auto down = Acquire("order-10", 5000);
    EXPECT_EQ(down.status, 503) << down.body;
    redis_.Start();
    EXPECT_EQ(Acquire("order-10", 5000).status, 200);
}

SCHED_DB_TEST_SUITE(LockApiRedisTest);

}  // namespace
}  // namespace sched::web::testing
