#include "sched/web/executor_api.hpp"

#include <gtest/gtest.h>

#include "sched/db/migrator.hpp"
#include "sched/db/testing/test_database.hpp"
#include "sched/http/testing/test_server.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/registry.hpp"

namespace sched::web {
namespace {

using rest::testing::BlockingClient;
using rest::testing::TestServer;

class ExecutorApiTest : public db::testing::DbTest {
  protected:
    void SetUp() override {
        DbTest::SetUp();
        if (IsSkipped() || HasFatalFailure()) return;
        ASSERT_TRUE(db::Migrator(db()).Migrate().ok());
        pool_db_ = test_db().OpenAnother();
        rest::Router router;
        AddExecutorRoutes(router, pool_db_, db_pool_);
        server_ = std::make_unique<TestServer>(std::move(router), rest::testing::LoopbackOptions(),
                                               rest::BearerTokenAuth("secret"));
    }
    void TearDown() override {
        server_.reset();
        db_pool_.join();
        DbTest::TearDown();
    }
    Result<rest::ClientResponse> Post(const std::string& path, const nlohmann::json& body,
                                      const std::string& token = "secret") {
        return client_.PostJson(server_->Url(path), body, {.bearer_token = token});
    }
    std::int64_t InsertFire(int attempt = 0) {
        store::Fire f;
        f.job_id = 1;
        f.scheduled_time = 1000 + attempt;
        f.attempt = attempt;
        f.epoch = 1;
        auto id =
            db().Run([&](soci::session& s) { return store::FireRepository::InsertIfAbsent(s, db().dialect(), f); });
        return **id;
    }

