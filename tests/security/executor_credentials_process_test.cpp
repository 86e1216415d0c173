// Least privilege between the cluster and the services, with real processes and real HTTP
// (docs/protocol.md "Security"): a service needs only an executor token; what the nodes send to
// an executor opens nothing in the cluster; a signing key rotates under every-second jobs
// without losing a fire. Also, with the same processes: an ended fire's log, sent with its
// result, outlives the executor.

#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "sched/common/node_id.hpp"
#include "sched/common/testing/child_process.hpp"
#include "sched/http/testing/test_server.hpp"

#include "../support/process_calls.hpp"
#include "../support/scratch_dir.hpp"

namespace sched {
namespace {

using namespace std::chrono_literals;
using http::testing::WaitFor;
using testing::ChildProcess;

constexpr const char* kClusterToken = "cluster-t0ken";

// What one request to the fake executor carried.
struct Captured {
    http::Method method;
    std::string target;
    http::Headers headers;
    std::string body;
};

// An address registered with an executor token that records every request nodes send it and
// accepts everything (a run is never reported back, so timeouts make the slave send kills).
class SpyExecutor {
  public:
    SpyExecutor() {
        http::Router router;
        const auto record = [this](nlohmann::json answer, int status) {
            return [this, answer, status](http::Request& req) {
                std::lock_guard lock(mu_);
                captured_.push_back({req.method, req.target, req.headers, req.body});
                return http::Response::Json(answer, status);
            };
        };
        router.Add(http::Method::kPost, "/v1/run", record({{"accepted", true}, {"state", "running"}}, 202));
        router.Add(http::Method::kGet, "/v1/beat", record({{"app", "spy"}}, 200));
        router.Add(http::Method::kPost, "/v1/idle-beat", record({{"idle", true}}, 200));
        router.Add(http::Method::kPost, "/v1/kill", record({{"state", "running"}}, 200));
        router.Add(http::Method::kGet, "/v1/log",
                   record({{"fire_id", 0},
                           {"from_line", 0},
                           {"to_line", 0},
                           {"lines", nlohmann::json::array()},
                           {"finished", false}},
                          200));
        server_ = std::make_unique<http::testing::TestServer>(std::move(router), http::testing::LoopbackOptions());
    }
    std::string address() const { return "127.0.0.1:" + std::to_string(server_->port()); }
    std::vector<Captured> captured() {
        std::lock_guard lock(mu_);
        return captured_;
    }
    std::set<std::string> paths() {
        std::set<std::string> out;
        for (const auto& c : captured()) out.insert(c.target.substr(0, c.target.find('?')));
        return out;
    }

  private:
    std::mutex mu_;
    std::vector<Captured> captured_;
    std::unique_ptr<http::testing::TestServer> server_;
};

class ExecutorCredentials : public ::testing::Test {
  protected:
    void SetUp() override {
        const auto config =
            Write("standalone.yaml", "token: \"" + std::string(kClusterToken) +
                                         "\"\nhttp:\n  listen: \"127.0.0.1:0\"\ndatabase:\n  url: "
                                         "\"sqlite://" +
                                         (dir_ / "data/scheduler.db").string() + "\"\nlog:\n  level: warn\n");
        standalone_ = std::make_unique<ChildProcess>(
            std::vector<std::string>{SCHED_STANDALONE_BIN, "--config", config, "--demo"}, dir_.string());
        port_ = testing::ListeningPort(*standalone_, 30s);
        ASSERT_NE(port_, 0) << standalone_->stderr_text();
        url_ = "http://127.0.0.1:" + std::to_string(port_);
    }
    void TearDown() override {
        testing::StopChild(client_);
        testing::StopChild(standalone_);
    }

    std::string Write(const std::string& name, const std::string& text) { return testing::WriteFile(dir_, name, text); }
    static http::CallOptions As(const std::string& token) { return testing::AsBearer(token); }
    Result<http::ClientResponse> Api(http::Method method, const std::string& path, const nlohmann::json& body = nullptr,
                                     const std::string& token = kClusterToken) {
        return http_.Send(testing::JsonRequest(method, url_ + path, body), As(token));
    }
    static nlohmann::json Json(const Result<http::ClientResponse>& r) { return testing::AnswerJson(r); }

