#include "sched/client/executor.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "sched/client/testing/fake_web.hpp"
#include "sched/http/testing/test_server.hpp"
#include "sched/protocol/registry.hpp"

#include "executor_fixture.hpp"
#include "fast_executor_options.hpp"

namespace sched::client {
namespace {

using namespace std::chrono_literals;
using http::testing::ErrorOf;
using http::testing::WaitFor;
using testing::FakeWeb;
using testing::kToken;
using testing::SignedRequest;
using testing::TestSigningKey;

Status Echo(JobContext& ctx) {
    ctx.Log("params: {}", ctx.params().dump());
    ctx.SetResultMessage("echo " + ctx.params().dump());
    return Status::Ok();
}

// A handler that holds its run until opened or cancelled, recording order and overlap.
struct Gate {
    std::atomic<int> entered{0};
    std::atomic<int> running{0};
    std::atomic<int> max_running{0};
    std::atomic<bool> open{false};
    std::mutex mu;
    std::vector<std::int64_t> order;

    Handler AsHandler() {
        return [this](JobContext& ctx) -> Status {
            {
                std::lock_guard lock(mu);
                order.push_back(ctx.fire_id());
            }
            const int now = ++running;
            int seen = max_running.load();
            while (now > seen && !max_running.compare_exchange_weak(seen, now)) {
            }
            ++entered;
            while (!open.load() && !ctx.cancelled()) ctx.SleepFor(2ms);
            --running;
            return ctx.cancelled() ? Cancelled("stopped") : Status::Ok();
        };
    }
    std::vector<std::int64_t> Order() {
        std::lock_guard lock(mu);
        return order;
    }
};

class ExecutorTest : public testing::ExecutorFixture {
  protected:
    ExecutorTest() : ExecutorFixture("sched-executor-test-") {}
    void ReleaseHandlers() override { gate_.open = true; }

    ExecutorOptions Options(std::vector<std::string> endpoints = {}) {
        return testing::FastExecutorOptions(
            endpoints.empty() ? std::vector<std::string>{web_->Url()} : std::move(endpoints), kToken, spool_dir_);
    }

    Executor& Start(ExecutorOptions options) {
        executor_ = std::make_unique<Executor>(std::move(options));
        executor_->Handle("echo", Echo);
        executor_->Handle("fail", [](JobContext&) { return Status(Code::kInternal, "disk full"); });
        executor_->Handle("throw", [](JobContext&) -> Status { throw std::runtime_error("boom"); });
        executor_->Handle("count", [this](JobContext&) {
            ++count_calls_;
            return Status::Ok();
        });
        executor_->Handle("gate", gate_.AsHandler());
        executor_->Handle("sleep", [](JobContext& ctx) {
            return ctx.SleepFor(std::chrono::milliseconds(ctx.params().value("ms", 0))) ? Status::Ok()
                                                                                        : Cancelled("stopped");
        });
        // Notes how many runs had ended (their results counted) when it started.
        executor_->Handle("ends_seen", [this](JobContext&) {
            std::lock_guard lock(ends_seen_mu_);
            ends_seen_.push_back(executor_->Stats().succeeded);
            return Status::Ok();
        });
        executor_->Handle("chatty", [](JobContext& ctx) {
            const int lines = ctx.params().value("lines", 0);
            for (int i = 0; i < lines; ++i) ctx.Log("line {:03} of {}", i, lines);
            return Status::Ok();
        });
        executor_->Start();
        // Nodes' calls are verified against the keys of the first answered heartbeat.
        EXPECT_TRUE(WaitFor([&] { return executor_->Stats().signing_keys > 0; }));
        return *executor_;
    }

    std::string Url(const std::string& path) const {
        return "http://127.0.0.1:" + std::to_string(executor_->port()) + path;
    }
    // Signed as a node signs (TestSigningKey, which FakeWeb hands out), with no bearer token.
    Result<http::ClientResponse> Post(const std::string& path, const nlohmann::json& body) {
        return client_.Send(SignedRequest(TestSigningKey(), http::Method::kPost, Url(path), body.dump()));
    }
    Result<http::ClientResponse> Get(const std::string& path) {
        return client_.Send(SignedRequest(TestSigningKey(), http::Method::kGet, Url(path)));
    }
    static nlohmann::json RunBody(std::int64_t fire_id, std::int64_t job_id, const std::string& handler,
                                  const nlohmann::json& extra = nlohmann::json::object()) {
        nlohmann::json body = {{"fire_id", fire_id}, {"job_id", job_id},   {"attempt", 0},
                               {"epoch", 1},         {"handler", handler}, {"params", nlohmann::json::object()}};
        body.update(extra);
        return body;
    }
    int Run(std::int64_t fire_id, std::int64_t job_id, const std::string& handler,
            const nlohmann::json& extra = nlohmann::json::object()) {
        auto r = Post("/v1/run", RunBody(fire_id, job_id, handler, extra));
        return r.ok() ? r->status : -1;
    }
    // The one result for `fire_id`, once it arrived at `web` (null if it did not within 10 s).
    static nlohmann::json ResultOf(const FakeWeb& web, std::int64_t fire_id) {
        if (!WaitFor([&] { return !web.ResultsFor(fire_id).empty(); })) return nullptr;
        return web.ResultsFor(fire_id).front();
    }
    nlohmann::json ResultOf(std::int64_t fire_id) { return ResultOf(*web_, fire_id); }

