#include "sched/web/executor_api.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "impl/last_success_writer.hpp"
#include "sched/common/testing/io_thread.hpp"
#include "sched/db/testing/test_database.hpp"
#include "sched/http/testing/test_server.hpp"
#include "sched/protocol/testing/collecting_span_sink.hpp"
#include "sched/protocol/trace_context.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/fire_log.hpp"
#include "sched/store/job.hpp"
#include "sched/store/registry.hpp"
#include "sched/store/token.hpp"
#include "sched/web/sha256.hpp"

namespace sched::web {
namespace {

using http::testing::BlockingClient;
using http::testing::TestServer;

class ExecutorApiTest : public db::testing::MigratedDbTest {
  protected:
    void SetUpDatabase() override {
        pool_db_ = test_db().OpenAnother();
        http::Router router;
        AddExecutorRoutes(
            router, "secret", [db = pool_db_] { return db; }, db_pool_, {}, std::chrono::seconds(5), nullptr,
            [this] { ++wakes_; },
            [this](const std::vector<std::int64_t>& fire_ids) {
                std::lock_guard lock(applied_mu_);
                applied_.push_back(fire_ids);
            });
        server_ = std::make_unique<TestServer>(std::move(router), http::testing::LoopbackOptions(),
                                               http::BearerTokenAuth("secret"));
    }
    void TearDown() override {
        server_.reset();
        db_pool_.join();
        DbTest::TearDown();
    }
    Result<http::ClientResponse> Post(const std::string& path, const nlohmann::json& body,
                                      const std::string& token = "secret") {
        return client_.PostJson(server_->Url(path), body, {.bearer_token = token});
    }
    std::int64_t InsertFire(int attempt = 0) {
        model::Fire f;
        f.job_id = 1;
        f.scheduled_time = 1000 + attempt;
        f.attempt = attempt;
        f.epoch = 1;
        auto id =
            db().Run([&](soci::session& s) { return store::FireRepository::InsertIfAbsent(s, db().dialect(), f); });
        return **id;
    }