    // The one place tests make an executor token, scoped to `app`.
    std::string CreateExecutorToken(const std::string& app) {
        auto created =
            Api(http::Method::kPost, "/api/v1/tokens", {{"name", "svc-" + app}, {"role", "executor"}, {"apps", {app}}});
        EXPECT_TRUE(created.ok() && created->status == 201) << Json(created).dump();
        return Json(created)["token"].get<std::string>();
    }

    // POSTs a job of `app` on `handler` with `schedule_type` and the fields of `extra`; its id.
    std::int64_t PostJob(const std::string& name, const std::string& app, const std::string& handler,
                         const std::string& schedule_type, const nlohmann::json& extra) {
        nlohmann::json job = {{"name", name}, {"app", app}, {"handler", handler}, {"schedule_type", schedule_type}};
        job.update(extra);
        auto r = Api(http::Method::kPost, "/api/v1/jobs", job);
        EXPECT_TRUE(r.ok() && r->status == 201) << Json(r).dump();
        return Json(r)["id"].get<std::int64_t>();
    }
    // An every-second job that skips what it misses.
    std::int64_t CreateJob(const std::string& name, const std::string& app, const std::string& handler,
                           const nlohmann::json& extra = nlohmann::json::object()) {
        nlohmann::json fields = {{"schedule_expr", "* * * * * ?"}, {"misfire_policy", "skip"}};
        fields.update(extra);
        return PostJob(name, app, handler, "cron", fields);
    }

    std::vector<nlohmann::json> Fires(std::int64_t job_id) {
        auto r = Api(http::Method::kGet, "/api/v1/fires?limit=200&job_id=" + std::to_string(job_id));
        std::vector<nlohmann::json> out;
        const auto body = Json(r);  // named: a temporary in the range-init would dangle
        for (const auto& f : body["items"]) out.push_back(f);
        return out;
    }

    // The demo client, with `token`, heartbeating every 300 ms. Logs stay at warn: the child's
    // pipes are drained only when the test reads them.
    void StartDemoClient(const std::string& token) {
        const auto config =
            Write("demo-client.yaml", "log:\n  level: warn\nexecutor:\n  app: demo\n  web-endpoints: [\"" + url_ +
                                          "\"]\n  heartbeat-interval: 300ms\n  spool-dir: \"" +
                                          (dir_ / "spool").string() + "\"\n  http:\n    listen: \"127.0.0.1:0\"\n");
        client_ = std::make_unique<ChildProcess>(std::vector<std::string>{SCHED_DEMO_CLIENT_BIN, "--config", config},
                                                 dir_.string(), std::vector<std::string>{"SCHED_TOKEN=" + token});
    }

    testing::ScratchDir scratch_{"sched-credentials-"};
    const std::filesystem::path& dir_ = scratch_.path();
    std::unique_ptr<ChildProcess> standalone_;
    std::unique_ptr<ChildProcess> client_;
    unsigned short port_ = 0;
    std::string url_;
    http::testing::BlockingClient http_;
};

TEST_F(ExecutorCredentials, TheDemoClientRunsItsJobsWithAnExecutorTokenOnly) {
    // --demo wrote an executor token, readable by this user only.
    const auto token_file = dir_ / "data/executor-token";
    ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(token_file); }, 10s));
    struct stat st {};
    ASSERT_EQ(::stat(token_file.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    std::string token;
    std::getline(std::ifstream(token_file), token);
    ASSERT_FALSE(token.empty());
    ASSERT_NE(token, kClusterToken);
    // It is an executor token: the admin API refuses it.
    EXPECT_EQ(Api(http::Method::kGet, "/api/v1/tokens", nullptr, token)->status, 403);

    StartDemoClient(token);
    const auto job = CreateJob("every-second", "demo", "echo", {{"params", "{\"hi\":1}"}});
    ASSERT_TRUE(WaitFor(
        [&] {
            int succeeded = 0;
            for (const auto& f : Fires(job)) succeeded += f["status"] == "succeeded";
            return succeeded >= 3;
        },
        30s))
        << Json(Api(http::Method::kGet, "/api/v1/fires?job_id=" + std::to_string(job))).dump() << "\n"
        << client_->stderr_text() << standalone_->stderr_text();
    for (const auto& f : Fires(job)) {
        EXPECT_TRUE(f["status"] != "failed") << f.dump();
    }
}

// The log's tail travels with the result and is stored, so an ended fire's log is still
// readable once the executor that ran it is gone (SIGKILL: no deregistration, no goodbye).
TEST_F(ExecutorCredentials, AnEndedFiresLogIsReadableAfterItsExecutorIsKilled) {
    const auto token_file = dir_ / "data/executor-token";
    ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(token_file); }, 10s));
    std::string token;
    std::getline(std::ifstream(token_file), token);
    StartDemoClient(token);
    const auto job = CreateJob("logged", "demo", "echo", {{"params", "{\"hi\":1}"}});
    std::int64_t fire = 0;
    ASSERT_TRUE(WaitFor(
        [&] {
            for (const auto& f : Fires(job)) {
                if (f["status"] == "succeeded") fire = f["id"].get<std::int64_t>();
            }
            return fire != 0;
        },
        20s))
        << client_->stderr_text() << standalone_->stderr_text();
    const std::string path = "/api/v1/fires/" + std::to_string(fire) + "/log";

    client_->Signal(SIGKILL);
    ASSERT_TRUE(client_->WaitForExit(10s));
    auto r = Api(http::Method::kGet, path);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->status, 200) << r->body;
    const auto log = Json(r);
    EXPECT_EQ(log["source"], "stored");
    EXPECT_EQ(log["fire_status"], "succeeded");
    EXPECT_TRUE(log["finished"].get<bool>());
    ASSERT_GE(log["lines"].size(), 3u) << log.dump();
    EXPECT_NE(log["lines"][0].get<std::string>().find("accepted: handler echo"), std::string::npos) << log.dump();
    EXPECT_NE(log["lines"].back().get<std::string>().find("finished: succeeded"), std::string::npos) << log.dump();
    EXPECT_EQ(log["truncated_bytes"], 0);
}

