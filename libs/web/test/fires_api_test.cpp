// Fires over real HTTP: listing, detail, kill and the log relayed from a (fake) executor.

#include <atomic>
#include <mutex>

#include "sched/protocol/log_page.hpp"
#include "sched/protocol/request_signature.hpp"
#include "sched/store/fire_log.hpp"
#include "sched/store/signing_key.hpp"
#include "web_test_base.hpp"

namespace sched::web::testing {
namespace {

using http::Method;
// The executor side of kill and log (docs/protocol.md), recording what it was asked. It checks the
// calls' signatures as the SDK does, against app demo's keys as the database holds them.
class FakeExecutor {
  public:
    explicit FakeExecutor(db::Database& db) {
        http::Router router;
        router.Add(Method::kPost, "/v1/kill", [this](http::Request& req) {
            std::lock_guard lock(mu_);
            kills_.push_back(req.body);
            return http::Response::Json({{"state", "running"}});
        });
        router.Add(Method::kGet, "/v1/log", [this](http::Request& req) {
            std::lock_guard lock(mu_);
            log_queries_.push_back(req.query);
            if (req.Query("fire_id") != std::to_string(known_fire_)) {
                return http::Response::Error(http::ApiError{Code::kNotFound, "no log for that fire here", "fire_id"});
            }
            if (!bad_page_.is_null()) return http::Response::Json(bad_page_);
            return http::Response::Json({{"fire_id", known_fire_.load()},
                                         {"from_line", 1},
                                         {"to_line", 3},
                                         {"lines", {"second line", "third line"}},
                                         {"finished", true}});
        });
        auto verify = [this, &db](const http::Request& req) -> Status {
            {
                std::lock_guard lock(mu_);
                if (req.headers.Get("Authorization")) ++bearer_tokens_seen_;
            }
            auto keys = store::SigningKeyRepository(db).List("demo");
            if (!keys.ok()) return keys.status();
            std::vector<protocol::SigningKey> accepted;
            for (const auto& k : keys->keys) accepted.push_back({k.key_id, k.secret});
            return protocol::VerifySignature(protocol::SignedRequestOf(req), accepted, keys->db_now_ms,
                                             std::chrono::seconds(30));
        };
        server_ = std::make_unique<http::testing::TestServer>(std::move(router), http::testing::LoopbackOptions(),
                                                              std::move(verify));
    }
    std::string address() const { return "127.0.0.1:" + std::to_string(server_->port()); }
    void set_known_fire(std::int64_t id) { known_fire_ = id; }
    // What /v1/log answers from now on instead of the good page (null: the good page again).
    void set_bad_page(nlohmann::json page) {
        std::lock_guard lock(mu_);
        bad_page_ = std::move(page);
    }
    std::vector<std::string> kills() {
        std::lock_guard lock(mu_);
        return kills_;
    }
    std::vector<std::string> log_queries() {
        std::lock_guard lock(mu_);
        return log_queries_;
    }
    http::ServerStats stats() const { return server_->Stats(); }
    int bearer_tokens_seen() {
        std::lock_guard lock(mu_);
        return bearer_tokens_seen_;
    }

