// A success that reaches the cluster after the fire was recorded lost, with real processes: a
// standalone node killed (-9) while an executor holds the run it sent, restarted under the same
// node id (which ends the fire `lost`, reason slave_restarted, and plans the at-least-once
// retry), then the executor's result: the fire ends `succeeded` (reason succeeded_late), the
// retry is ended before it runs, and the job ran once (docs/architecture/callbacks.md).

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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

constexpr const char* kClusterToken = "cluster-t0ken-late";

// Stands on the wire between the node and the demo client (the client advertises its address):
// it keeps the first run it is sent and answers it only when released, so the node dies with the
// run in flight - accepted nowhere yet, its fire still `dispatching`.
class HeldWire {
  public:
    struct Call {
        std::string target;
        http::Headers headers;
        std::string body;
    };

    HeldWire() {
        http::Router router;
        router.Add(http::Method::kPost, "/v1/run", [this](http::Request& req) -> net::awaitable<http::Response> {
            {
                std::lock_guard lock(mu_);
                if (!held_) held_ = Call{req.target, req.headers, req.body};
            }
            net::steady_timer timer(co_await net::this_coro::executor);
            while (!released_) {
                timer.expires_after(5ms);
                co_await timer.async_wait(net::use_awaitable);
            }
            co_return http::Response::Json({{"accepted", true}, {"state", "running"}}, 202);
        });
        server_ = std::make_unique<http::testing::TestServer>(std::move(router), http::testing::LoopbackOptions());
    }
    ~HeldWire() { Release(); }

    std::string address() const { return "127.0.0.1:" + std::to_string(server_->port()); }
    std::optional<Call> held() {
        std::lock_guard lock(mu_);
        return held_;
    }
    void Release() { released_ = true; }

  private:
    std::mutex mu_;
    std::optional<Call> held_;
    std::atomic<bool> released_{false};
    std::unique_ptr<http::testing::TestServer> server_;
};

class LateSuccess : public ::testing::Test {
  protected:
    void SetUp() override {
        port_ = testing::FreeLoopbackPort();
        url_ = "http://127.0.0.1:" + std::to_string(port_);
        // One node id across the restart: its slave ends what the killed process left dispatching.
        config_ = Write("standalone.yaml", "node-id: \"late-1\"\ntoken: \"" + std::string(kClusterToken) +
                                               "\"\nhttp:\n  listen: \"127.0.0.1:" + std::to_string(port_) +
                                               "\"\ndatabase:\n  url: \"sqlite://" +
                                               (dir_ / "data/scheduler.db").string() + "\"\nlog:\n  level: warn\n");
        StartNode();
    }
    void TearDown() override {
        testing::StopChild(client_);
        testing::StopChild(node_);
    }

    void StartNode() {
        node_ = std::make_unique<ChildProcess>(std::vector<std::string>{SCHED_STANDALONE_BIN, "--config", config_},
                                               dir_.string());
        ASSERT_TRUE(node_->WaitForStdoutLine("listening on " + url_, 30s)) << node_->stderr_text();
    }
    std::string Write(const std::string& name, const std::string& text) { return testing::WriteFile(dir_, name, text); }
    nlohmann::json Api(http::Method method, const std::string& path, const nlohmann::json& body = nullptr,
                       const std::string& token = kClusterToken, int* status = nullptr) {
        auto r = http_.Send(testing::JsonRequest(method, url_ + path, body), testing::AsBearer(token));
        if (status != nullptr) *status = r.ok() ? r->status : -1;
        return testing::AnswerJson(r);
    }
    std::vector<nlohmann::json> Fires(std::int64_t job_id) {
        std::vector<nlohmann::json> out;
        const auto page = Api(http::Method::kGet, "/api/v1/fires?limit=50&job_id=" + std::to_string(job_id));
        if (page.contains("items")) {
            for (const auto& f : page["items"]) out.push_back(f);
        }
        return out;
    }
    std::optional<nlohmann::json> FireAt(std::int64_t job_id, int attempt) {
        for (auto& f : Fires(job_id)) {
            if (f["attempt"] == attempt) return f;
        }
        return std::nullopt;
    }

    testing::ScratchDir scratch_{"sched-late-"};
    const std::filesystem::path& dir_ = scratch_.path();
    std::uint16_t port_ = 0;
    std::string url_;
    std::string config_;
    std::unique_ptr<ChildProcess> node_;
    std::unique_ptr<ChildProcess> client_;
    http::testing::BlockingClient http_;
};