// The same for fires the cluster ended itself: killed through the API (the fire is `killed`
// before the executor reports), timed out (the node may record `timeout` first). The
// executor's own report of that run then comes second, and its log is kept all the same.
TEST_F(ExecutorCredentials, TheLogsOfKilledAndTimedOutFiresOutliveTheirExecutor) {
    std::string token;
    ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(dir_ / "data/executor-token"); }, 10s));
    std::getline(std::ifstream(dir_ / "data/executor-token"), token);
    StartDemoClient(token);
    const auto manual = [&](const std::string& name, const nlohmann::json& extra) {
        nlohmann::json fields = {{"params", "{\"ms\": 30000}"}};
        fields.update(extra);
        const auto id = PostJob(name, "demo", "sleep", "manual", fields);
        EXPECT_EQ(Api(http::Method::kPost, "/api/v1/jobs/" + std::to_string(id) + "/trigger")->status, 202);
        return id;
    };
    // The demo client registers within its first heartbeats; a fire with no instance yet waits.
    const auto killed_job = manual("to-kill", nlohmann::json::object());
    const auto timed_job = manual("to-time-out", {{"timeout_ms", 500}});
    std::int64_t killed = 0;
    ASSERT_TRUE(WaitFor(
        [&] {
            const auto fires = Fires(killed_job);
            if (fires.empty() || fires[0]["status"] != "running") return false;
            killed = fires[0]["id"].get<std::int64_t>();
            return Api(http::Method::kPost, "/api/v1/fires/" + std::to_string(killed) + "/kill")->status == 202;
        },
        20s))
        << client_->stderr_text() << standalone_->stderr_text();
    // Ended by its timeout: `timeout`, or `killed` while a node still kills a timed-out run
    // without saying why (a kill landing before the executor's own deadline). Its log either way.
    std::int64_t timed_out = 0;
    std::string timed_status;
    ASSERT_TRUE(WaitFor(
        [&] {
            const auto fires = Fires(timed_job);
            if (fires.empty() || (fires[0]["status"] != "timeout" && fires[0]["status"] != "killed")) return false;
            timed_out = fires[0]["id"].get<std::int64_t>();
            timed_status = fires[0]["status"].get<std::string>();
            return true;
        },
        20s))
        << nlohmann::json(Fires(timed_job)).dump();
    const auto log_of = [&](std::int64_t fire) {
        return Api(http::Method::kGet, "/api/v1/fires/" + std::to_string(fire) + "/log");
    };
    // Each stored once the executor's report came (it keeps answering live until then).
    for (const auto fire : {killed, timed_out}) {
        EXPECT_TRUE(WaitFor([&] { return Json(log_of(fire))["source"] == "stored"; }, 10s))
            << fire << ": " << Json(log_of(fire)).dump();
    }

    client_->Signal(SIGKILL);
    ASSERT_TRUE(client_->WaitForExit(10s));
    for (const auto& [fire, status] :
         std::vector<std::pair<std::int64_t, std::string>>{{killed, "killed"}, {timed_out, timed_status}}) {
        SCOPED_TRACE(status);
        auto r = log_of(fire);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        ASSERT_EQ(r->status, 200) << r->body;
        const auto log = Json(r);
        EXPECT_EQ(log["source"], "stored");
        EXPECT_EQ(log["fire_status"], status);
        ASSERT_GE(log["lines"].size(), 3u) << log.dump();
        EXPECT_NE(log["lines"][1].get<std::string>().find("started"), std::string::npos) << log.dump();
        EXPECT_NE(log.dump().find("sleeping 30000 ms"), std::string::npos) << log.dump();
        EXPECT_NE(log["lines"].back().get<std::string>().find("finished: " + status), std::string::npos) << log.dump();
    }
}