  private:
    std::mutex mu_;
    std::vector<std::string> kills_;
    std::vector<std::string> log_queries_;
    std::atomic<std::int64_t> known_fire_{0};
    nlohmann::json bad_page_;
    int bearer_tokens_seen_ = 0;
    std::unique_ptr<http::testing::TestServer> server_;
};

class FiresApiTest : public WebApiTest {};

TEST_P(FiresApiTest, ListFiltersByJobStatusAndTimeNewestFirstWithACursor) {
    const auto a = CreateJob("a")["id"].get<std::int64_t>();
    const auto b = CreateJob("b")["id"].get<std::int64_t>();
    const auto a1 = InsertFire(a, 1000, model::FireStatus::kSucceeded);
    const auto a2 = InsertFire(a, 2000, model::FireStatus::kFailed);
    const auto a3 = InsertFire(a, 3000, model::FireStatus::kRunning);
    InsertFire(b, 1500, model::FireStatus::kPending);

    auto all = Body(Get("/api/v1/fires"));
    ASSERT_EQ(all["items"].size(), 4u);
    EXPECT_GT(all["items"][0]["id"].get<std::int64_t>(), all["items"][1]["id"].get<std::int64_t>());
    auto of_a = Body(Get("/api/v1/fires?job_id=" + std::to_string(a)));
    ASSERT_EQ(of_a["items"].size(), 3u);
    EXPECT_EQ(of_a["items"][0]["id"], a3);
    EXPECT_EQ(Body(Get("/api/v1/fires?status=failed"))["items"][0]["id"], a2);
    EXPECT_EQ(Body(Get("/api/v1/fires?status=pending"))["items"].size(), 1u);
    // [from, to) on the scheduled time.
    auto window = Body(Get("/api/v1/fires?from=1000&to=2000"));
    ASSERT_EQ(window["items"].size(), 2u);
    auto page1 = Body(Get("/api/v1/fires?job_id=" + std::to_string(a) + "&limit=2"));
    ASSERT_EQ(page1["items"].size(), 2u);
    ASSERT_TRUE(page1["next_cursor"].is_string());
    auto page2 = Body(Get("/api/v1/fires?job_id=" + std::to_string(a) +
                          "&limit=2&cursor=" + page1["next_cursor"].get<std::string>()));
    ASSERT_EQ(page2["items"].size(), 1u);
    EXPECT_EQ(page2["items"][0]["id"], a1);
    EXPECT_TRUE(page2["next_cursor"].is_null());

    EXPECT_EQ(ErrorField(Get("/api/v1/fires?status=exploded")), "status");
    EXPECT_EQ(ErrorField(Get("/api/v1/fires?job_id=x")), "job_id");
    EXPECT_EQ(ErrorField(Get("/api/v1/fires?from=-1")), "from");
    EXPECT_EQ(ErrorField(Get("/api/v1/fires?limit=1000")), "limit");
    EXPECT_EQ(ErrorField(Get("/api/v1/fires?jobid=1")), "jobid");
}

TEST_P(FiresApiTest, TheLedgerIsListedByReasonWithTheRangeOfSkippedTimes) {
    const auto job = CreateJob("ledger")["id"].get<std::int64_t>();
    InsertFire(job, 1000, model::FireStatus::kSucceeded);
    model::Fire row;
    row.job_id = job;
    row.scheduled_time = 2000;
    row.kind = model::FireKind::kMisfire;
    row.epoch = 1;
    row.status = model::FireStatus::kSkipped;
    row.finished_at = 9000;
    row.reason = model::FireReason::kMisfire;
    row.skipped_until = 6000;
    row.skipped_count = 5;
    row.result_message = "misfire: 5 scheduled time(s) from 2000 to 6000 more than 5000 ms late got no fire";
    auto written =
        db().Run([&](soci::session& s) { return store::FireRepository::InsertLedgerRows(s, db().dialect(), {row}); });
    ASSERT_TRUE(written.ok()) << written.status().ToString();

    auto ledger = Body(Get("/api/v1/fires?reason=misfire"));
    ASSERT_EQ(ledger["items"].size(), 1u) << ledger.dump();
    const auto& item = ledger["items"][0];
    EXPECT_EQ(item["status"], "skipped");
    EXPECT_EQ(item["reason"], "misfire");
    EXPECT_EQ(item["scheduled_time"], 2000);
    EXPECT_EQ(item["skipped_until"], 6000);
    EXPECT_EQ(item["skipped_count"], 5);
    EXPECT_TRUE(Body(Get("/api/v1/fires?reason=paused"))["items"].empty());
    // A fire that ran has no reason.
    auto all = Body(Get("/api/v1/fires?job_id=" + std::to_string(job)));
    ASSERT_EQ(all["items"].size(), 2u);
    EXPECT_TRUE(all["items"][1]["reason"].is_null()) << all.dump();
    EXPECT_EQ(ErrorField(Get("/api/v1/fires?reason=bored")), "reason");
}

TEST_P(FiresApiTest, ABadReasonOrStatusFilterListsEveryName) {
    // The 400 is written from the name tables, so a reason added later cannot be left out.
    const auto reason = Get("/api/v1/fires?reason=bored");
    ASSERT_EQ(reason.status, 400);
    const std::string reason_message = Body(reason)["error"]["message"].get<std::string>();
    for (const auto name : model::kFireReasonNames.names()) {
        EXPECT_NE(reason_message.find(std::string(name)), std::string::npos) << name << " missing: " << reason_message;
    }
    const auto status = Get("/api/v1/fires?status=exploded");
    ASSERT_EQ(status.status, 400);
    const std::string status_message = Body(status)["error"]["message"].get<std::string>();
    for (const auto name : model::kFireStatusNames.names()) {
        EXPECT_NE(status_message.find(std::string(name)), std::string::npos) << name << " missing: " << status_message;
    }
}

TEST_P(FiresApiTest, DetailHasLagAndDuration) {
    const auto job = CreateJob("timed")["id"].get<std::int64_t>();
    const auto id = InsertFire(job, 50'000, model::FireStatus::kSucceeded);
    auto r = Get("/api/v1/fires/" + std::to_string(id));
    ASSERT_EQ(r.status, 200) << r.body;
    const auto fire = Body(r);
    EXPECT_EQ(fire["status"], "succeeded");
    EXPECT_EQ(fire["lag_ms"], 7);         // dispatched 7 ms after its time
    EXPECT_EQ(fire["duration_ms"], 100);  // started +10, finished +110
    EXPECT_EQ(fire["result_message"], "done");
    auto pending = Body(Get("/api/v1/fires/" + std::to_string(InsertFire(job, 60'000, model::FireStatus::kPending))));
    EXPECT_TRUE(pending["lag_ms"].is_null());
    EXPECT_TRUE(pending["duration_ms"].is_null());
    EXPECT_TRUE(pending["dispatch_epoch"].is_null());  // not dispatched yet
    EXPECT_EQ(Get("/api/v1/fires/424242").status, 404);
    EXPECT_EQ(ErrorField(Get("/api/v1/fires/-3")), "id");
}

// A manual fire is inserted by the API under no master (epoch 0); the epoch its executor is given
// (and logs) is the one the slave dispatched it under, which the API shows as dispatch_epoch.
TEST_P(FiresApiTest, AManualFireShowsTheEpochItWasDispatchedUnder) {
    const auto job = CreateJob("manual", {{"schedule_type", "manual"}, {"schedule_expr", ""}});
    auto triggered = Post("/api/v1/jobs/" + job["id"].dump() + "/trigger", nlohmann::json::object());
    ASSERT_EQ(triggered.status, 202) << triggered.body;
    const auto fire_id = Body(triggered)["items"][0]["id"].get<std::int64_t>();
    const std::string path = "/api/v1/fires/" + std::to_string(fire_id);
    auto before = Body(Get(path));
    EXPECT_EQ(before["epoch"], 0);
    EXPECT_TRUE(before["dispatch_epoch"].is_null());
    store::FireRepository fires(db());
    ASSERT_TRUE(fires
                    .Transition(fire_id, {model::FireStatus::kPending}, model::FireStatus::kDispatching,
                                {.assigned_node = "node-a", .dispatch_epoch = 3})
                    .ok());
    auto after = Body(Get(path));
    EXPECT_EQ(after["epoch"], 0);
    EXPECT_EQ(after["dispatch_epoch"], 3);
}

// POST /trigger keeps the caller's W3C trace context on the fire; a malformed one is a 400
// naming the header, and nothing is inserted.
TEST_P(FiresApiTest, AManualTriggerKeepsTheCallersTraceContext) {
    const auto job = CreateJob("traced", {{"schedule_type", "manual"}, {"schedule_expr", ""}});
    const std::string path = "/api/v1/jobs/" + job["id"].dump() + "/trigger";
    // Raw bytes: HttpClient sends one field per name, and repeated fields are part of the test.
    const std::string base = Url("");
    const auto port = static_cast<std::uint16_t>(std::stoi(base.substr(base.rfind(':') + 1)));
    const auto trigger = [&](const std::vector<std::pair<std::string, std::string>>& headers) {
        std::string request = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " +
                              std::string(kClusterToken) + "\r\nContent-Length: 0\r\nConnection: close\r\n";
        for (const auto& [name, value] : headers) request += name + ": " + value + "\r\n";
        http::testing::RawConnection conn(port);
        conn.Send(request + "\r\n");
        const std::string answer = conn.ReadUntilClose();
        http::ClientResponse r;
        const auto head_end = answer.find("\r\n\r\n");
        EXPECT_NE(head_end, std::string::npos) << answer;
        if (answer.size() < 12 || head_end == std::string::npos) return r;
        r.status = std::stoi(answer.substr(9, 3));
        r.body = answer.substr(head_end + 4);
        return r;
    };
    const std::string parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    auto traced = trigger({{"traceparent", parent}, {"tracestate", "congo=t61rcWkgMzE"}, {"TraceState", "rojo=1"}});
    ASSERT_EQ(traced.status, 202) << traced.body;
    auto stored = store::FireRepository(db()).Get(Body(traced)["items"][0]["id"].get<std::int64_t>());
    ASSERT_TRUE(stored.ok());
    EXPECT_EQ(stored->trace_parent, parent);
    EXPECT_EQ(stored->trace_state, "congo=t61rcWkgMzE,rojo=1");

    auto plain = trigger({{"tracestate", "congo=t61rcWkgMzE"}});  // no traceparent: none kept
    ASSERT_EQ(plain.status, 202) << plain.body;
    stored = store::FireRepository(db()).Get(Body(plain)["items"][0]["id"].get<std::int64_t>());
    ASSERT_TRUE(stored.ok());
    EXPECT_FALSE(stored->trace_parent);
    EXPECT_FALSE(stored->trace_state);

    const auto fires_before = Body(Get("/api/v1/fires?job_id=" + job["id"].dump()))["items"].size();
    EXPECT_EQ(ErrorField(trigger({{"traceparent", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"}})),
              "traceparent");
    EXPECT_EQ(ErrorField(trigger({{"traceparent", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"}})),
              "traceparent");
    EXPECT_EQ(ErrorField(trigger({{"traceparent", "nonsense"}})), "traceparent");
    EXPECT_EQ(ErrorField(trigger({{"traceparent", parent}, {"traceparent", parent}})), "traceparent");
    EXPECT_EQ(ErrorField(trigger({{"traceparent", parent}, {"tracestate", "Bad=1"}})), "tracestate");
    EXPECT_EQ(ErrorField(trigger({{"traceparent", parent}, {"tracestate", "k=" + std::string(600, 'v')}})),
              "tracestate");
    EXPECT_EQ(Body(Get("/api/v1/fires?job_id=" + job["id"].dump()))["items"].size(), fires_before);
}

TEST_P(FiresApiTest, KillMovesARunningFireAndTellsItsExecutor) {
    FakeExecutor executor(db());
    const auto job = CreateJob("long")["id"].get<std::int64_t>();
    const auto running = InsertFire(job, 1000, model::FireStatus::kRunning, executor.address());
    auto r = Call(Method::kPost, "/api/v1/fires/" + std::to_string(running) + "/kill");
    ASSERT_EQ(r.status, 202) << r.body;
    EXPECT_EQ(Body(r)["fire"]["status"], "killed");
    EXPECT_TRUE(Body(r)["executor"]["delivered"].get<bool>()) << r.body;
    EXPECT_EQ(Body(r)["executor"]["answer"]["state"], "running");
    ASSERT_EQ(executor.kills().size(), 1u);  // signed with app demo's key, or the fake would have said 401
    EXPECT_EQ(executor.bearer_tokens_seen(), 0);
    EXPECT_EQ(nlohmann::json::parse(executor.kills()[0])["fire_id"], running);
    auto stored = store::FireRepository(db()).Get(running);
    EXPECT_EQ(stored->status, model::FireStatus::kKilled);
    EXPECT_TRUE(stored->finished_at.has_value());
    EXPECT_TRUE(stored->followup);
    EXPECT_NE(stored->result_message->find("cluster-token"), std::string::npos);

    // Only running fires: again, pending, finished, unknown.
    auto again = Call(Method::kPost, "/api/v1/fires/" + std::to_string(running) + "/kill");
    EXPECT_EQ(again.status, 409) << again.body;
    EXPECT_NE(again.body.find("is killed"), std::string::npos) << again.body;
    const auto pending = InsertFire(job, 2000, model::FireStatus::kPending);
    EXPECT_EQ(Call(Method::kPost, "/api/v1/fires/" + std::to_string(pending) + "/kill").status, 409);
    EXPECT_EQ(Call(Method::kPost, "/api/v1/fires/424242/kill").status, 404);
    EXPECT_EQ(executor.kills().size(), 1u);

    // The executor's own report of the kill is then a duplicate.
    auto callback = Post(
        "/api/v1/callback",
        nlohmann::json::array({{{"fire_id", running}, {"attempt", 0}, {"status", "killed"}, {"code", "cancelled"}}}));
    EXPECT_EQ(Body(callback)["results"][0]["outcome"], "duplicate") << callback.body;
}

TEST_P(FiresApiTest, KillStillMarksTheFireWhenItsExecutorIsGone) {
    const auto job = CreateJob("orphan")["id"].get<std::int64_t>();
    const auto running = InsertFire(job, 1000, model::FireStatus::kRunning, "127.0.0.1:1");
    auto r = Call(Method::kPost, "/api/v1/fires/" + std::to_string(running) + "/kill");
    ASSERT_EQ(r.status, 202) << r.body;
    EXPECT_FALSE(Body(r)["executor"]["delivered"].get<bool>());
    EXPECT_TRUE(Body(r)["executor"].contains("error"));
    EXPECT_EQ(store::FireRepository(db()).Get(running)->status, model::FireStatus::kKilled);
}

TEST_P(FiresApiTest, LogIsRelayedFromTheExecutorThatRanTheFire) {
    FakeExecutor executor(db());
    const auto job = CreateJob("chatty")["id"].get<std::int64_t>();
    const auto fire = InsertFire(job, 1000, model::FireStatus::kSucceeded, executor.address());
    executor.set_known_fire(fire);
    auto r = Get("/api/v1/fires/" + std::to_string(fire) + "/log?from_line=1");
    ASSERT_EQ(r.status, 200) << r.body;
    const auto log = Body(r);
    EXPECT_EQ(log["lines"], nlohmann::json({"second line", "third line"}));
    EXPECT_EQ(log["to_line"], 3);
    EXPECT_TRUE(log["finished"].get<bool>());
    EXPECT_EQ(log["executor_address"], executor.address());
    EXPECT_EQ(log["source"], "live");
    ASSERT_EQ(executor.log_queries().size(), 1u);
    // Addressed to the instance that ran it (docs/protocol.md "Addressed calls").
    EXPECT_EQ(executor.log_queries()[0],
              "fire_id=" + std::to_string(fire) + "&from_line=1&instance=" + executor.address());
    EXPECT_EQ(executor.bearer_tokens_seen(), 0);

    // The executor no longer has it.
    const auto old = InsertFire(job, 2000, model::FireStatus::kSucceeded, executor.address());
    auto gone = Get("/api/v1/fires/" + std::to_string(old) + "/log");
    EXPECT_EQ(gone.status, 404) << gone.body;
    // Never dispatched: nobody to ask.
    const auto pending = InsertFire(job, 3000, model::FireStatus::kPending);
    auto none = Get("/api/v1/fires/" + std::to_string(pending) + "/log");
    EXPECT_EQ(none.status, 409) << none.body;
    EXPECT_EQ(ErrorField(none), "id");
    // The executor is down.
    const auto lost = InsertFire(job, 4000, model::FireStatus::kSucceeded, "127.0.0.1:1");
    auto down = Get("/api/v1/fires/" + std::to_string(lost) + "/log");
    EXPECT_EQ(down.status, 503) << down.body;
    EXPECT_EQ(ErrorField(Get("/api/v1/fires/" + std::to_string(fire) + "/log?from_line=-1")), "from_line");
    EXPECT_EQ(Get("/api/v1/fires/424242/log").status, 404);
}

TEST_P(FiresApiTest, ALogPageThatIsNotOneIsNotRelayed) {
    FakeExecutor executor(db());
    const auto job = CreateJob("chatty")["id"].get<std::int64_t>();
    const auto fire = InsertFire(job, 1000, model::FireStatus::kRunning, executor.address());
    executor.set_known_fire(fire);
    const std::string path = "/api/v1/fires/" + std::to_string(fire) + "/log";
    ASSERT_EQ(Get(path).status, 200);
    const nlohmann::json good = {
        {"fire_id", fire}, {"from_line", 0}, {"to_line", 1}, {"lines", {"a"}}, {"finished", false}};
    const auto with = [&](const char* key, nlohmann::json value) {
        nlohmann::json page = good;
        page[key] = std::move(value);
        return page;
    };
    executor.set_bad_page(good);
    ASSERT_EQ(Get(path).status, 200);
    // Too many lines, lines that are not strings, a page of another fire, fields missing.
    const nlohmann::json too_long = with("lines", std::vector<std::string>(protocol::kMaxLogPageLines + 1, "x"));
    for (const auto& page : {with("to_line", 1001), with("lines", {1}), with("fire_id", fire + 1),
                             nlohmann::json{{"lines", {"a"}}}, with("to_line", 5)}) {
        executor.set_bad_page(page);
        const auto r = Get(path);
        EXPECT_EQ(r.status, 503) << page.dump() << ": " << r.body;
    }
    nlohmann::json huge = with("to_line", static_cast<std::int64_t>(protocol::kMaxLogPageLines) + 1);
    huge["lines"] = too_long["lines"];
    executor.set_bad_page(huge);
    EXPECT_EQ(Get(path).status, 503);
}

// The executor sent the log's tail with its result: once the fire has ended it is served from the
// database, whether or not the executor is still there; a running fire's log is still relayed.
TEST_P(FiresApiTest, AnEndedFiresStoredLogIsServedWhenItsExecutorIsGone) {
    const auto job = CreateJob("remembered")["id"].get<std::int64_t>();
    const auto ended = InsertFire(job, 1000, model::FireStatus::kFailed, "127.0.0.1:1");
    const auto running = InsertFire(job, 2000, model::FireStatus::kRunning, "127.0.0.1:1");
    std::vector<store::ExecutorResult> results(2);
    results[0].fire_id = ended;
    results[0].log = "accepted\nstarted\nboom";
    results[0].log_truncated_bytes = 17;
    results[1].fire_id = running;
    results[1].log = "should not be served while running";
    auto stored = db().Run([&](soci::session& s) {
        store::FireLogs::StoreMany(s, {&results[0], &results[1]});
        return true;
    });
    ASSERT_TRUE(stored.ok());

    auto r = Get("/api/v1/fires/" + std::to_string(ended) + "/log");
    ASSERT_EQ(r.status, 200) << r.body;
    auto log = Body(r);
    EXPECT_EQ(log["source"], "stored");
    EXPECT_EQ(log["fire_id"], ended);
    EXPECT_EQ(log["lines"], nlohmann::json({"accepted", "started", "boom"}));
    EXPECT_EQ(log["from_line"], 0);
    EXPECT_EQ(log["to_line"], 3);
    EXPECT_TRUE(log["finished"].get<bool>());
    EXPECT_EQ(log["truncated_bytes"], 17);
    EXPECT_EQ(log["fire_status"], "failed");
    EXPECT_EQ(log["executor_address"], "127.0.0.1:1");
    auto rest = Body(Get("/api/v1/fires/" + std::to_string(ended) + "/log?from_line=2"));
    EXPECT_EQ(rest["lines"], nlohmann::json({"boom"}));
    EXPECT_EQ(rest["from_line"], 2);
    // Running: the live log only, and this executor is down.
    EXPECT_EQ(Get("/api/v1/fires/" + std::to_string(running) + "/log").status, 503);
}

SCHED_DB_TEST_SUITE(FiresApiTest);

}  // namespace
}  // namespace sched::web::testing