    // An API token stored as the web module would (hash only); returns its secret.
    std::string StoreToken(const std::string& secret, store::Role role, const std::vector<std::string>& apps = {}) {
        auto created = store::TokenRepository(db()).Create(secret, role, Sha256Hex(secret), apps);
        EXPECT_TRUE(created.ok()) << created.status().ToString();
        return secret;
    }
    std::int64_t CreateJob(const std::string& name, const std::string& app,
                           sched::ScheduleType type = sched::ScheduleType::kManual, int retry_max = 0) {
        model::Job j;
        j.name = name;
        j.app = app;
        j.handler = "echo";
        j.schedule_type = type;
        if (type == sched::ScheduleType::kCron) j.schedule_expr = "0 * * * * *";
        j.retry_max = retry_max;
        auto created = store::JobRepository(db()).Create(j);
        EXPECT_TRUE(created.ok()) << created.status().ToString();
        return created.ok() ? created->id : 0;
    }
    // A fire of `job_id` as a slave leaves it: dispatching under `dispatch_epoch`, then (with an
    // address) running on that executor.
    std::int64_t DispatchedFire(std::int64_t job_id, std::int64_t scheduled, std::int64_t dispatch_epoch,
                                const std::optional<std::string>& running_on) {
        model::Fire f;
        f.job_id = job_id;
        f.scheduled_time = scheduled;
        f.epoch = 1;
        auto id =
            db().Run([&](soci::session& s) { return store::FireRepository::InsertIfAbsent(s, db().dialect(), f); });
        store::FireRepository fires(db());
        EXPECT_TRUE(fires
                        .Transition(**id, {model::FireStatus::kPending}, model::FireStatus::kDispatching,
                                    {.dispatch_epoch = dispatch_epoch, .dispatched_at = 1})
                        .ok());
        if (running_on) {
            EXPECT_TRUE(fires
                            .Transition(**id, {model::FireStatus::kDispatching}, model::FireStatus::kRunning,
                                        {.executor_address = *running_on, .started_at = 2})
                            .ok());
        }
        return **id;
    }
    void Register(const std::string& app, const std::string& address) {
        ASSERT_TRUE(
            store::ExecutorRepository(db()).Heartbeat({.app = app, .address = address, .handlers = {"echo"}}).ok());
    }
    // job_last_success's finish time for `job`, if it has a row.
    std::optional<std::int64_t> RecordedSuccess(std::int64_t job, const std::string& column = "finished_at") {
        std::optional<std::int64_t> out;
        EXPECT_TRUE(db().Run([&](soci::session& s) {
                            long long at = 0;
                            soci::indicator ind = soci::i_null;
                            s << "SELECT " + column + " FROM job_last_success WHERE job_id = :j", soci::use(job),
                                soci::into(at, ind);
                            if (s.got_data() && ind == soci::i_ok) out = at;
                        })
                        .ok());
        return out;
    }
    // The fire job_last_success names for `job`, and whether it is the fire of the row's finish.
    std::optional<std::int64_t> RecordedFire(std::int64_t job) {
        if (RecordedSuccess(job, "fire_finished_at") != RecordedSuccess(job)) return std::nullopt;
        return RecordedSuccess(job, "fire_id");
    }
    // Polls `done` for up to 10 s (a write on the pool, after the response).
    static bool WaitFor(const std::function<bool()>& done) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!done()) {
            if (std::chrono::steady_clock::now() > until) return false;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        return true;
    }
    // What a refused callback must leave exactly as it was.
    static std::string RowState(const model::Fire& f) {
        return std::string(model::FireStatusName(f.status)) + "|" + f.executor_address.value_or("-") + "|" +
               std::to_string(f.finished_at.value_or(-1)) + "|" + f.result_message.value_or("-") + "|" +
               std::to_string(f.result_code.value_or(-1)) + "|" + std::to_string(f.followup) + "|" +
               std::to_string(f.started_at.value_or(-1));
    }
    std::string State(std::int64_t fire_id) {
        auto f = store::FireRepository(db()).Get(fire_id);
        EXPECT_TRUE(f.ok());
        return f.ok() ? RowState(*f) : "";
    }
    static nlohmann::json Item(std::int64_t fire_id, int attempt, std::int64_t epoch, const std::string& address,
                               const std::string& status = "succeeded") {
        return {{"fire_id", fire_id}, {"attempt", attempt}, {"epoch", epoch},  {"address", address}, {"status", status},
                {"code", "ok"},       {"message", "done"},  {"started_ms", 5}, {"finished_ms", 9}};
    }
    // The outcomes of one callback batch (asserting 200).
    std::vector<std::string> Outcomes(const nlohmann::json& batch, const std::string& token) {
        auto r = Post("/api/v1/callback", batch, token);
        std::vector<std::string> out;
        EXPECT_TRUE(r.ok());
        if (!r.ok()) return out;
        EXPECT_EQ(r->status, 200) << r->body;
        if (r->status != 200) return out;
        const auto body = *r->Json();
        for (const auto& item : body["results"]) out.push_back(item["outcome"]);
        return out;
    }
    static std::string Field(const Result<http::ClientResponse>& r) {
        if (!r.ok()) return "<transport error>";
        auto j = r->Json();
        if (!j.ok() || !j->contains("error")) return "";
        return (*j)["error"].value("field", "");
    }

    net::thread_pool db_pool_{2};
    std::atomic<int> wakes_{0};  // the routes' calls of wake_masters
    std::mutex applied_mu_;
    std::vector<std::vector<std::int64_t>> applied_;  // the routes' calls of results_applied
    std::vector<std::vector<std::int64_t>> Applied() {
        std::lock_guard lock(applied_mu_);
        return applied_;
    }
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
    // The answer names what this node's routes accept beyond the base protocol.
    EXPECT_EQ((*r->Json())["capabilities"], nlohmann::json::array({"result-traceparent"})) << r->body;

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
    ASSERT_TRUE(fires.Transition(running, {model::FireStatus::kPending}, model::FireStatus::kRunning).ok());
    const auto dispatching = InsertFire(1);
    ASSERT_TRUE(fires.Transition(dispatching, {model::FireStatus::kPending}, model::FireStatus::kDispatching).ok());

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
    EXPECT_EQ(results[3]["outcome"], "stale_attempt");