TEST_F(ExecutorCredentials, RotatingTheSigningKeyUnderEverySecondJobsLosesNoFire) {
    std::string token;
    ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(dir_ / "data/executor-token"); }, 10s));
    std::getline(std::ifstream(dir_ / "data/executor-token"), token);
    StartDemoClient(token);
    std::vector<std::int64_t> jobs;
    for (int i = 0; i < 3; ++i) jobs.push_back(CreateJob("tick-" + std::to_string(i), "demo", "count"));
    ASSERT_TRUE(WaitFor([&] { return !Fires(jobs[0]).empty(); }, 20s)) << client_->stderr_text();

    // Two rotations back to back: the first key is retired by the second, under load.
    std::set<std::string> seen_ids;
    for (int rotation = 0; rotation < 2; ++rotation) {
        Result<http::ClientResponse> rotated = Status(Code::kUnavailable, "not tried");
        // The grace: about seven heartbeats of the demo client.
        ASSERT_TRUE(WaitFor(
            [&] {
                rotated = Api(http::Method::kPost, "/api/v1/apps/demo/signing-keys/rotate", {{"grace_ms", 2000}});
                return rotated.ok() && rotated->status == 200;  // 409 while the last one settles
            },
            30s))
            << Json(rotated).dump();
        const auto rotated_body = Json(rotated);
        for (const auto& k : rotated_body["keys"]) seen_ids.insert(k["id"].get<std::string>());
        // The new key becomes the signing one after its grace.
        ASSERT_TRUE(WaitFor(
            [&] {
                const auto keys = Json(Api(http::Method::kGet, "/api/v1/apps/demo/signing-keys"))["keys"];
                return keys.size() == 2 && keys[0]["state"] == "signing";
            },
            20s));
    }
    EXPECT_EQ(seen_ids.size(), 3u);
    // Fires keep flowing for a while with the newest key (nodes refresh their key cache every 5 s).
    std::this_thread::sleep_for(7s);
    const auto end_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    ASSERT_TRUE(WaitFor(
        [&] {
            for (const auto job : jobs) {
                for (const auto& f : Fires(job)) {
                    if (f["scheduled_time"].get<std::int64_t>() < end_ms - 2000 && f["status"] != "succeeded") {
                        return false;
                    }
                }
            }
            return true;
        },
        15s));
    std::size_t total = 0;
    for (const auto job : jobs) {
        const auto fires = Fires(job);
        std::set<std::int64_t> seconds;
        for (const auto& f : fires) {
            const auto t = f["scheduled_time"].get<std::int64_t>();
            if (t >= end_ms - 2000) continue;
            EXPECT_EQ(f["status"], "succeeded") << f.dump();
            seconds.insert(t / 1000);
        }
        ASSERT_FALSE(seconds.empty());
        // Every second from the first to the last has its fire: none skipped or lost.
        EXPECT_EQ(static_cast<std::int64_t>(seconds.size()), *seconds.rbegin() - *seconds.begin() + 1);
        total += seconds.size();
    }
    EXPECT_GE(total, 3u * 15u) << "expected about 20 s of every-second fires per job";
    EXPECT_EQ(client_->stderr_text().find("refused"), std::string::npos) << client_->stderr_text();
}