    // The executor's handlers use these until TearDown() stops it.
    Gate gate_;
    std::atomic<int> count_calls_{0};
    std::mutex ends_seen_mu_;
    std::vector<std::uint64_t> ends_seen_;
};

TEST_F(ExecutorTest, TheResultCarriesTheLogsTailBoundedWithTheCutCounted) {
    auto options = Options();
    options.log_tail_bytes = 200;
    options.log_max_lines = 5;  // GET /v1/log keeps the first lines; the tail still has the last
    Start(options);
    ASSERT_EQ(Run(1, 10, "chatty", {{"params", {{"lines", 50}}}}), 202);
    const auto result = ResultOf(1);
    ASSERT_FALSE(result.is_null());
    ASSERT_TRUE(result.contains("log")) << result.dump();
    const std::string log = result["log"];
    EXPECT_LE(log.size(), 200u);
    EXPECT_NE(log.find("line 049 of 50"), std::string::npos) << log;
    EXPECT_EQ(log.find("line 000"), std::string::npos) << log;
    EXPECT_NE(log.find("finished: succeeded"), std::string::npos) << log;
    EXPECT_EQ(log.back(), 'd');  // no trailing newline: lines are joined
    // 53 lines of at least 25 bytes each (timestamp included) were written; what is not in the
    // tail is counted.
    const auto cut = result["log_truncated_bytes"].get<std::int64_t>();
    EXPECT_GT(cut + static_cast<std::int64_t>(log.size()), 53 * 25);
    EXPECT_GT(cut, 0);

    // A short log goes whole, nothing cut.
    ASSERT_EQ(Run(2, 10, "chatty", {{"params", {{"lines", 1}}}}), 202);
    const auto small = ResultOf(2);
    ASSERT_TRUE(small.contains("log")) << small.dump();
    EXPECT_EQ(small["log_truncated_bytes"], 0);
    const std::string small_log = small["log"];
    EXPECT_NE(small_log.find("accepted: handler chatty"), std::string::npos) << small_log;
    EXPECT_NE(small_log.find("line 000 of 1"), std::string::npos) << small_log;
}

TEST_F(ExecutorTest, AFireKeepsItsLogTailWhenMoreFiresRunThanTheLogsRetained) {
    auto options = Options();
    options.log_tail_bytes = 200;
    options.log_retained_fires = 1;
    Start(options);
    ASSERT_EQ(Run(1, 10, "gate"), 202);  // keeps running: its log is kept over the bound
    ASSERT_TRUE(WaitFor([&] { return gate_.entered == 1; }));
    // Fire 2 finishes while fire 1 runs: two logs, one retained. The tail is read before the
    // log may be forgotten, not after.
    ASSERT_EQ(Run(2, 11, "chatty", {{"params", {{"lines", 1}}}}), 202);
    const auto result = ResultOf(2);
    ASSERT_FALSE(result.is_null());
    ASSERT_TRUE(result.contains("log")) << result.dump();
    EXPECT_NE(result["log"].get<std::string>().find("line 000 of 1"), std::string::npos) << result.dump();
    gate_.open = true;
}

TEST_F(ExecutorTest, AHandlerThatWritesNoLineSendsNoLog) {
    Start(Options());
    ASSERT_EQ(Run(1, 10, "count"), 202);
    const auto result = ResultOf(1);
    ASSERT_FALSE(result.is_null());
    EXPECT_EQ(result["status"], "succeeded") << result.dump();
    // The SDK's own lines (accepted, started, finished) say what the fire's row says: no log
    // row is stored for them.
    EXPECT_FALSE(result.contains("log")) << result.dump();
    EXPECT_FALSE(result.contains("log_truncated_bytes")) << result.dump();
    // GET /v1/log still shows them while the executor remembers the fire.
    auto log = Get("/v1/log?fire_id=1");
    ASSERT_TRUE(log.ok());
    ASSERT_EQ(log->status, 200);
    const auto page = nlohmann::json::parse(log->body);
    ASSERT_EQ(page["lines"].size(), 3u) << page.dump();
    EXPECT_NE(page["lines"][2].get<std::string>().find("finished: succeeded"), std::string::npos) << page.dump();
}

TEST_F(ExecutorTest, LogTailBytesZeroSendsNoLog) {
    auto options = Options();
    options.log_tail_bytes = 0;
    Start(options);
    ASSERT_EQ(Run(1, 10, "echo"), 202);
    const auto result = ResultOf(1);
    ASSERT_FALSE(result.is_null());
    EXPECT_FALSE(result.contains("log")) << result.dump();
    EXPECT_FALSE(result.contains("log_truncated_bytes")) << result.dump();
}

TEST_F(ExecutorTest, RunsAHandlerAndDeliversItsResultAndLog) {
    Start(Options());
    auto accepted = Post("/v1/run", RunBody(1, 10, "echo", {{"params", {{"x", 1}}}, {"attempt", 2}, {"epoch", 3}}));
    ASSERT_TRUE(accepted.ok());
    EXPECT_EQ(accepted->status, 202);
    EXPECT_EQ(nlohmann::json::parse(accepted->body)["state"], "running");

    const auto result = ResultOf(1);
    ASSERT_FALSE(result.is_null());
    EXPECT_EQ(result["status"], "succeeded");
    EXPECT_EQ(result["code"], "ok");
    EXPECT_EQ(result["message"], R"(echo {"x":1})");
    EXPECT_EQ(result["attempt"], 2);
    EXPECT_EQ(result["epoch"], 3);
    EXPECT_LE(result["started_ms"].get<std::int64_t>(), result["finished_ms"].get<std::int64_t>());

    auto log = Get("/v1/log?fire_id=1");
    ASSERT_TRUE(log.ok());
    ASSERT_EQ(log->status, 200);
    const auto page = nlohmann::json::parse(log->body);
    ASSERT_EQ(page["lines"].size(), 4u) << page.dump();
    EXPECT_NE(page["lines"][0].get<std::string>().find("accepted: handler echo, attempt 2, epoch 3"),
              std::string::npos);
    EXPECT_NE(page["lines"][2].get<std::string>().find(R"(params: {"x":1})"), std::string::npos);
    EXPECT_NE(page["lines"][3].get<std::string>().find("finished: succeeded"), std::string::npos);
    EXPECT_TRUE(page["finished"].get<bool>());
    EXPECT_EQ(page["to_line"], 4);
    auto tail = nlohmann::json::parse(Get("/v1/log?fire_id=1&from_line=3")->body);
    EXPECT_EQ(tail["lines"].size(), 1u);
    EXPECT_EQ(Get("/v1/log?fire_id=99")->status, 404);
    EXPECT_EQ(ErrorOf(Get("/v1/log?fire_id=abc"))["field"], "fire_id");
    EXPECT_EQ(ErrorOf(Get("/v1/log"))["field"], "fire_id");
    EXPECT_EQ(ErrorOf(Get("/v1/log?fire_id=1&from_line=-1"))["field"], "from_line");
}

TEST_F(ExecutorTest, FailuresAndExceptionsAreReportedAsFailed) {
    Start(Options());
    ASSERT_EQ(Run(1, 10, "fail"), 202);
    ASSERT_EQ(Run(2, 11, "throw"), 202);
    const auto failed = ResultOf(1);
    EXPECT_EQ(failed["status"], "failed");
    EXPECT_EQ(failed["code"], "internal");
    EXPECT_EQ(failed["message"], "disk full");
    const auto threw = ResultOf(2);
    EXPECT_EQ(threw["status"], "failed");
    EXPECT_EQ(threw["message"], "handler threw: boom");
    // Every result names the dispatch it answers and the instance that ran it.
    EXPECT_EQ(failed["epoch"], 1);
    EXPECT_EQ(failed["address"], executor_->address());
}

// Hostile input: a body nested 100k deep or holding 1e309 is a 400 on every JSON route of the SDK,
// never a crash or a 500, and the library's exception text never reaches the caller.
TEST_F(ExecutorTest, HostileJsonOnEveryBodyRouteGets400AndTheExecutorKeepsServing) {
    Start(Options());
    const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
    for (const std::string path : {"/v1/run", "/v1/kill", "/v1/idle-beat"}) {
        for (const std::string& body :
             {R"({"fire_id":1,"params":)" + deep + "}", std::string(R"({"params":{"x":1e309}})")}) {
            // Signed as a node signs: the signature is checked before the body is parsed.
            http::ClientRequest req = SignedRequest(TestSigningKey(), http::Method::kPost, Url(path), body);
            req.headers.Set("Content-Type", "application/json");
            auto r = client_.Send(std::move(req));
            ASSERT_TRUE(r.ok()) << path << ": " << r.status().ToString();
            EXPECT_EQ(r->status, 400) << path << ": " << r->body.substr(0, 200);
            const std::string message = (*r->Json())["error"]["message"];
            EXPECT_TRUE(message.find("nesting deeper than 64 levels") != std::string::npos ||
                        message == "params.x: number out of range (1e309)")
                << path << ": " << message;
            EXPECT_EQ(r->body.find("json.exception"), std::string::npos);
        }
    }
    auto beat = Get("/v1/beat");
    ASSERT_TRUE(beat.ok());
    EXPECT_EQ(beat->status, 200);
}

TEST_F(ExecutorTest, BadRequestsGet4xxNamingTheFieldAndTheExecutorKeepsServing) {
    Start(Options());
    struct Case {
        nlohmann::json body;
        int status;
        const char* field;
    };
    auto without = [](nlohmann::json body, const char* key) {
        body.erase(key);
        return body;
    };
    const std::vector<Case> cases = {
        {without(RunBody(1, 10, "echo"), "fire_id"), 400, "fire_id"},
        {RunBody(1, 10, "echo", {{"fire_id", "one"}}), 400, "fire_id"},
        {RunBody(1, 10, "echo", {{"job_id", -3}}), 400, "job_id"},
        {without(RunBody(1, 10, "echo"), "epoch"), 400, "epoch"},
        {RunBody(1, 10, "echo", {{"handler", 5}}), 400, "handler"},
        {RunBody(1, 10, "echo", {{"timeout_ms", 1.5}}), 400, "timeout_ms"},
        {RunBody(1, 10, "echo", {{"shard_index", 2}, {"shard_total", 2}}), 400, "shard_index"},
        {RunBody(1, 10, "echo", {{"block_strategy", "sometimes"}}), 400, "block_strategy"},
        {RunBody(1, 10, "echo", {{"callback_url", "ftp://x"}}), 400, "callback_url"},
        {RunBody(1, 10, "nope"), 404, "handler"},
        {nlohmann::json::array(), 400, "body"},
    };
    for (const auto& c : cases) {
        auto r = Post("/v1/run", c.body);
        ASSERT_TRUE(r.ok());
        EXPECT_EQ(r->status, c.status) << c.body.dump();
        EXPECT_EQ(ErrorOf(r)["field"], c.field) << c.body.dump() << " -> " << r->body;
    }
    auto bad_json =
        client_.Send(SignedRequest(TestSigningKey(), http::Method::kPost, Url("/v1/run"), R"({"fire_id": 1,)"));
    EXPECT_EQ(bad_json->status, 400);
    EXPECT_EQ(ErrorOf(bad_json)["field"], "body");
    EXPECT_EQ(ErrorOf(Post("/v1/kill", {{"fire_id", "x"}}))["field"], "fire_id");
    EXPECT_EQ(ErrorOf(Post("/v1/idle-beat", nlohmann::json::object()))["field"], "job_id");

    EXPECT_EQ(Run(1, 10, "echo"), 202);
    EXPECT_EQ(ResultOf(1)["status"], "succeeded");
    EXPECT_EQ(executor_->Stats().accepted, 1u);
}

TEST_F(ExecutorTest, AKillsReasonIsReadLenientlyButBoundedAndTyped) {
    Start(Options());
    ASSERT_EQ(Run(1, 10, "gate"), 202);
    ASSERT_TRUE(WaitFor([&] { return gate_.entered == 1; }));
    for (const nlohmann::json& reason : {nlohmann::json(7), nlohmann::json(std::string(65, 't')),
                                         nlohmann::json::array({"timeout"}), nlohmann::json::object()}) {
        auto r = Post("/v1/kill", {{"fire_id", 1}, {"reason", reason}});
        EXPECT_EQ(r->status, 400) << reason.dump();
        EXPECT_EQ(ErrorOf(r)["field"], "reason") << reason.dump();
    }
    EXPECT_EQ(gate_.running.load(), 1);
    // A reason this executor does not know (a newer node's) is still a kill.
    auto newer = Post("/v1/kill", {{"fire_id", 1}, {"reason", "drain"}, {"by", "someone"}});
    EXPECT_EQ(newer->status, 200);
    const auto result = ResultOf(1);
    EXPECT_EQ(result["status"], "killed");
    EXPECT_EQ(result["message"], "killed by request");
}

// ---- Request signatures (docs/protocol.md "Security") ----

// Every route a node calls: each takes only a signed call addressed to this instance.
const std::pair<http::Method, std::string> kSignedRoutes[] = {
    {http::Method::kPost, "/v1/run"}, {http::Method::kPost, "/v1/runs"},      {http::Method::kPost, "/v1/kill"},
    {http::Method::kGet, "/v1/beat"}, {http::Method::kPost, "/v1/idle-beat"}, {http::Method::kGet, "/v1/log?fire_id=1"},
};

TEST_F(ExecutorTest, RefusesUnsignedCallsAndBearerTokensOnEveryRoute) {
    Start(Options());
    const std::string run = RunBody(1, 10, "count").dump();
    for (const auto& [method, path] : kSignedRoutes) {
        http::ClientRequest unsigned_request{.method = method, .url = Url(path), .body = run};
        EXPECT_EQ(client_.Send(unsigned_request)->status, 401) << path;
        // Not even the executor's own token opens it: nodes never send one.
        http::CallOptions bearer;
        bearer.bearer_token = kToken;
        EXPECT_EQ(client_.Send(unsigned_request, bearer)->status, 401) << path;
    }
    EXPECT_EQ(count_calls_.load(), 0);
    EXPECT_EQ(executor_->Stats().accepted, 0u);
}

TEST_F(ExecutorTest, RefusesReplayedRetimedReBodiedAndRetargetedRuns) {
    Start(Options());
    const std::string body = RunBody(1, 10, "count").dump();
    const std::int64_t now = testing::WallMs();
    // Captured from an earlier dispatch, replayed outside the 30 s window (either side).
    for (const std::int64_t ts : {now - 31'000, now + 31'000}) {
        auto old = client_.Send(SignedRequest(TestSigningKey(), http::Method::kPost, Url("/v1/run"), body, ts));
        EXPECT_EQ(old->status, 401);
        EXPECT_NE(ErrorOf(old)["message"].get<std::string>().find("X-Sched-Timestamp"), std::string::npos);
    }
    // Re-timed: the old signature with a fresh timestamp.
    auto retimed = SignedRequest(TestSigningKey(), http::Method::kPost, Url("/v1/run"), body, now - 31'000);
    retimed.headers.Set("X-Sched-Timestamp", std::to_string(now));
    EXPECT_EQ(client_.Send(retimed)->status, 401);
    // Re-bodied: another fire under a valid signature.
    auto rebodied = SignedRequest(TestSigningKey(), http::Method::kPost, Url("/v1/run"), body);
    rebodied.body = RunBody(2, 10, "count").dump();
    EXPECT_EQ(client_.Send(rebodied)->status, 401);
    // Re-targeted: a signed kill sent to /v1/run.
    auto retargeted = SignedRequest(TestSigningKey(), http::Method::kPost, Url("/v1/kill"), body);
    retargeted.url = Url("/v1/run");
    EXPECT_EQ(client_.Send(retargeted)->status, 401);
    EXPECT_EQ(count_calls_.load(), 0);

    // Replayed verbatim inside the window: accepted once, then a duplicate that runs nothing.
    const auto signed_run = SignedRequest(TestSigningKey(), http::Method::kPost, Url("/v1/run"), body);
    EXPECT_EQ(client_.Send(signed_run)->status, 202);
    auto replay = client_.Send(signed_run);
    EXPECT_EQ(replay->status, 202);
    EXPECT_EQ(nlohmann::json::parse(replay->body)["duplicate"], true);
    ASSERT_EQ(ResultOf(1)["status"], "succeeded");
    EXPECT_EQ(count_calls_.load(), 1);
}

// A call captured on its way to another instance of the app verifies (same key), but is
// addressed there: replayed here it would run its fire a second time, unseen by the cluster.
TEST_F(ExecutorTest, RefusesACallAddressedToAnotherInstanceOfItsApp) {
    Start(Options());
    const std::string self = executor_->address();
    const std::string other = "127.0.0.1:1";
    // As nodes address a call (protocol::AddressedTarget), spelled out.
    const auto addressed = [&](const std::string& path, const std::string& to) {
        return Url(path + (path.find('?') == std::string::npos ? "?" : "&") + "instance=" + to);
    };
    const std::string body = RunBody(1, 10, "count").dump();
    const auto elsewhere = SignedRequest(TestSigningKey(), http::Method::kPost, addressed("/v1/run", other), body);
    auto refused = client_.Send(elsewhere);
    EXPECT_EQ(refused->status, 401);
    EXPECT_NE(ErrorOf(refused)["message"].get<std::string>().find(other), std::string::npos) << refused->body;
    for (const auto& [method, path] : kSignedRoutes) {
        EXPECT_EQ(client_.Send(SignedRequest(TestSigningKey(), method, addressed(path, other), "{}"))->status, 401)
            << path;
    }
    // Addressed here: accepted once, its replay a duplicate, as before.
    const auto here = SignedRequest(TestSigningKey(), http::Method::kPost, addressed("/v1/run", self), body);
    EXPECT_EQ(client_.Send(here)->status, 202);
    auto again = client_.Send(here);
    EXPECT_EQ(again->status, 202);
    EXPECT_EQ(nlohmann::json::parse(again->body)["duplicate"], true);
    EXPECT_EQ(client_.Send(SignedRequest(TestSigningKey(), http::Method::kGet, addressed("/v1/beat", self)))->status,
              200);
    // A node older than the addressing names no instance: still served.
    EXPECT_EQ(Run(2, 11, "count"), 202);
    ASSERT_EQ(ResultOf(1)["status"], "succeeded");
    ASSERT_EQ(ResultOf(2)["status"], "succeeded");
    EXPECT_EQ(count_calls_.load(), 2);
}

TEST_F(ExecutorTest, RefusesAnotherAppsKey) {
    Start(Options());
    const protocol::SigningKey other_app{"k-other-app", std::string(64, 'f')};
    auto r = client_.Send(SignedRequest(other_app, http::Method::kPost, Url("/v1/run"), RunBody(1, 10, "echo").dump()));
    EXPECT_EQ(r->status, 401);
    EXPECT_NE(ErrorOf(r)["message"].get<std::string>().find("unknown signing key"), std::string::npos);
    // Our key id, another app's secret.
    const protocol::SigningKey forged{TestSigningKey().id, other_app.secret};
    EXPECT_EQ(client_.Send(SignedRequest(forged, http::Method::kGet, Url("/v1/beat")))->status, 401);
}

TEST_F(ExecutorTest, ChecksTimestampsAgainstTheClusterClockNotItsOwn) {
    // The cluster's (database's) clock is 10 minutes ahead of this host's.
    constexpr std::int64_t kSkew = std::int64_t{10} * 60 * 1000;
    web_->SetClockOffset(kSkew);
    Start(Options());
    ASSERT_TRUE(WaitFor([&] { return std::abs(executor_->Stats().clock_offset_ms - kSkew) < 1000; }));
    const std::string body = RunBody(1, 10, "echo").dump();
    const auto cluster_now = testing::WallMs() + kSkew;
    EXPECT_EQ(
        client_.Send(SignedRequest(TestSigningKey(), http::Method::kPost, Url("/v1/run"), body, cluster_now))->status,
        202);
    // Stamped with this host's clock: 10 minutes off the cluster's.
    EXPECT_EQ(client_.Send(SignedRequest(TestSigningKey(), http::Method::kGet, Url("/v1/beat")))->status, 401);
}

TEST_F(ExecutorTest, AcceptsEveryKeyOfTheLastHeartbeatDuringARotation) {
    Start(Options());
    const protocol::SigningKey next{"k-next", std::string(64, 'a')};
    web_->SetSigningKeys({TestSigningKey(), next});
    ASSERT_TRUE(WaitFor([&] { return executor_->Stats().signing_keys == 2; }));
    EXPECT_EQ(client_.Send(SignedRequest(TestSigningKey(), http::Method::kGet, Url("/v1/beat")))->status, 200);
    EXPECT_EQ(client_.Send(SignedRequest(next, http::Method::kGet, Url("/v1/beat")))->status, 200);
    // The old key retired: refused after the next heartbeat.
    web_->SetSigningKeys({next});
    ASSERT_TRUE(WaitFor([&] {
        return client_.Send(SignedRequest(TestSigningKey(), http::Method::kGet, Url("/v1/beat")))->status == 401;
    }));
    EXPECT_EQ(client_.Send(SignedRequest(next, http::Method::kGet, Url("/v1/beat")))->status, 200);
}

TEST_F(ExecutorTest, RefusesEverythingUntilAHeartbeatDeliveredKeys) {
    web_->Stop();
    executor_ = std::make_unique<Executor>(Options());
    executor_->Handle("echo", Echo);
    executor_->Start();
    auto r = client_.Send(SignedRequest(TestSigningKey(), http::Method::kGet, Url("/v1/beat")));
    EXPECT_EQ(r->status, 401);
    EXPECT_NE(ErrorOf(r)["message"].get<std::string>().find("no signing keys"), std::string::npos);
}

TEST_F(ExecutorTest, KillCancelsARunningHandler) {
    Start(Options());
    ASSERT_EQ(Run(1, 10, "gate"), 202);
    ASSERT_TRUE(WaitFor([&] { return gate_.entered == 1; }));
    auto kill = Post("/v1/kill", {{"fire_id", 1}});
    ASSERT_TRUE(kill.ok());
    EXPECT_EQ(kill->status, 200);
    EXPECT_EQ(nlohmann::json::parse(kill->body)["state"], "running");
    const auto result = ResultOf(1);
    EXPECT_EQ(result["status"], "killed");
    EXPECT_EQ(result["message"], "killed by request");
    EXPECT_EQ(Post("/v1/kill", {{"fire_id", 1}})->status, 404);
}

TEST_F(ExecutorTest, KillRemovesAQueuedRun) {
    Start(Options());
    ASSERT_EQ(Run(1, 10, "gate"), 202);
    ASSERT_EQ(Run(2, 10, "gate"), 202);  // serial: queued behind fire 1
    ASSERT_TRUE(WaitFor([&] { return gate_.entered == 1; }));
    auto kill = Post("/v1/kill", {{"fire_id", 2}});
    EXPECT_EQ(nlohmann::json::parse(kill->body)["state"], "queued");
    EXPECT_EQ(ResultOf(2)["status"], "killed");
    gate_.open = true;
    EXPECT_EQ(ResultOf(1)["status"], "succeeded");
    EXPECT_EQ(gate_.Order(), std::vector<std::int64_t>{1});
}

// The node's watch of the job's timeout asks with reason "timeout": the fire ends `timeout`,
// not `killed` (here the run has no timeout of its own, so the node's is the only clock).
TEST_F(ExecutorTest, AKillForTheJobsTimeoutReportsTimeoutNotKilled) {
    Start(Options());
    ASSERT_EQ(Run(1, 10, "gate"), 202);
    ASSERT_TRUE(WaitFor([&] { return gate_.entered == 1; }));
    auto kill = Post("/v1/kill", {{"fire_id", 1}, {"reason", "timeout"}});
    ASSERT_EQ(kill->status, 200) << kill->body;
    EXPECT_EQ(nlohmann::json::parse(kill->body), (nlohmann::json{{"fire_id", 1}, {"state", "running"}}));
    const auto result = ResultOf(1);
    EXPECT_EQ(result["status"], "timeout");
    EXPECT_EQ(result["code"], "deadline_exceeded");
    EXPECT_EQ(executor_->Stats().timed_out, 1u);
    EXPECT_EQ(executor_->Stats().killed, 0u);
}

// A serial run queued behind the job's running fire: the node's watch began at its dispatch, its
// own timeout begins when its handler starts. The timeout kill leaves it alone, says how long its
// own timeout still gives it, and the run gets the whole of it.
TEST_F(ExecutorTest, ATimeoutKillLeavesARunThatWaitedBehindTheJobsRunningFireToItsOwnTimeout) {
    Start(Options());
    ASSERT_EQ(Run(1, 10, "gate"), 202);
    ASSERT_TRUE(WaitFor([&] { return gate_.entered == 1; }));
    ASSERT_EQ(Run(2, 10, "sleep", {{"timeout_ms", 10000}, {"params", {{"ms", 300}}}}), 202);
    auto queued = Post("/v1/kill", {{"fire_id", 2}, {"reason", "timeout"}});
    ASSERT_EQ(queued->status, 200) << queued->body;
    EXPECT_EQ(nlohmann::json::parse(queued->body),
              (nlohmann::json{{"fire_id", 2}, {"state", "queued"}, {"timeout_in_ms", 10000}}));
    gate_.open = true;
    EXPECT_EQ(ResultOf(1)["status"], "succeeded");
    // Started now: asked again, it counts from the handler's start.
    nlohmann::json started;
    ASSERT_TRUE(WaitFor([&] {
        auto k = Post("/v1/kill", {{"fire_id", 2}, {"reason", "timeout"}});
        if (!k.ok() || k->status != 200) return false;
        started = nlohmann::json::parse(k->body);
        return started.value("timeout_in_ms", 10000) < 10000;
    }));
    EXPECT_EQ(started["state"], "running");
    EXPECT_GT(started["timeout_in_ms"].get<std::int64_t>(), 9000);
    const auto result = ResultOf(2);
    EXPECT_EQ(result["status"], "succeeded") << result.dump();
    EXPECT_GE(result["finished_ms"].get<std::int64_t>() - result["started_ms"].get<std::int64_t>(), 300);
}

TEST_F(ExecutorTest, BeatAndIdleBeatReportState) {
    Start(Options());
    auto beat = Get("/v1/beat");
    ASSERT_TRUE(beat.ok());
    ASSERT_EQ(beat->status, 200);
    const auto b = nlohmann::json::parse(beat->body);
    EXPECT_EQ(b["app"], "test-app");
    EXPECT_EQ(b["address"], "127.0.0.1:" + std::to_string(executor_->port()));
    EXPECT_EQ(b["handlers"],
              (nlohmann::json{"chatty", "count", "echo", "ends_seen", "fail", "gate", "sleep", "throw"}));
    EXPECT_EQ(b["capacity"], 16);
    EXPECT_EQ(b["running"], 0);
    // The beat is the heartbeat plus the highest epoch seen (protocol::BeatAnswer).
    const auto before = protocol::ReadBeatAnswer(b);
    ASSERT_TRUE(before.ok()) << before.error->message;
    EXPECT_EQ(before.value.epoch, 0);

    EXPECT_EQ(Post("/v1/idle-beat", {{"job_id", 10}})->status, 200);
    ASSERT_EQ(Run(1, 10, "gate"), 202);
    const auto after = protocol::ReadBeatAnswer(nlohmann::json::parse(Get("/v1/beat")->body));
    ASSERT_TRUE(after.ok()) << after.error->message;
    EXPECT_EQ(after.value.epoch, 1);
    EXPECT_EQ(after.value.heartbeat.running, 1);
    auto busy = Post("/v1/idle-beat", {{"job_id", 10}});
    EXPECT_EQ(busy->status, 409);
    EXPECT_EQ(ErrorOf(busy)["field"], "job_id");
    EXPECT_EQ(Post("/v1/idle-beat", {{"job_id", 11}})->status, 200);
    EXPECT_EQ(nlohmann::json::parse(Get("/v1/beat")->body)["running"], 1);
    gate_.open = true;
    ASSERT_FALSE(ResultOf(1).is_null());
    EXPECT_EQ(Post("/v1/idle-beat", {{"job_id", 10}})->status, 200);
}

TEST_F(ExecutorTest, SerialRunsOfOneJobQueueAndRunOneAtATimeInOrder) {
    Start(Options());
    ASSERT_EQ(Run(1, 10, "gate"), 202);
    ASSERT_TRUE(WaitFor([&] { return gate_.entered == 1; }));
    auto second = Post("/v1/run", RunBody(2, 10, "gate"));
    EXPECT_EQ(second->status, 202);
    EXPECT_EQ(nlohmann::json::parse(second->body)["state"], "queued");
    ASSERT_EQ(Run(3, 10, "gate"), 202);
    gate_.open = true;
    for (int f = 1; f <= 3; ++f) EXPECT_EQ(ResultOf(f)["status"], "succeeded") << f;
    EXPECT_EQ(gate_.Order(), (std::vector<std::int64_t>{1, 2, 3}));
    EXPECT_EQ(gate_.max_running.load(), 1);
}

TEST_F(ExecutorTest, DiscardLaterRefusesARunWhileTheJobIsBusy) {
    Start(Options());
    ASSERT_EQ(Run(1, 10, "gate", {{"block_strategy", "discard-later"}}), 202);
    auto refused = Post("/v1/run", RunBody(2, 10, "gate", {{"block_strategy", "discard-later"}}));
    EXPECT_EQ(refused->status, 409);
    EXPECT_EQ(ErrorOf(refused)["code"], "aborted");
    EXPECT_EQ(ErrorOf(refused)["field"], "block_strategy");
    gate_.open = true;
    EXPECT_EQ(ResultOf(1)["status"], "succeeded");
    EXPECT_EQ(gate_.Order(), std::vector<std::int64_t>{1});
    EXPECT_TRUE(web_->ResultsFor(2).empty());
}

TEST_F(ExecutorTest, CoverEarlyKillsTheRunningFireAndRunsTheNewOne) {
    Start(Options());
    ASSERT_EQ(Run(1, 10, "gate"), 202);
    ASSERT_TRUE(WaitFor([&] { return gate_.entered == 1; }));
    ASSERT_EQ(Run(2, 10, "gate", {{"block_strategy", "cover-early"}}), 202);
    const auto covered = ResultOf(1);
    EXPECT_EQ(covered["status"], "killed");
    EXPECT_EQ(covered["message"], "covered by fire 2");
    ASSERT_TRUE(WaitFor([&] { return gate_.entered == 2; }));
    gate_.open = true;
    EXPECT_EQ(ResultOf(2)["status"], "succeeded");
    EXPECT_EQ(gate_.max_running.load(), 1);
}

TEST_F(ExecutorTest, TimeoutCancelsTheHandlerAndReportsTimeout) {
    Start(Options());
    ASSERT_EQ(Run(1, 10, "gate", {{"timeout_ms", 50}}), 202);
    const auto result = ResultOf(1);
    EXPECT_EQ(result["status"], "timeout");
    EXPECT_EQ(result["code"], "deadline_exceeded");
    EXPECT_EQ(result["message"], "timed out after 50 ms");
    EXPECT_EQ(executor_->Stats().timed_out, 1u);
}

TEST_F(ExecutorTest, DuplicateFireAndAttemptIsIgnored) {
    Start(Options());
    ASSERT_EQ(Run(1, 10, "count"), 202);
    auto again = Post("/v1/run", RunBody(1, 10, "count"));
    EXPECT_EQ(again->status, 202);
    EXPECT_TRUE(nlohmann::json::parse(again->body)["duplicate"].get<bool>());
    ASSERT_EQ(Run(1, 10, "count", {{"attempt", 1}}), 202);  // a retry is a new attempt
    ASSERT_TRUE(WaitFor([&] { return web_->ResultsFor(1).size() == 2; }));
    EXPECT_EQ(Run(1, 10, "count"), 202);  // still a duplicate after it finished
    // The executor is idle again, so nothing more can still be on its way.
    ASSERT_TRUE(WaitFor([&] { return executor_->Stats().in_flight == 0; }));
    EXPECT_EQ(count_calls_.load(), 2);
    EXPECT_EQ(executor_->Stats().duplicates, 2u);
}

TEST_F(ExecutorTest, RunFromAStaleEpochIsRefused) {
    Start(Options());
    ASSERT_EQ(Run(1, 10, "count", {{"epoch", 5}}), 202);
    auto stale = Post("/v1/run", RunBody(2, 11, "count", {{"epoch", 4}}));
    EXPECT_EQ(stale->status, 409);
    EXPECT_EQ(ErrorOf(stale)["field"], "epoch");
    EXPECT_EQ(Run(3, 12, "count", {{"epoch", 6}}), 202);
    EXPECT_EQ(Run(4, 13, "count", {{"epoch", 5}}), 409);
    ASSERT_FALSE(ResultOf(3).is_null());
    EXPECT_TRUE(web_->ResultsFor(2).empty());
    EXPECT_EQ(executor_->Stats().refused_stale_epoch, 2u);
}

TEST_F(ExecutorTest, OutOfCapacityIs429) {
    auto options = Options();
    options.capacity = 1;
    Start(options);
    ASSERT_EQ(Run(1, 10, "gate"), 202);
    auto full = Post("/v1/run", RunBody(2, 11, "gate"));
    EXPECT_EQ(full->status, 429);
    EXPECT_EQ(ErrorOf(full)["code"], "resource_exhausted");
    gate_.open = true;
    ASSERT_FALSE(ResultOf(1).is_null());
    EXPECT_EQ(Run(2, 11, "gate"), 202);
}

TEST_F(ExecutorTest, HeartbeatsCarryHandlersCapacityAndRunningAndStopDeregisters) {
    Start(Options());
    const std::string address = "127.0.0.1:" + std::to_string(executor_->port());
    ASSERT_TRUE(WaitFor([&] { return !web_->Heartbeats().empty(); }));
    const auto first = web_->Heartbeats().front();
    EXPECT_EQ(first["app"], "test-app");
    EXPECT_EQ(first["address"], address);
    EXPECT_EQ(first["handlers"],
              (nlohmann::json{"chatty", "count", "echo", "ends_seen", "fail", "gate", "sleep", "throw"}));
    EXPECT_EQ(first["capacity"], 16);
    EXPECT_EQ(first["running"], 0);

    ASSERT_EQ(Run(1, 10, "gate"), 202);
    EXPECT_TRUE(WaitFor([&] {
        const auto hbs = web_->Heartbeats();
        return hbs.back()["running"] == 1;
    }));
    gate_.open = true;
    executor_->Stop();
    const auto deregs = web_->Deregistrations();
    ASSERT_EQ(deregs.size(), 1u);
    EXPECT_EQ(deregs[0], (nlohmann::json{{"app", "test-app"}, {"address", address}}));
}

TEST_F(ExecutorTest, FailsOverToTheNextWebEndpoint) {
    auto dead = std::make_unique<FakeWeb>(kToken);
    const std::string dead_url = dead->Url();
    dead.reset();
    Start(Options({dead_url, web_->Url()}));
    ASSERT_EQ(Run(1, 10, "echo"), 202);
    EXPECT_EQ(ResultOf(1)["status"], "succeeded");
    EXPECT_TRUE(WaitFor([&] { return !web_->Heartbeats().empty(); }));
}

// A result carries the traceparent its run ran under only once every web endpoint advertised
// result-traceparent; an older web module (no capabilities, refusing the unknown field) still
// gets every result, without it.
TEST_F(ExecutorTest, AResultCarriesItsTraceparentOnlyWhenEveryWebEndpointTakesIt) {
    const std::string traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    FakeWeb other(kToken);
    web_->SetCapabilities({"result-traceparent"});
    Start(Options({web_->Url(), other.Url()}));
    ASSERT_TRUE(WaitFor([&] { return !other.Heartbeats().empty(); })) << "the other endpoint is asked too";
    ASSERT_EQ(Run(1, 10, "echo", {{"traceparent", traceparent}}), 202);
    const auto old_cluster = ResultOf(1);
    ASSERT_FALSE(old_cluster.is_null());
    EXPECT_EQ(old_cluster["status"], "succeeded");
    EXPECT_FALSE(old_cluster.contains("traceparent")) << "one endpoint does not take it";

    // Every endpoint upgraded: the other is asked again at most a minute later; here a new
    // executor learns both at once.
    other.SetCapabilities({"result-traceparent", "later"});
    executor_->Stop();
    Start(Options({web_->Url(), other.Url()}));
    ASSERT_TRUE(WaitFor([&] { return other.Heartbeats().size() >= 2; }));
    ASSERT_EQ(Run(2, 10, "echo", {{"traceparent", traceparent}}), 202);
    const auto new_cluster = ResultOf(2);
    ASSERT_FALSE(new_cluster.is_null());
    EXPECT_EQ(new_cluster["traceparent"], traceparent);
    ASSERT_EQ(Run(3, 10, "echo"), 202);  // a run without one: none
    EXPECT_FALSE(ResultOf(3).contains("traceparent"));
}

TEST_F(ExecutorTest, ResultGoesToTheRunsCallbackUrlFirst) {
    FakeWeb other(kToken);
    Start(Options());
    ASSERT_EQ(Run(1, 10, "echo", {{"callback_url", other.Url() + "/api/v1/callback"}}), 202);
    EXPECT_EQ(ResultOf(other, 1)["status"], "succeeded");
    EXPECT_TRUE(web_->ResultsFor(1).empty());
}

TEST_F(ExecutorTest, ResultsForInterleavedCallbackUrlsAreBatchedPerUrlNotCutAtEachChange) {
    // Three trigger nodes each name themselves as the callback URL of the runs they send, so an
    // executor's outbox interleaves their results. One flush sends one request per URL.
    FakeWeb other(kToken);
    auto options = Options();
    options.callback_flush_interval = 400ms;
    Start(std::move(options));
    const std::string other_url = other.Url() + "/api/v1/callback";
    const std::string own_url = web_->Url() + "/api/v1/callback";
    for (int i = 1; i <= 10; ++i) {
        ASSERT_EQ(Run(i, 10 + i, "echo", {{"callback_url", i % 2 == 0 ? other_url : own_url}}), 202);
    }
    for (int i = 1; i <= 10; ++i) {
        EXPECT_EQ(ResultOf(i % 2 == 0 ? other : *web_, i)["status"], "succeeded") << "fire " << i;
    }
    // The runs were accepted within one flush interval (a loopback call takes well under 40 ms
    // each); a flush can still fall between two of them, hence at most two requests per URL.
    EXPECT_EQ(other.Results().size(), 5u);
    EXPECT_EQ(web_->Results().size(), 5u);
    EXPECT_LE(other.CallbackRequests(), 2u);
    EXPECT_LE(web_->CallbackRequests(), 2u);
}

TEST_F(ExecutorTest, StopCancelsHandlersAfterTheGraceAndStillReportsThem) {
    auto options = Options();
    options.shutdown_grace = 50ms;
    Start(options);
    ASSERT_EQ(Run(1, 10, "gate"), 202);
    ASSERT_EQ(Run(2, 10, "gate"), 202);  // queued: never starts
    ASSERT_TRUE(WaitFor([&] { return gate_.entered == 1; }));
    executor_->Stop();
    ASSERT_EQ(web_->ResultsFor(1).size(), 1u);
    EXPECT_EQ(web_->ResultsFor(1)[0]["status"], "killed");
    EXPECT_EQ(web_->ResultsFor(1)[0]["message"], "executor shutting down");
    ASSERT_EQ(web_->ResultsFor(2).size(), 1u);
    EXPECT_EQ(web_->ResultsFor(2)[0]["status"], "killed");
}

TEST_F(ExecutorTest, ResultsSpooledWhileTheWebIsDownAreDeliveredOnceAfterARestart) {
    const std::uint16_t web_port = web_->port();
    const std::string web_url = web_->Url();
    constexpr int kFires = 6;
    {
        Executor first(Options({web_url}));
        first.Handle("echo", Echo);
        first.Start();
        ASSERT_TRUE(WaitFor([&] { return first.Stats().signing_keys > 0; }));
        web_->Stop();  // the web module is down (the executor keeps the keys it learnt)
        for (int f = 1; f <= kFires; ++f) {
            const std::string url = "http://127.0.0.1:" + std::to_string(first.port()) + "/v1/run";
            auto r = client_.Send(
                SignedRequest(TestSigningKey(), http::Method::kPost, url, RunBody(f, 100 + f, "echo").dump()));
            ASSERT_EQ(r->status, 202) << r->body;
        }
        // While nobody answers, results go to disk, not just memory.
        ASSERT_TRUE(WaitFor([&] { return first.Stats().results_spooled == kFires; }));
        EXPECT_GT(first.Stats().callback_failures, 0u);
        // The series say so too (read from the registry: metrics are not served here).
        const std::string metrics = first.metrics().Render();
        EXPECT_NE(metrics.find("\nsched_client_results_spool_pending 6\n"), std::string::npos) << metrics;
        EXPECT_NE(metrics.find("\nsched_client_results_queued 6\n"), std::string::npos) << metrics;
        EXPECT_EQ(metrics.find("\nsched_client_callback_failures_total 0\n"), std::string::npos) << metrics;
        first.Stop();
    }
    ASSERT_TRUE(std::filesystem::exists(spool_dir_ / "results.jsonl"));
    {
        Executor second(Options({web_url}));
        second.Handle("echo", Echo);
        second.Start();
        web_ = std::make_unique<FakeWeb>(kToken, web_port);  // the web module is back
        ASSERT_TRUE(WaitFor([&] { return web_->Results().size() >= kFires; }));
        second.Stop();
    }
    const auto results = web_->Results();
    EXPECT_EQ(results.size(), static_cast<std::size_t>(kFires));
    std::set<std::int64_t> fires;
    for (const auto& r : results) {
        fires.insert(r["fire_id"].get<std::int64_t>());
        EXPECT_EQ(r["status"], "succeeded");
    }
    EXPECT_EQ(fires.size(), static_cast<std::size_t>(kFires));
    EXPECT_FALSE(std::filesystem::exists(spool_dir_ / "results.jsonl"));
}

TEST_F(ExecutorTest, ABatchOfRunsIsAdmittedRunByRunWithOneAnswerEach) {
    Start(Options());
    nlohmann::json missing_fire = RunBody(0, 13, "echo");
    missing_fire.erase("fire_id");
    const nlohmann::json batch = {{"runs",
                                   {RunBody(1, 10, "echo"), RunBody(2, 11, "fail"), RunBody(3, 12, "nope"),
                                    missing_fire, RunBody(1, 10, "echo"), RunBody(4, 14, "count", {{"epoch", 0}})}}};
    auto r = Post("/v1/runs", batch);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->status, 200) << r->body;
    const auto body = *r->Json();
    ASSERT_EQ(body["results"].size(), 6u) << body.dump();
    const auto& results = body["results"];
    EXPECT_EQ(results[0]["status"], 202);
    EXPECT_EQ(results[0]["state"], "running");
    EXPECT_EQ(results[0]["fire_id"], 1);
    EXPECT_EQ(results[1]["status"], 202);
    EXPECT_EQ(results[2]["status"], 404);
    EXPECT_EQ(results[2]["error"]["field"], "runs[2].handler");
    EXPECT_EQ(results[3]["status"], 400);
    EXPECT_EQ(results[3]["error"]["field"], "runs[3].fire_id");
    EXPECT_EQ(results[4]["status"], 202);  // the same (fire, attempt) again: a duplicate, not run twice
    EXPECT_TRUE(results[4]["duplicate"].get<bool>());
    EXPECT_EQ(results[5]["status"], 409);  // an older epoch than this batch's first runs
    EXPECT_EQ(results[5]["error"]["field"], "runs[5].epoch");
    EXPECT_EQ(ResultOf(1)["status"], "succeeded");
    EXPECT_EQ(ResultOf(2)["status"], "failed");
    const auto stats = executor_->Stats();
    EXPECT_EQ(stats.accepted, 2u);
    EXPECT_EQ(stats.duplicates, 1u);
    EXPECT_EQ(stats.refused_stale_epoch, 1u);
    EXPECT_EQ(count_calls_.load(), 0);
}

// POST /v1/runs-ahead: each run admitted on arrival and started start_in_ms after it, not
// before; a held run killed before its time never reaches its handler.
TEST_F(ExecutorTest, RunsSentAheadStartWhenTheirTimeComesAndNotBefore) {
    Start(Options());
    const auto wall_ms = [] {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
            .count();
    };
    const std::int64_t before = wall_ms();
    const nlohmann::json batch = {
        {"runs",
         {RunBody(1, 10, "echo", {{"start_in_ms", 300}}), RunBody(2, 11, "echo"),
          RunBody(3, 12, "count", {{"start_in_ms", 300}}), RunBody(4, 13, "echo", {{"start_in_ms", 10'001}})}}};
    auto r = Post("/v1/runs-ahead", batch);
    const std::int64_t answered = wall_ms();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->status, 200) << r->body;
    const auto results = (*r->Json())["results"];
    EXPECT_EQ(results[0]["status"], 202);
    EXPECT_EQ(results[0]["state"], "running");
    EXPECT_EQ(results[3]["status"], 400);
    EXPECT_EQ(results[3]["error"]["field"], "runs[3].start_in_ms");
    auto kill = Post("/v1/kill", {{"fire_id", 3}});
    ASSERT_EQ(kill->status, 200) << kill->body;

    const auto at_once = ResultOf(2);
    EXPECT_LT(at_once["started_ms"].get<std::int64_t>(), before + 300);
    const auto held = ResultOf(1);
    ASSERT_EQ(held["status"], "succeeded");
    EXPECT_GE(held["started_ms"].get<std::int64_t>(), before + 300) << "started before its time";
    EXPECT_LE(held["started_ms"].get<std::int64_t>(), answered + 300 + 200) << "held far past its time";
    EXPECT_EQ(ResultOf(3)["status"], "killed");
    EXPECT_EQ(count_calls_.load(), 0) << "a killed held run reached its handler";
}

// Runs held for one due time are let go together, and each run's end (its log closed, its
// slot freed, its result queued) waits behind the runs already queued: with one worker, no
// handler of the batch starts after another run of it has ended.
TEST_F(ExecutorTest, RunsLetGoTogetherAllStartBeforeAnyOfThemEnds) {
    ExecutorOptions options = Options();
    options.worker_threads = 1;
    Start(std::move(options));
    constexpr int kRuns = 5;
    nlohmann::json runs = nlohmann::json::array();
    for (int i = 1; i <= kRuns; ++i) runs.push_back(RunBody(i, 10 + i, "ends_seen", {{"start_in_ms", 200}}));
    auto r = Post("/v1/runs-ahead", {{"runs", runs}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->status, 200) << r->body;
    for (int i = 1; i <= kRuns; ++i) EXPECT_EQ(ResultOf(i)["status"], "succeeded") << "fire " << i;
    std::lock_guard lock(ends_seen_mu_);
    EXPECT_EQ(ends_seen_, std::vector<std::uint64_t>(kRuns, 0));
}

// First attempts of one scheduled time held from several requests (one per node) start
// together, at the earliest of their holds within 25 ms: each hold ends at the due time plus its
// request's transit. A retry of that time, or another time, keeps its own hold.
TEST_F(ExecutorTest, HeldFirstAttemptsOfOneScheduledTimeStartTogetherAtTheEarliestHold) {
    ExecutorOptions options = Options();
    options.worker_threads = 1;
    Start(std::move(options));
    constexpr std::int64_t kDue = 1'800'000'000'000;
    const auto run = [](std::int64_t fire_id, std::int64_t start_in_ms, std::int64_t scheduled_ms, int attempt) {
        return RunBody(fire_id, 10 + fire_id, "echo",
                       {{"start_in_ms", start_in_ms}, {"scheduled_ms", scheduled_ms}, {"attempt", attempt}});
    };
    const nlohmann::json runs = {run(1, 300, kDue, 0),
                                 run(2, 320, kDue, 0),          // due at the same time: starts with fire 1
                                 run(3, 320, kDue, 1),          // a retry: its own hold
                                 run(4, 320, kDue + 1000, 0)};  // another due time: its own hold
    const std::int64_t sent_ms = testing::WallMs();
    auto r = Post("/v1/runs-ahead", {{"runs", runs}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->status, 200) << r->body;
    const auto started = [&](std::int64_t fire_id) {
        const auto result = ResultOf(fire_id);
        EXPECT_EQ(result["status"], "succeeded") << "fire " << fire_id;
        return result.is_null() ? std::int64_t{0} : result["started_ms"].get<std::int64_t>();
    };
    const std::int64_t first = started(1);
    EXPECT_GE(first, sent_ms + 300);
    // One worker starts the two runs let go together one after the other; apart, 20 ms.
    EXPECT_LT(started(2) - first, 10) << "fire 2 kept its own hold";
    // The request arrived after sent_ms: a run on its own hold starts 320 ms after it or later.
    EXPECT_GE(started(3), sent_ms + 320) << "a retry joined the first attempts' hold";
    EXPECT_GE(started(4), sent_ms + 320) << "another due time joined the hold";
}

TEST_F(ExecutorTest, AMalformedBatchIsOne400NamingTheField) {
    Start(Options());
    nlohmann::json too_many = {{"runs", nlohmann::json::array()}};
    for (int i = 0; i < 1001; ++i) too_many["runs"].push_back(RunBody(100 + i, 100 + i, "count"));
    const std::vector<std::pair<nlohmann::json, std::string>> cases = {
        {nlohmann::json::object(), "runs"},
        {{{"runs", nlohmann::json::array()}}, "runs"},
        {{{"runs", "all of them"}}, "runs"},
        {{{"runs", {RunBody(1, 10, "count")}}, {"urgent", true}}, "urgent"},
        {too_many, "runs"},
        {nlohmann::json::array(), "runs"},
    };
    for (const auto& [body, field] : cases) {
        auto r = Post("/v1/runs", body);
        ASSERT_TRUE(r.ok());
        EXPECT_EQ(r->status, 400) << body.dump().substr(0, 200);
        EXPECT_EQ(ErrorOf(r)["field"], field) << r->body.substr(0, 300);
    }
    EXPECT_EQ(count_calls_.load(), 0);
    EXPECT_EQ(executor_->Stats().accepted, 0u);
}

TEST_F(ExecutorTest, MetricsCountRunsByHandlerAndOutcomeAndCarryWhatTheServiceAdds) {
    auto options = Options();
    options.metrics = true;
    auto& executor = Start(options);
    executor.metrics().Counter("orders_charged_total", "The service's own series.").Labels({}).Inc(3);
    ASSERT_EQ(Run(1, 10, "echo"), 202);
    ASSERT_EQ(Run(2, 11, "fail"), 202);
    ASSERT_EQ(Run(3, 12, "throw"), 202);
    ASSERT_EQ(Run(4, 13, "gate", {{"timeout_ms", 50}}), 202);
    for (std::int64_t f = 1; f <= 4; ++f) ASSERT_FALSE(ResultOf(f).is_null()) << f;
    ASSERT_EQ(Run(1, 10, "echo"), 202);  // a duplicate
    ASSERT_TRUE(WaitFor([&] { return executor.Stats().results_delivered == 4; }));

    // Prometheus does not sign: the route is served unsigned, and only this route.
    const auto r = client_.Send(http::ClientRequest{.method = http::Method::kGet, .url = Url("/metrics")});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(r->headers.Get("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
    const std::string& m = r->body;
    for (const char* series : {
             "sched_client_runs_total{handler=\"echo\",outcome=\"succeeded\"} 1\n",
             "sched_client_runs_total{handler=\"fail\",outcome=\"failed\"} 1\n",
             "sched_client_runs_total{handler=\"throw\",outcome=\"failed\"} 1\n",
             "sched_client_runs_total{handler=\"gate\",outcome=\"timeout\"} 1\n",
             // Every handler's outcomes exist from the start, at 0.
             "sched_client_runs_total{handler=\"count\",outcome=\"killed\"} 0\n",
             "sched_client_runs_total{handler=\"echo\",outcome=\"failed\"} 0\n",
             "sched_client_run_duration_seconds_count{handler=\"echo\"} 1\n",
             "sched_client_run_duration_seconds_count{handler=\"chatty\"} 0\n",
             "sched_client_runs_accepted_total 4\n",
             "sched_client_runs_refused_total{reason=\"duplicate\"} 1\n",
             "sched_client_runs_refused_total{reason=\"capacity\"} 0\n",
             "sched_client_results_delivered_total 4\n",
             "sched_client_results_queued 0\n",
             "sched_client_callback_failures_total 0\n",
             "sched_client_runs_in_flight 0\n",
             "sched_client_signing_keys 1\n",
             "sched_client_info{app=\"test-app\"} 1\n",
             "sched_client_heartbeats_total{outcome=\"failed\"} 0\n",
             "\nsched_client_http_requests_total ",
             "\nprocess_resident_memory_bytes ",
             "\nsched_build_info{",
             "\norders_charged_total 3\n",
         }) {
        EXPECT_NE(m.find(series), std::string::npos) << series << "\n" << m;
    }
    // The timed-out run's handler time is in its histogram: at least the 50 ms timeout.
    const auto sum_at = m.find("sched_client_run_duration_seconds_sum{handler=\"gate\"} ");
    ASSERT_NE(sum_at, std::string::npos) << m;
    EXPECT_GE(std::stod(m.substr(sum_at + std::strlen("sched_client_run_duration_seconds_sum{handler=\"gate\"} "))),
              0.05);
    EXPECT_EQ(m.find("sched_client_heartbeats_total{outcome=\"ok\"} 0\n"), std::string::npos) << m;
    // No handler name is invented by a request: an unknown handler is a 404, not a series.
    ASSERT_EQ(Run(5, 14, "nope"), 404);
    const auto again = client_.Send(http::ClientRequest{.method = http::Method::kGet, .url = Url("/metrics")});
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->body.find("handler=\"nope\""), std::string::npos);
}

// The start delay is the executor's own: with one worker, a run admitted behind a 200 ms
// handler waits for it, and its delay shows that wait; the first run's does not.
TEST_F(ExecutorTest, TheStartDelayIsTheTimeARunWaitedForAWorker) {
    auto options = Options();
    options.metrics = true;
    options.worker_threads = 1;
    Start(std::move(options));
    const nlohmann::json runs = {RunBody(1, 10, "sleep", {{"params", {{"ms", 200}}}}), RunBody(2, 11, "echo")};
    auto r = Post("/v1/runs", {{"runs", runs}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->status, 200) << r->body;
    ASSERT_EQ(ResultOf(1)["status"], "succeeded");
    ASSERT_EQ(ResultOf(2)["status"], "succeeded");
    const auto m = client_.Send(http::ClientRequest{.method = http::Method::kGet, .url = Url("/metrics")});
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    const auto value = [&](const std::string& series) {
        const auto at = m->body.find("\n" + series + " ");
        EXPECT_NE(at, std::string::npos) << series << "\n" << m->body;
        return at == std::string::npos ? -1.0 : std::stod(m->body.substr(at + series.size() + 2));
    };
    EXPECT_EQ(value("sched_client_run_start_delay_seconds_count"), 2);
    EXPECT_GE(value("sched_client_run_start_delay_seconds_sum"), 0.2);
    EXPECT_LE(value("sched_client_run_start_delay_seconds_bucket{le=\"0.1\"}"), 1) << "the second run waited";
}

TEST_F(ExecutorTest, MetricsAreServedOnlyWhenEnabledAndBehindTheirTokenWhenOneIsSet) {
    Start(Options());
    const http::ClientRequest get{.method = http::Method::kGet, .url = Url("/metrics")};
    auto off = client_.Send(get);
    ASSERT_TRUE(off.ok());
    EXPECT_NE(off->status, 200);
    EXPECT_EQ(off->body.find("sched_client"), std::string::npos) << off->body;
    executor_->Stop();
    executor_.reset();

    auto options = Options();
    options.metrics = true;
    options.metrics_token = "a-metrics-token-of-32-characters";
    Start(options);
    const http::ClientRequest guarded{.method = http::Method::kGet, .url = Url("/metrics")};
    auto none = client_.Send(guarded);
    ASSERT_TRUE(none.ok());
    EXPECT_EQ(none->status, 401);
    EXPECT_EQ(none->body.find("sched_client"), std::string::npos) << none->body;
    http::CallOptions wrong;
    wrong.bearer_token = kToken;  // the executor's own token is not the metrics token
    EXPECT_EQ(client_.Send(guarded, wrong)->status, 401);
    http::CallOptions right;
    right.bearer_token = options.metrics_token;
    auto ok = client_.Send(guarded, right);
    ASSERT_TRUE(ok.ok());
    EXPECT_EQ(ok->status, 200);
    EXPECT_NE(ok->body.find("sched_client_runs_total{handler=\"echo\",outcome=\"succeeded\"} 0"), std::string::npos)
        << ok->body;
}

TEST_F(ExecutorTest, StartFailsWhenAnotherExecutorHoldsTheSpool) {
    Start(Options());
    Executor second(Options());
    second.Handle("echo", Echo);
    EXPECT_THROW(second.Start(), std::runtime_error);
}

}  // namespace
}  // namespace sched::client