    auto ok = fires.Get(running);
    EXPECT_EQ(ok->status, model::FireStatus::kSucceeded);
    EXPECT_EQ(ok->result_message, "done");
    EXPECT_EQ(ok->result_code, 0);
    EXPECT_EQ(ok->finished_at, 9);
    EXPECT_FALSE(ok->followup);  // a success of a manual job: nothing for the master to do
    auto failed = fires.Get(dispatching);
    EXPECT_EQ(failed->status, model::FireStatus::kFailed);
    EXPECT_TRUE(failed->followup);  // the master decides on a retry
    EXPECT_EQ(failed->started_at, std::nullopt);
    // The process hears of the applied ones only (a trigger node's slave drops their `running`
    // records).
    EXPECT_EQ(Applied(), (std::vector<std::vector<std::int64_t>>{{running, dispatching}}));

    // The SDK resends after a lost response: the same results are duplicates, nothing changes.
    auto again = Post("/api/v1/callback", nlohmann::json::array({batch[0], batch[1]}));
    EXPECT_EQ((*again->Json())["results"][0]["outcome"], "duplicate");
    EXPECT_EQ((*again->Json())["results"][1]["outcome"], "duplicate");
    EXPECT_EQ(Applied().size(), 1U) << "nothing applied: nothing to tell";
    // A different final result for a finished fire is a conflict, not an overwrite.
    auto late =
        Post("/api/v1/callback", nlohmann::json::array({{{"fire_id", running}, {"attempt", 0}, {"status", "killed"}}}));
    EXPECT_EQ((*late->Json())["results"][0]["outcome"], "conflict");
    EXPECT_EQ(fires.Get(running)->status, model::FireStatus::kSucceeded);
}

// A result may carry the traceparent its run ran under (a new SDK, to a node that advertised
// it): logged with the fire's result at debug; one that is not the run's is logged, never
// refused. A result without it (an older SDK) is applied as before.
TEST_P(ExecutorApiTest, AResultsTraceparentIsLoggedWithItAndAMismatchOnlyWarns) {
    const std::int64_t job = CreateJob("traced", "app");
    const std::int64_t right = DispatchedFire(job, 5000, 1, "127.0.0.1:7001");
    const std::int64_t wrong = DispatchedFire(job, 6000, 1, "127.0.0.1:7001");
    const std::int64_t none = DispatchedFire(job, 7000, 1, "127.0.0.1:7001");
    Register("app", "127.0.0.1:7001");
    const protocol::TraceContext run = protocol::FireTrace(right, job, 5000, 0);
    auto traced = [](nlohmann::json item, const std::string& traceparent) {
        item["traceparent"] = traceparent;
        return item;
    };
    const std::string other = "00-" + std::string(32, 'a') + "-" + std::string(16, 'b') + "-01";
    const auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(100);
    sink->set_pattern("%l %v");
    spdlog::default_logger()->sinks().push_back(sink);
    const auto level = spdlog::get_level();
    spdlog::set_level(spdlog::level::debug);
    const auto outcomes = Outcomes(
        nlohmann::json::array({traced(Item(right, 0, 1, "127.0.0.1:7001"), run.TraceParent()),
                               traced(Item(wrong, 0, 1, "127.0.0.1:7001"), other), Item(none, 0, 1, "127.0.0.1:7001")}),
        "secret");
    spdlog::set_level(level);
    spdlog::default_logger()->sinks().pop_back();
    EXPECT_EQ(outcomes, (std::vector<std::string>{"applied", "applied", "applied"}));
    std::string lines;
    for (const auto& line : sink->last_formatted()) lines += line;
    EXPECT_NE(lines.find("fire " + std::to_string(right) + " of job " + std::to_string(job) +
                         " ended succeeded (attempt 0, the result carried its trace)"),
              std::string::npos)
        << lines;
    EXPECT_NE(
        lines.find("fire " + std::to_string(none) + " of job " + std::to_string(job) + " ended succeeded (attempt 0)"),
        std::string::npos)
        << lines;
    EXPECT_NE(lines.find("warning callback: 1 result(s) applied with a traceparent not their run's (fire #" +
                         std::to_string(wrong) + " sent trace " + std::string(32, 'a')),
              std::string::npos)
        << lines;
    EXPECT_EQ(Field(Post("/api/v1/callback",
                         nlohmann::json::array({traced(Item(none, 0, 1, "127.0.0.1:7001"), "00-nonsense")}))),
              "[0].traceparent");
}

// An end applied here (scheduler-web with telemetry on) is the fire's last step: its `ended`
// span and the attempt's root, at the result's finish time; a resent result adds none.
TEST_P(ExecutorApiTest, AnAppliedResultExportsItsEndedSpanAndTheRoot) {
    protocol::testing::ScopedSpanSink spans;
    const std::int64_t job = CreateJob("traced", "app");
    const std::int64_t fire = DispatchedFire(job, 5000, 1, "127.0.0.1:7001");
    Register("app", "127.0.0.1:7001");
    const auto batch = nlohmann::json::array({Item(fire, 0, 1, "127.0.0.1:7001", "failed")});
    ASSERT_EQ(Outcomes(batch, "secret"), std::vector<std::string>{"applied"});
    const auto ended = spans->Named("ended");
    const auto root = spans->Named("fire");
    ASSERT_EQ(ended.size(), 1u);
    ASSERT_EQ(root.size(), 1u);
    const protocol::TraceContext run = protocol::FireTrace(fire, job, 5000, 0);
    EXPECT_EQ(ended[0].trace_id, run.trace_id);
    EXPECT_EQ(ended[0].parent_span_id, run.span_id);
    EXPECT_EQ(ended[0].end_ns, 9'000'000) << "the result's finished_ms";
    EXPECT_TRUE(ended[0].error);
    EXPECT_EQ(root[0].span_id, run.span_id);
    EXPECT_EQ(protocol::testing::IntAttribute(root[0], "sched.fire_id"), fire);
    ASSERT_EQ(Outcomes(batch, "secret"), std::vector<std::string>{"duplicate"});
    EXPECT_EQ(spans->Spans().size(), 2u) << "a duplicate ends nothing";
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

// Least privilege: an executor token acts only for the apps in its scope, on a trigger node's executor
// API (AddExecutorRoutes, which looks tokens up in the table) as on the web module's.
// The masters are woken by a batch that leaves them a follow-up (a failure to retry), once per
// batch, and not by the usual batch: successes of cron jobs, which need nothing from them.
TEST_P(ExecutorApiTest, AFailedResultWakesTheMastersACronJobsSuccessDoesNot) {
    const std::string a1 = "10.0.0.1:7000";
    Register("pay", a1);
    const auto cron = CreateJob("charge", "pay", sched::ScheduleType::kCron);
    const auto retried = CreateJob("refund", "pay", sched::ScheduleType::kCron, 3);
    const auto ok1 = DispatchedFire(cron, 1000, 5, a1);
    const auto ok2 = DispatchedFire(cron, 2000, 5, a1);
    ASSERT_EQ(Outcomes({Item(ok1, 0, 5, a1), Item(ok2, 0, 5, a1)}, "secret"),
              (std::vector<std::string>{"applied", "applied"}));
    EXPECT_EQ(wakes_.load(), 0);

    const auto failed = DispatchedFire(retried, 1000, 5, a1);
    const auto failed2 = DispatchedFire(retried, 2000, 5, a1);
    ASSERT_EQ(Outcomes({Item(failed, 0, 5, a1, "failed"), Item(failed2, 0, 5, a1, "failed")}, "secret"),
              (std::vector<std::string>{"applied", "applied"}));
    EXPECT_EQ(wakes_.load(), 1);
    // The same results again: duplicates, nothing new for the masters.
    ASSERT_EQ(Outcomes(nlohmann::json::array({Item(failed, 0, 5, a1, "failed")}), "secret"),
              (std::vector<std::string>{"duplicate"}));
    EXPECT_EQ(wakes_.load(), 1);
}

// job_last_success as the results path leaves it: a job's latest success (not its failures),
// written by the process that applied it, the first after a quiet window at once.
TEST_P(ExecutorApiTest, AnAppliedSuccessIsRecordedAsItsJobsLastSuccess) {
    const std::string a1 = "10.0.0.1:7000";
    Register("pay", a1);
    const auto job = CreateJob("charge", "pay", sched::ScheduleType::kCron);
    const auto other = CreateJob("refund", "pay", sched::ScheduleType::kCron);
    const auto ok = DispatchedFire(job, 1000, 5, a1);
    const auto failed = DispatchedFire(other, 1000, 5, a1);
    auto success = Item(ok, 0, 5, a1);
    success["finished_ms"] = 1'700'000'000'123;
    auto failure = Item(failed, 0, 5, a1, "failed");
    failure["finished_ms"] = 1'700'000'000'456;
    ASSERT_EQ(Outcomes({success, failure}, "secret"), (std::vector<std::string>{"applied", "applied"}));
    EXPECT_TRUE(WaitFor([&] { return RecordedSuccess(job) == 1'700'000'000'123; }))
        << "recorded: " << RecordedSuccess(job).value_or(-1);
    EXPECT_EQ(RecordedFire(job), ok) << "with its fire, the no_success alert's key";
    EXPECT_EQ(RecordedSuccess(other), std::nullopt) << "a failure is no success";
}

// The writer behind it: a job's first success at once, its later ones within a window together
// at the window's end, each job's latest; a write that failed (no database) is tried again a
// window later.
TEST_P(ExecutorApiTest, LastSuccessesAreWrittenOncePerWindowAndAFailedWriteIsTriedAgain) {
    const auto job = CreateJob("charge", "pay");
    const auto other = CreateJob("refund", "pay");
    auto asked = std::make_shared<std::atomic<int>>(0);  // the writes tried
    const auto provider = [asked, db = pool_db_]() -> std::shared_ptr<db::Database> {
        return ++*asked == 1 ? nullptr : db;  // the first write finds no database
    };
    auto writer = std::make_shared<impl::LastSuccessWriter>(provider, db_pool_, std::chrono::milliseconds(1500));
    sched::testing::IoThread io;
    const net::any_io_executor ex = io.io.get_executor();

    writer->Add({{job, 100}}, ex);
    ASSERT_TRUE(WaitFor([&] { return RecordedSuccess(job) == 100; })) << "tried again after the failure";
    EXPECT_EQ(asked->load(), 2);

    const int before = asked->load();
    for (int k = 1; k <= 50; ++k) writer->Add({{job, 100 + k, 1000 + k}, {other, 1000 - k, 2000 + k}}, ex);
    ASSERT_TRUE(WaitFor([&] { return RecordedSuccess(job) == 150 && RecordedSuccess(other) == 999; }))
        << RecordedSuccess(job).value_or(-1) << " " << RecordedSuccess(other).value_or(-1);
    EXPECT_EQ(RecordedFire(job), 1050) << "each job's latest finish with its own fire";
    EXPECT_EQ(RecordedFire(other), 2001) << "the latest finish, not the last added";
    EXPECT_LE(asked->load() - before, 3)
        << "100 successes within a window: the new job's first at once, the rest at the turn (which may split them)";
    EXPECT_EQ(writer->waiting(), 0U);
}

TEST_P(ExecutorApiTest, AnAppScopedExecutorTokenActsOnlyForItsApps) {
    const auto pay = StoreToken("sched_pay", store::Role::kExecutor, {"pay"});
    const nlohmann::json pay_beat = {{"app", "pay"}, {"address", "10.0.0.1:7000"}, {"handlers", {"echo"}}};
    const nlohmann::json shop_beat = {{"app", "shop"}, {"address", "10.0.0.9:7000"}, {"handlers", {"echo"}}};

    EXPECT_EQ(Post("/api/v1/registry/heartbeat", pay_beat, pay)->status, 200);
    auto foreign = Post("/api/v1/registry/heartbeat", shop_beat, pay);
    EXPECT_EQ(foreign->status, 403) << foreign->body;
    EXPECT_EQ(Field(foreign), "app");
    EXPECT_NE(foreign->body.find("shop"), std::string::npos) << foreign->body;
    EXPECT_TRUE(store::ExecutorRepository(db()).List("shop")->empty());

    // Another app's instance (registered with the cluster token) cannot be deregistered.
    EXPECT_EQ(Post("/api/v1/registry/heartbeat", shop_beat)->status, 200);
    auto dereg = Post("/api/v1/registry/deregister", {{"app", "shop"}, {"address", "10.0.0.9:7000"}}, pay);
    EXPECT_EQ(dereg->status, 403);
    EXPECT_EQ(Field(dereg), "app");
    EXPECT_EQ(store::ExecutorRepository(db()).List("shop")->size(), 1u);
    EXPECT_EQ(Post("/api/v1/registry/deregister", {{"app", "pay"}, {"address", "10.0.0.1:7000"}}, pay)->status, 200);

    // Locks: only in its apps' namespaces.
    auto lock = Post("/api/v1/locks/k/acquire", {{"app", "shop"}, {"lease_ms", 5000}}, pay);
    EXPECT_EQ(lock->status, 403);
    EXPECT_EQ(Field(lock), "app");
    EXPECT_EQ(Post("/api/v1/locks/k/acquire", {{"app", "pay"}, {"lease_ms", 5000}}, pay)->status, 200);

    // A token that is not in the table, or revoked, or of a people's role, gets nowhere.
    EXPECT_EQ(Post("/api/v1/registry/heartbeat", pay_beat, "sched_unknown")->status, 401);
    const auto viewer = StoreToken("sched_viewer", store::Role::kViewer);
    EXPECT_EQ(Post("/api/v1/registry/heartbeat", pay_beat, viewer)->status, 403);
}

TEST_P(ExecutorApiTest, AResultIsAppliedOnlyForTheDispatchItAnswers) {
    const auto pay = StoreToken("sched_pay", store::Role::kExecutor, {"pay"});
    const auto pay_job = CreateJob("charge", "pay");
    const auto shop_job = CreateJob("restock", "shop");
    Register("pay", "10.0.0.1:7000");
    Register("pay", "10.0.0.2:7000");
    Register("shop", "10.0.0.9:7000");
    const auto fire = DispatchedFire(pay_job, 1000, 5, "10.0.0.1:7000");
    const auto shop_fire = DispatchedFire(shop_job, 1000, 5, "10.0.0.9:7000");
    const auto before = State(fire);
    const auto shop_before = State(shop_fire);

    const std::vector<std::string> refused = {"forbidden", "stale_attempt", "stale_epoch", "wrong_executor",
                                              "not_found"};
    EXPECT_EQ(Outcomes(nlohmann::json::array({Item(shop_fire, 0, 5, "10.0.0.9:7000"), Item(fire, 1, 5, "10.0.0.1:7000"),
                                              Item(fire, 0, 4, "10.0.0.1:7000"), Item(fire, 0, 5, "10.0.0.2:7000"),
                                              Item(987654, 0, 5, "10.0.0.1:7000")}),
                       pay),
              refused);
    EXPECT_EQ(State(fire), before);
    EXPECT_EQ(State(shop_fire), shop_before);

    // An app-scoped token must name the dispatch and the instance.
    auto no_epoch = Item(fire, 0, 5, "10.0.0.1:7000");
    no_epoch.erase("epoch");
    auto r = Post("/api/v1/callback", nlohmann::json::array({no_epoch}), pay);
    EXPECT_EQ(r->status, 400);
    EXPECT_EQ(Field(r), "[0].epoch");
    auto no_address = Item(fire, 0, 5, "10.0.0.1:7000");
    no_address.erase("address");
    r = Post("/api/v1/callback", nlohmann::json::array({no_address}), pay);
    EXPECT_EQ(r->status, 400);
    EXPECT_EQ(Field(r), "[0].address");
    EXPECT_EQ(State(fire), before);

    EXPECT_EQ(Outcomes(nlohmann::json::array({Item(fire, 0, 5, "10.0.0.1:7000")}), pay),
              std::vector<std::string>{"applied"});
    auto done = store::FireRepository(db()).Get(fire);
    EXPECT_EQ(done->status, model::FireStatus::kSucceeded);
    EXPECT_EQ(done->result_message, "done");
    EXPECT_EQ(Outcomes(nlohmann::json::array({Item(fire, 0, 5, "10.0.0.1:7000")}), pay),
              std::vector<std::string>{"duplicate"});
}

// A fast handler's result can arrive before the slave recorded `running` and the executor's
// address: it is accepted from a registered instance of the fire's app only, records that
// address, and the slave's late `running` then changes nothing.
TEST_P(ExecutorApiTest, AResultBeforeTheSlaveRecordedRunningComesFromAnInstanceOfTheApp) {
    const auto pay = StoreToken("sched_pay", store::Role::kExecutor, {"pay"});
    const auto pay_job = CreateJob("charge", "pay");
    Register("pay", "10.0.0.1:7000");
    Register("shop", "10.0.0.9:7000");
    const auto fire = DispatchedFire(pay_job, 1000, 5, std::nullopt);
    const auto before = State(fire);

    EXPECT_EQ(Outcomes(nlohmann::json::array({Item(fire, 0, 5, "10.0.0.7:7000"), Item(fire, 0, 5, "10.0.0.9:7000"),
                                              Item(fire, 0, 6, "10.0.0.1:7000")}),
                       pay),
              (std::vector<std::string>{"wrong_executor", "wrong_executor", "stale_epoch"}));
    EXPECT_EQ(State(fire), before);

    EXPECT_EQ(Outcomes(nlohmann::json::array({Item(fire, 0, 5, "10.0.0.1:7000", "failed")}), pay),
              std::vector<std::string>{"applied"});
    auto ended = store::FireRepository(db()).Get(fire);
    EXPECT_EQ(ended->status, model::FireStatus::kFailed);
    EXPECT_EQ(ended->executor_address, "10.0.0.1:7000");
    // The slave's record of the 202 comes late and loses the CAS.
    EXPECT_EQ(store::FireRepository(db())
                  .Transition(fire, {model::FireStatus::kDispatching}, model::FireStatus::kRunning,
                              {.executor_address = "10.0.0.1:7000"})
                  .code(),
              Code::kAborted);
    EXPECT_EQ(store::FireRepository(db()).Get(fire)->status, model::FireStatus::kFailed);
}

// The same race inside one callback: the slave records `running` between the callback's read of
// the fire and its write (MySQL reads do not lock). The result must be applied to the running
// fire, not dropped (found by the chaos suite). SQLite serialises writers, so there the race
// cannot happen.
TEST_P(ExecutorApiTest, AResultRacingTheSlavesRecordOfRunningIsStillApplied) {
    if (db().backend() != db::Backend::kMySql) GTEST_SKIP() << "SQLite write transactions cannot interleave";
    const auto pay_job = CreateJob("charge", "pay");
    Register("pay", "10.0.0.1:7000");
    const auto fire = DispatchedFire(pay_job, 1000, 5, std::nullopt);
    bool raced = false;
    const auto race_then_allow = [&](const std::string&) {
        if (!raced) {
            raced = true;  // another connection: the slave's autocommit CAS
            EXPECT_TRUE(store::FireRepository(*pool_db_)
                            .Transition(fire, {model::FireStatus::kDispatching}, model::FireStatus::kRunning,
                                        {.executor_address = "10.0.0.1:7000", .started_at = 2})
                            .ok());
        }
        return true;
    };
    store::ExecutorResult result{.fire_id = fire,
                                 .attempt = 0,
                                 .epoch = 5,
                                 .address = "10.0.0.1:7000",
                                 .status = model::FireStatus::kSucceeded,
                                 .finished_ms = 9};
    auto outcome = db().InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
        return store::FireRepository::ApplyResult(s, result, race_then_allow);
    });
    ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
    EXPECT_TRUE(raced);
    EXPECT_EQ(*outcome, store::ResultOutcome::kApplied);
    EXPECT_EQ(store::FireRepository(db()).Get(fire)->status, model::FireStatus::kSucceeded);
}