TEST_F(ExecutorCredentials, WhatNodesSendAnExecutorOpensNothingInTheCluster) {
    SpyExecutor spy;
    const std::string token = CreateExecutorToken("spy");
    // The spy registers like any service, with an executor token.
    const nlohmann::json beat = {
        {"app", "spy"}, {"address", spy.address()}, {"handlers", {"h"}}, {"capacity", 100}, {"running", 0}};
    ASSERT_EQ(Api(http::Method::kPost, "/api/v1/registry/heartbeat", beat, token)->status, 200);
    // failover probes /v1/beat, busy-over /v1/idle-beat; the timeout makes the slave send /v1/kill.
    const auto failover = CreateJob("f", "spy", "h", {{"routing", "failover"}, {"timeout_ms", 5000}});
    CreateJob("b", "spy", "h", {{"routing", "busy-over"}, {"timeout_ms", 300}});
    ASSERT_TRUE(WaitFor(
        [&] {
            const auto p = spy.paths();
            return p.count("/v1/run") && p.count("/v1/beat") && p.count("/v1/idle-beat") && p.count("/v1/kill");
        },
        20s));
    // The web module's kill and log calls (a fire running there right now).
    ASSERT_TRUE(WaitFor(
        [&] {
            for (const auto& f : Fires(failover)) {
                if (f["status"] != "running") continue;
                const std::string path = "/api/v1/fires/" + std::to_string(f["id"].get<std::int64_t>());
                (void)Api(http::Method::kGet, path + "/log");
                auto killed = Api(http::Method::kPost, path + "/kill");
                if (killed.ok() && killed->status == 202) return true;
            }
            return false;
        },
        20s));
    ASSERT_TRUE(WaitFor([&] { return spy.paths().count("/v1/log") > 0; }, 5s));

    const auto captured = spy.captured();
    ASSERT_GE(captured.size(), 5u);
    const std::vector<std::pair<http::Method, std::string>> targets = {
        {http::Method::kGet, "/api/v1/jobs"},
        {http::Method::kGet, "/api/v1/tokens"},
        {http::Method::kPost, "/api/v1/registry/heartbeat"},
        {http::Method::kPost, "/api/v1/callback"},
        {http::Method::kPost, "/internal/v1/fires"},
        {http::Method::kPost, "/internal/v1/election/nudge"},
        {http::Method::kPost, "/internal/v1/master/wake"},
        {http::Method::kPost, "/internal/v1/runs/ended"},
    };
    for (const auto& c : captured) {
        SCOPED_TRACE(c.target);
        EXPECT_FALSE(c.headers.Get("Authorization")) << "a bearer token reached an executor";
        EXPECT_TRUE(c.headers.Get("X-Sched-Signature"));
        // Replayed verbatim (every header) against the node: nothing opens.
        for (const auto& [method, path] : targets) {
            http::ClientRequest replay{.method = method, .url = url_ + path, .body = c.body};
            for (const auto& [name, value] : c.headers) {
                if (name == "Host" || name == "Content-Length" || name == "Connection") continue;
                replay.headers.Set(name, value);
            }
            auto r = http_.Send(std::move(replay));
            ASSERT_TRUE(r.ok());
            EXPECT_EQ(r->status, 401) << http::MethodName(method) << " " << path << ": " << r->body;
        }
    }
}