    net::thread_pool db_pool_{2};
    std::shared_ptr<db::Database> pool_db_;
    std::unique_ptr<TestServer> server_;
    BlockingClient client_;
};

TEST_P(ExecutorApiTest, HeartbeatRegistersAndDeregisterRemoves) {
    auto r = Post("/api/v1/registry/heartbeat",
                  {{"app", "demo"}, {"address", "127.0.0.1:9999"}, {"handlers", {"echo", "sleep"}}, {"capacity", 8}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200) << r->body;
    auto listed = store::ExecutorRepository(db()).List("demo");
    ASSERT_EQ(listed->size(), 1u);
    EXPECT_EQ(listed->front().handlers, (std::vector<std::string>{"echo", "sleep"}));
    EXPECT_EQ(listed->front().capacity, 8);

    EXPECT_EQ(Post("/api/v1/registry/deregister", {{"app", "demo"}, {"address", "127.0.0.1:9999"}})->status, 200);
    auto again = Post("/api/v1/registry/deregister", {{"app", "demo"}, {"address", "127.0.0.1:9999"}});
    EXPECT_EQ(again->status, 404);
    EXPECT_TRUE(store::ExecutorRepository(db()).List("demo")->empty());
}

TEST_P(ExecutorApiTest, BadInputAndBadTokensAreRefusedNamingTheField) {
    auto missing = Post("/api/v1/registry/heartbeat", {{"app", "demo"}, {"handlers", {"echo"}}});
    EXPECT_EQ(missing->status, 400);
    EXPECT_EQ((*missing->Json())["error"]["field"], "address");
    auto wrong_type = Post("/api/v1/registry/heartbeat", {{"app", "demo"}, {"address", "a:1"}, {"handlers", "echo"}});
    EXPECT_EQ(wrong_type->status, 400);
    EXPECT_EQ((*wrong_type->Json())["error"]["field"], "handlers");
    auto bad_item =
        Post("/api/v1/callback", nlohmann::json::array({{{"fire_id", 1}, {"attempt", 0}, {"status", "meh"}}}));
    EXPECT_EQ(bad_item->status, 400);
    EXPECT_EQ((*bad_item->Json())["error"]["field"], "[0].status");
    auto not_array = Post("/api/v1/callback", {{"fire_id", 1}});
    EXPECT_EQ(not_array->status, 400);
    EXPECT_EQ(Post("/api/v1/registry/heartbeat", {{"app", "demo"}}, "wrong")->status, 401);
}

TEST_P(ExecutorApiTest, CallbacksApplyOncePerFireAndAttempt) {
    const auto running = InsertFire();
    store::FireRepository fires(db());
    ASSERT_TRUE(fires.Transition(running, {store::FireStatus::kPending}, store::FireStatus::kRunning).ok());
    const auto dispatching = InsertFire(1);
    ASSERT_TRUE(fires.Transition(dispatching, {store::FireStatus::kPending}, store::FireStatus::kDispatching).ok());

    const nlohmann::json batch = nlohmann::json::array({
        {{"fire_id", running},
         {"attempt", 0},
         {"status", "succeeded"},
         {"code", "ok"},
         {"message", "done"},
         {"started_ms", 5},
         {"finished_ms", 9}},
        {{"fire_id", dispatching},
         {"attempt", 1},
         {"status", "failed"},
         {"code", "internal"},
         {"message", "boom"},
         {"finished_ms", 9}},
        {{"fire_id", 424242}, {"attempt", 0}, {"status", "succeeded"}},
        {{"fire_id", running}, {"attempt", 7}, {"status", "failed"}},
    });
    auto first = Post("/api/v1/callback", batch);
    ASSERT_TRUE(first.ok());
    ASSERT_EQ(first->status, 200) << first->body;
    const auto results = (*first->Json())["results"];
    EXPECT_EQ(results[0]["outcome"], "applied");
    EXPECT_EQ(results[1]["outcome"], "applied");
    EXPECT_EQ(results[2]["outcome"], "not_found");
    EXPECT_EQ(results[3]["outcome"], "conflict");

    auto ok = fires.Get(running);
    EXPECT_EQ(ok->status, store::FireStatus::kSucceeded);
    EXPECT_EQ(ok->result_message, "done");
    EXPECT_EQ(ok->result_code, 0);
    EXPECT_EQ(ok->finished_at, 9);
    EXPECT_TRUE(ok->followup);
    auto failed = fires.Get(dispatching);
    EXPECT_EQ(failed->status, store::FireStatus::kFailed);
    EXPECT_EQ(failed->started_at, std::nullopt);

    // The SDK resends after a lost response: the same results are duplicates, nothing changes.
    auto again = Post("/api/v1/callback", nlohmann::json::array({batch[0], batch[1]}));
    EXPECT_EQ((*again->Json())["results"][0]["outcome"], "duplicate");
    EXPECT_EQ((*again->Json())["results"][1]["outcome"], "duplicate");
    // A different final result for a finished fire is a conflict, not an overwrite.
    auto late =
        Post("/api/v1/callback", nlohmann::json::array({{{"fire_id", running}, {"attempt", 0}, {"status", "killed"}}}));
    EXPECT_EQ((*late->Json())["results"][0]["outcome"], "conflict");
    EXPECT_EQ(fires.Get(running)->status, store::FireStatus::kSucceeded);
}

// Trigger nodes serve the lock API with the SDK's routes, behind the server's token hook.
TEST_P(ExecutorApiTest, TheLockApiIsServedWithTheSdkRoutes) {
    auto acquired = Post("/api/v1/locks/order-9/acquire", {{"lease_ms", 5000}});
    ASSERT_TRUE(acquired.ok());
    ASSERT_EQ(acquired->status, 200) << acquired->body;
    const auto holding = *acquired->Json();
    EXPECT_EQ(holding["epoch"], 1);
    auto busy = Post("/api/v1/locks/order-9/acquire", {{"lease_ms", 5000}, {"wait_ms", 50}});
    EXPECT_EQ(busy->status, 409);
    auto state = client_.Get(server_->Url("/api/v1/locks/order-9"), {.bearer_token = "secret"});
    ASSERT_TRUE(state.ok());
    EXPECT_EQ((*state->Json())["owner"], holding["owner"]);
    EXPECT_EQ(Post("/api/v1/locks/order-9/extend",
                   {{"owner", holding["owner"]}, {"epoch", holding["epoch"]}, {"lease_ms", 9000}})
                  ->status,
              200);
    EXPECT_EQ(Post("/api/v1/locks/order-9/release", {{"owner", holding["owner"]}, {"epoch", holding["epoch"]}})->status,
              200);
    EXPECT_EQ(Post("/api/v1/locks/order-9/acquire", {{"lease_ms", 5000}})->Json()->at("epoch"), 3);
    EXPECT_EQ(Post("/api/v1/locks/order-9/acquire", {{"lease_ms", 5000}}, "wrong")->status, 401);
    EXPECT_EQ(Post("/api/v1/locks/bad%20key/acquire", {{"lease_ms", 5000}})->status, 400);
}

SCHED_DB_TEST_SUITE(ExecutorApiTest);

}  // namespace
}  // namespace sched::web