// Executor tokens from before app scopes (migration 002 gives them "*") keep working for every
// app, with older SDKs that send neither epoch nor address.
TEST_P(ExecutorApiTest, ALegacyExecutorTokenStillActsForEveryApp) {
    const auto legacy = StoreToken("sched_legacy", store::Role::kExecutor, {"x"});
    ASSERT_TRUE(db().Run([](soci::session& s) { s << "UPDATE api_token SET app_scope = NULL"; }).ok());
    EXPECT_EQ(store::TokenRepository(db()).List()->front().apps, std::vector<std::string>{"*"});
    const auto shop_job = CreateJob("restock", "shop");
    const auto fire = DispatchedFire(shop_job, 1000, 5, "10.0.0.9:7000");
    EXPECT_EQ(Post("/api/v1/registry/heartbeat", {{"app", "any"}, {"address", "h:1"}, {"handlers", {"echo"}}}, legacy)
                  ->status,
              200);
    EXPECT_EQ(Outcomes(nlohmann::json::array({{{"fire_id", fire}, {"attempt", 0}, {"status", "succeeded"}}}), legacy),
              std::vector<std::string>{"applied"});
}

TEST_P(ExecutorApiTest, RegistryAndCallbackBodiesAreStrict) {
    const nlohmann::json beat = {{"app", "pay"}, {"address", "10.0.0.1:7000"}, {"handlers", {"echo"}}};
    const auto field_of = [&](const std::string& path, const nlohmann::json& body) {
        auto r = Post(path, body);
        EXPECT_EQ(r->status, 400) << path << " " << body.dump() << " -> " << r->body;
        return Field(r);
    };
    auto typo = beat;
    typo["capacityy"] = 3;
    EXPECT_EQ(field_of("/api/v1/registry/heartbeat", typo), "capacityy");
    for (const std::string& bad : std::vector<std::string>{"nowhere", "host:0", "host:99999", ":80", "a b:80", "h:80/x",
                                                           std::string(300, 'a') + ":1"}) {
        auto b = beat;
        b["address"] = bad;
        EXPECT_EQ(field_of("/api/v1/registry/heartbeat", b), "address") << bad;
    }
    auto many = beat;
    many["handlers"] = std::vector<std::string>(1001, "h");
    EXPECT_EQ(field_of("/api/v1/registry/heartbeat", many), "handlers");
    EXPECT_EQ(field_of("/api/v1/registry/deregister", {{"app", "pay"}, {"address", "h:1"}, {"force", true}}), "force");
    auto long_app = beat;
    long_app["app"] = std::string(192, 'a');
    EXPECT_EQ(field_of("/api/v1/registry/heartbeat", long_app), "app");
    EXPECT_EQ(field_of("/api/v1/registry/deregister", {{"app", std::string(192, 'a')}, {"address", "h:1"}}), "app");
    EXPECT_EQ(field_of("/api/v1/callback",
                       nlohmann::json::array({{{"fire_id", 1}, {"attempt", 0}, {"status", "failed"}, {"bogus", 1}}})),
              "[0].bogus");
    EXPECT_EQ(field_of("/api/v1/callback", nlohmann::json::array({Item(1, 0, 1, "not an address")})), "[0].address");
    EXPECT_TRUE(store::ExecutorRepository(db()).List()->empty());
    // What the SDK sends is accepted as is.
    EXPECT_EQ(Post("/api/v1/registry/heartbeat",
                   {{"app", "pay"}, {"address", "[::1]:7000"}, {"handlers", {"echo"}}, {"capacity", 4}, {"running", 1}})
                  ->status,
              200);
}