// A run is accepted once per app, not once per instance: a signed run captured on its way to one
// instance and replayed to another instance of the same app is refused there (each instance
// remembers only the runs it received, so it would run the fire a second time, unseen by the
// cluster); replayed to the instance it was sent to, it is the duplicate it always was.
TEST_F(ExecutorCredentials, ARunCapturedOnItsWayToOneInstanceIsRefusedByAnotherInstanceOfTheApp) {
    std::string token;
    ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(dir_ / "data/executor-token"); }, 10s));
    std::getline(std::ifstream(dir_ / "data/executor-token"), token);
    // Instance A advertises the spy's address: the node sends A's runs there, and the spy keeps
    // them as a capture on the wire would. Instance B is another instance of the same app.
    SpyExecutor wire;
    const std::uint16_t port_a = testing::FreeLoopbackPort();
    ASSERT_NE(port_a, 0);
    const auto instance = [&](const std::string& name, const std::string& listen, const std::string& advertised) {
        const auto config =
            Write(name + ".yaml", "log:\n  level: warn\nexecutor:\n  app: demo\n  web-endpoints: [\"" + url_ +
                                      "\"]\n  heartbeat-interval: 300ms\n  metrics: true\n  advertised-address: \"" +
                                      advertised + "\"\n  spool-dir: \"" + (dir_ / ("spool-" + name)).string() +
                                      "\"\n  http:\n    listen: \"" + listen + "\"\n");
        return std::make_unique<ChildProcess>(std::vector<std::string>{SCHED_DEMO_CLIENT_BIN, "--config", config},
                                              dir_.string(), std::vector<std::string>{"SCHED_TOKEN=" + token});
    };
    const std::string url_a = "http://127.0.0.1:" + std::to_string(port_a);
    auto a = instance("a", "127.0.0.1:" + std::to_string(port_a), wire.address());
    // Holding the app's keys (from its first answered heartbeat), it verifies what nodes sign.
    const auto holds_keys = [&](const std::string& url) {
        auto metrics = http_.Get(url + "/metrics");
        return metrics.ok() && metrics->body.find("\nsched_client_signing_keys 1") != std::string::npos;
    };
    ASSERT_TRUE(WaitFor([&] { return holds_keys(url_a); }, 20s)) << a->stderr_text();

    nlohmann::json job = {{"name", "once"}, {"app", "demo"}, {"handler", "count"}, {"schedule_type", "manual"}};
    auto created = Api(http::Method::kPost, "/api/v1/jobs", job);
    ASSERT_TRUE(created.ok() && created->status == 201) << Json(created).dump();
    const auto job_id = Json(created)["id"].get<std::int64_t>();
    ASSERT_EQ(Api(http::Method::kPost, "/api/v1/jobs/" + std::to_string(job_id) + "/trigger")->status, 202);
    std::optional<Captured> run;
    ASSERT_TRUE(WaitFor(
        [&] {
            for (const auto& c : wire.captured()) {
                if (c.target.substr(0, c.target.find('?')) == "/v1/run") run = c;
            }
            return run.has_value();
        },
        20s))
        << standalone_->stderr_text();
    // The node addressed it to the instance it sent it to, under the signature.
    EXPECT_NE(run->target.find("instance=" + wire.address()), std::string::npos) << run->target;

    auto b = instance("b", "127.0.0.1:0", "");
    std::string url_b;
    ASSERT_TRUE(WaitFor(
        [&] {
            const auto listed = Json(Api(http::Method::kGet, "/api/v1/executors?app=demo"));
            for (const auto& item : listed["items"]) {
                const auto address = item["address"].get<std::string>();
                if (address != wire.address()) url_b = "http://" + address;
            }
            return !url_b.empty() && holds_keys(url_b);
        },
        20s))
        << b->stderr_text();

    const auto replay = [&](const std::string& url) {
        http::ClientRequest request{.method = run->method, .url = url + run->target, .body = run->body};
        for (const auto& [name, value] : run->headers) {
            if (name == "Host" || name == "Content-Length" || name == "Connection") continue;
            request.headers.Set(name, value);
        }
        return http_.Send(std::move(request));
    };
    // To the other instance of the app: refused, and nothing runs there.
    auto other = replay(url_b);
    ASSERT_TRUE(other.ok()) << other.status().ToString();
    EXPECT_EQ(other->status, 401) << other->body;
    EXPECT_NE(other->body.find("addressed to instance"), std::string::npos) << other->body;
    // To the instance it was sent to: accepted once (the spy ran nothing), then a duplicate.
    auto first = replay(url_a);
    ASSERT_TRUE(first.ok());
    EXPECT_EQ(first->status, 202) << first->body;
    EXPECT_FALSE(Json(first).value("duplicate", false)) << first->body;
    auto again = replay(url_a);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->status, 202);
    EXPECT_TRUE(Json(again).value("duplicate", false)) << again->body;
    ASSERT_TRUE(WaitFor(
        [&] {
            const auto fires = Fires(job_id);
            return fires.size() == 1 && fires[0]["status"] == "succeeded";
        },
        20s))
        << nlohmann::json(Fires(job_id)).dump();
    const auto accepted = [&](const std::string& url) {
        const std::string needle = "\nsched_client_runs_accepted_total ";
        const std::string body = http_.Get(url + "/metrics")->body;
        const auto at = body.find(needle);
        if (at == std::string::npos) return std::string("?");
        const auto from = at + needle.size();
        return body.substr(from, body.find('\n', from) - from);
    };
    EXPECT_EQ(accepted(url_a), "1");
    EXPECT_EQ(accepted(url_b), "0");
    for (auto* instance_process : {a.get(), b.get()}) {
        instance_process->Signal(SIGTERM);
        (void)instance_process->WaitForExit(10s);
    }
}

}  // namespace
}  // namespace sched