TEST_F(LateSuccess, ASuccessAfterTheRestartEndedTheFireLostIsRecordedAndTheRetryNeverRuns) {
    int status = 0;
    const auto token = Api(http::Method::kPost, "/api/v1/tokens",
                           {{"name", "svc"}, {"role", "executor"}, {"apps", {"demo"}}}, kClusterToken, &status);
    ASSERT_EQ(status, 201) << token.dump();
    HeldWire wire;
    const std::uint16_t client_port = testing::FreeLoopbackPort();
    const auto client_config =
        Write("demo-client.yaml", "log:\n  level: warn\nexecutor:\n  app: demo\n  web-endpoints: [\"" + url_ +
                                      "\"]\n  heartbeat-interval: 300ms\n  callback-max-backoff: 200ms\n"
                                      "  advertised-address: \"" +
                                      wire.address() + "\"\n  spool-dir: \"" + (dir_ / "spool").string() +
                                      "\"\n  http:\n    listen: \"127.0.0.1:" + std::to_string(client_port) + "\"\n");
    client_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{SCHED_DEMO_CLIENT_BIN, "--config", client_config}, dir_.string(),
        std::vector<std::string>{"SCHED_TOKEN=" + token["token"].get<std::string>()});

    // At-least-once: a lost fire is retried, here ten minutes later at the earliest.
    const auto job = Api(http::Method::kPost, "/api/v1/jobs",
                         {{"name", "charge-once"},
                          {"app", "demo"},
                          {"handler", "count"},
                          {"schedule_type", "manual"},
                          {"at_least_once", true},
                          {"retry_backoff_ms", 20 * 60 * 1000}},
                         kClusterToken, &status);
    ASSERT_EQ(status, 201) << job.dump();
    const auto job_id = job["id"].get<std::int64_t>();
    // Sent once the demo client's first heartbeat registered it (a fire without an instance waits).
    Api(http::Method::kPost, "/api/v1/jobs/" + std::to_string(job_id) + "/trigger", nullptr, kClusterToken, &status);
    ASSERT_EQ(status, 202);
    ASSERT_TRUE(WaitFor([&] { return wire.held().has_value(); }, 30s)) << node_->stderr_text();
    const auto run = *wire.held();
    ASSERT_EQ(FireAt(job_id, 0).value_or(nlohmann::json())["status"], "dispatching");

    // The node dies with the run in flight, and comes back under its node id.
    node_->Signal(SIGKILL);
    ASSERT_TRUE(node_->WaitForExit(10s));
    StartNode();
    ASSERT_TRUE(WaitFor([&] { return FireAt(job_id, 0).value_or(nlohmann::json())["status"] == "lost"; }, 20s))
        << nlohmann::json(Fires(job_id)).dump();
    EXPECT_EQ(FireAt(job_id, 0)->value("reason", ""), "slave_restarted");
    // The master planned the retry the loss owes an at-least-once job.
    ASSERT_TRUE(WaitFor([&] { return FireAt(job_id, 1).has_value(); }, 20s)) << nlohmann::json(Fires(job_id)).dump();
    EXPECT_EQ((*FireAt(job_id, 1))["status"], "pending");

    // Now the run reaches the executor (within the signature's window), which runs it and reports.
    http::ClientRequest delivered{.method = http::Method::kPost,
                                  .url = "http://127.0.0.1:" + std::to_string(client_port) + run.target,
                                  .body = run.body};
    for (const auto& [name, value] : run.headers) {
        if (name == "Host" || name == "Content-Length" || name == "Connection") continue;
        delivered.headers.Set(name, value);
    }
    auto accepted = http_.Send(std::move(delivered));
    ASSERT_TRUE(accepted.ok()) << accepted.status().ToString();
    ASSERT_EQ(accepted->status, 202) << accepted->body;
    wire.Release();

    ASSERT_TRUE(WaitFor([&] { return FireAt(job_id, 0).value_or(nlohmann::json())["status"] == "succeeded"; }, 20s))
        << nlohmann::json(Fires(job_id)).dump() << client_->stderr_text();
    const auto fire = *FireAt(job_id, 0);
    EXPECT_EQ(fire["reason"], "succeeded_late") << fire.dump();
    EXPECT_NE(fire["result_message"].get<std::string>().find("recorded lost (slave_restarted)"), std::string::npos)
        << fire.dump();
    const auto retry = *FireAt(job_id, 1);
    EXPECT_EQ(retry["status"], "skipped") << retry.dump();
    EXPECT_EQ(retry["reason"], "succeeded_late") << retry.dump();
    // The job's handler ran once: the count handler's message is its call count.
    EXPECT_NE(fire["result_message"].get<std::string>().find(": 1"), std::string::npos) << fire.dump();
}

}  // namespace
}  // namespace sched