TEST_P(ExecutorApiTest, ACallbackStoresItsLogAndBoundsIt) {
    const auto running = InsertFire();
    store::FireRepository fires(db());
    ASSERT_TRUE(fires.Transition(running, {model::FireStatus::kPending}, model::FireStatus::kRunning).ok());
    const auto stored = [&](std::int64_t id) {
        return *db().Run([&](soci::session& s) { return store::FireLogs::Find(s, id); });
    };
    nlohmann::json item = {{"fire_id", running}, {"attempt", 0}, {"status", "succeeded"}, {"code", "ok"}};

    // Over the bound: 400 naming the field, and nothing applied.
    auto too_long = item;
    too_long["log"] = std::string(store::FireLogs::kMaxLogBytes + 1, 'x');
    auto r = Post("/api/v1/callback", nlohmann::json::array({too_long}));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 400) << r->body;
    EXPECT_EQ(Field(r), "[0].log");
    auto negative = item;
    negative["log"] = "x";
    negative["log_truncated_bytes"] = -1;
    EXPECT_EQ(Field(Post("/api/v1/callback", nlohmann::json::array({negative}))), "[0].log_truncated_bytes");
    auto not_text = item;
    not_text["log"] = 5;
    EXPECT_EQ(Field(Post("/api/v1/callback", nlohmann::json::array({not_text}))), "[0].log");
    EXPECT_EQ(fires.Get(running)->status, model::FireStatus::kRunning);
    EXPECT_FALSE(stored(running));

    auto with_log = item;
    with_log["log"] = std::string("first\nsecond \u00e9\nthird");
    with_log["log_truncated_bytes"] = 1234;
    EXPECT_EQ(Outcomes(nlohmann::json::array({with_log}), "secret"), std::vector<std::string>{"applied"});
    const auto log = stored(running);
    ASSERT_TRUE(log);
    EXPECT_EQ(log->log, "first\nsecond \u00e9\nthird");
    EXPECT_EQ(log->truncated_bytes, 1234);
    // A resend is a duplicate: the stored log stays as it was.
    with_log["log"] = "other";
    EXPECT_EQ(Outcomes(nlohmann::json::array({with_log}), "secret"), std::vector<std::string>{"duplicate"});
    EXPECT_EQ(stored(running)->log, "first\nsecond \u00e9\nthird");
}

SCHED_DB_TEST_SUITE(ExecutorApiTest);

}  // namespace
}  // namespace sched::web
