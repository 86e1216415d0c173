#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "demo_handlers.hpp"
#include "sched/client/testing/fake_web.hpp"
#include "sched/common/node_id.hpp"
#include "sched/common/testing/child_process.hpp"
#include "sched/http/testing/test_server.hpp"

namespace sched::demo {
namespace {

using namespace std::chrono_literals;
using http::testing::WaitFor;

constexpr const char* kToken = "demo-test-token";

struct Ran {
    Status status;
    std::string message;
    std::vector<std::string> log;
};

Ran RunHandler(const std::function<Status(client::JobContext&)>& fn, nlohmann::json params,
               client::CancellationToken* token = nullptr) {
    client::RunRequest run;
    run.fire_id = 1;
    run.params = std::move(params);
    client::CancellationToken own;
    Ran out;
    client::JobContext ctx(run, token ? *token : own, std::chrono::steady_clock::time_point::max(),
                           [&](std::string line) { out.log.push_back(std::move(line)); });
    out.status = fn(ctx);
    out.message = ctx.result_message();
    return out;
}

TEST(DemoHandlers, EchoReturnsItsParams) {
    const auto r = RunHandler(Echo, {{"a", 1}});
    EXPECT_TRUE(r.status.ok());
    EXPECT_EQ(r.message, R"({"a":1})");
    EXPECT_EQ(r.log, std::vector<std::string>{R"(echo: {"a":1})"});
}

TEST(DemoHandlers, SleepValidatesMsAndStopsWhenCancelled) {
    EXPECT_EQ(RunHandler(Sleep, {{"ms", 1}}).message, "slept 1 ms");
    const auto bad = RunHandler(Sleep, {{"ms", "long"}});
    EXPECT_EQ(bad.status.code(), Code::kInvalidArgument);
    EXPECT_NE(bad.status.message().find("params.ms"), std::string::npos);
    client::CancellationToken token;
    token.Cancel(client::CancelReason::kKilled);
    EXPECT_EQ(RunHandler(Sleep, {{"ms", 3'600'000}}, &token).status.code(), Code::kCancelled);
}

TEST(DemoHandlers, FailFailsWithTheGivenMessage) {
    EXPECT_EQ(RunHandler(Fail, {{"message", "no paper"}}).status.message(), "no paper");
    EXPECT_EQ(RunHandler(Fail, nullptr).status.message(), "failed on purpose");
}

TEST(DemoOptions, ReadTheShippedConfigAndRefuseAnEmptyLedgerDir) {
    const auto root = ConfigNode::LoadFile(DEMO_CLIENT_CONFIG);
    EXPECT_EQ(DemoOptions::FromYaml(root.Child("demo")).ledger_dir, "data/demo-ledger");
    const auto empty = ConfigNode::LoadString("demo:\n  ledger-dir: \"\"\n");
    EXPECT_THROW(DemoOptions::FromYaml(empty.Child("demo")), ConfigError);
}

TEST(DemoHandlers, PayWithoutTheLockChargesAnOrderOnceThenFindsItCharged) {
    const auto dir = std::filesystem::temp_directory_path() / ("sched-pay-" + RandomHex(8));
    DemoOptions options;
    options.ledger_dir = dir / "ledger";
    client::ExecutorOptions eo;
    eo.app = "demo";
    eo.web_endpoints = {"http://127.0.0.1:1"};
    eo.token = kToken;
    eo.web_timeout = std::chrono::milliseconds(300);
    client::Executor executor(eo);
    const auto pay = [&](client::JobContext& ctx) {
        return Pay(executor, options, ctx);
    };
    const nlohmann::json params = {{"order", 7}, {"lock", false}, {"delay_ms", 0}};
    EXPECT_EQ(RunHandler(pay, params).message, "charged");
    EXPECT_EQ(RunHandler(pay, params).message, "already charged");
    std::ifstream in(options.ledger_dir / "order-7.ledger");
    std::string line;
    ASSERT_TRUE(std::getline(in, line));
    EXPECT_EQ(line.rfind("charged 100 epoch 0 by ", 0), 0u) << line;
    EXPECT_FALSE(std::getline(in, line));
    EXPECT_EQ(RunHandler(pay, {{"order", -1}}).status.code(), Code::kInvalidArgument);
    // With the lock and no server to ask, it refuses to charge.
    EXPECT_EQ(RunHandler(pay, {{"order", 8}, {"wait_ms", 0}}).status.code(), Code::kUnavailable);
    EXPECT_FALSE(std::filesystem::exists(options.ledger_dir / "order-8.ledger"));
    std::filesystem::remove_all(dir);
}

// A demo-client process, stopped by PID when the test ends: stdout and stderr in a fresh
// `output_path`, SCHED_TOKEN only when `env` gives it.
class Process : public testing::ChildProcess {
  public:
    Process(const std::vector<std::string>& args, const std::vector<std::string>& env, const std::string& output_path)
        : ChildProcess(Argv(args), Fresh(output_path), WithoutInheritedToken(env)) {}
    /// The exit code once the process ended within `timeout`; -1 otherwise.
    int Wait(std::chrono::milliseconds timeout = 20s) { return WaitForExit(timeout).value_or(-1); }

  private:
    static std::vector<std::string> Argv(const std::vector<std::string>& args) {
        std::vector<std::string> argv{DEMO_CLIENT_BINARY};
        argv.insert(argv.end(), args.begin(), args.end());
        return argv;
    }
    static testing::OutputFile Fresh(const std::string& path) {
        std::filesystem::remove(path);
        return {path};
    }
    static std::vector<std::string> WithoutInheritedToken(const std::vector<std::string>& env) {
        std::vector<std::string> out{"SCHED_TOKEN"};
        out.insert(out.end(), env.begin(), env.end());
        return out;
    }
};

class DemoClientProcess : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = std::filesystem::temp_directory_path() / ("sched-demo-client-test-" + RandomHex(8));
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    std::string WriteConfig(const std::string& text) {
        const auto path = (dir_ / "demo-client.yaml").string();
        std::ofstream(path) << text;
        return path;
    }
    std::string Output() const {
        std::ifstream in(dir_ / "output.txt");
        std::stringstream s;
        s << in.rdbuf();
        return s.str();
    }
    std::string OutputPath() const { return (dir_ / "output.txt").string(); }

    std::filesystem::path dir_;
};

TEST_F(DemoClientProcess, VersionAndHelp) {
    Process version({"--version"}, {}, OutputPath());
    EXPECT_EQ(version.Wait(), 0);
    EXPECT_EQ(Output(), std::string("demo-client ") + "0.1.0\n");
    Process help({"--help"}, {}, OutputPath());
    EXPECT_EQ(help.Wait(), 0);
    EXPECT_NE(Output().find("usage: demo-client"), std::string::npos);
    Process bad({"--frobnicate"}, {}, OutputPath());
    EXPECT_EQ(bad.Wait(), 2);
}

TEST_F(DemoClientProcess, InvalidConfigExitsWithCode2AndOneLineNamingTheKey) {
    const auto unknown =
        WriteConfig("executor:\n  app: demo\n  web-endpoints: [\"http://127.0.0.1:1\"]\n  capacty: 3\n");
    Process a({"--config", unknown}, {std::string("SCHED_TOKEN=") + kToken}, OutputPath());
    EXPECT_EQ(a.Wait(), 2);
    EXPECT_EQ(Output(), "demo-client: executor.capacty: unknown key\n");

    const auto no_token = WriteConfig("executor:\n  app: demo\n  web-endpoints: [\"http://127.0.0.1:1\"]\n");
    Process b({"--config", no_token}, {}, OutputPath());
    EXPECT_EQ(b.Wait(), 2);
    const std::string output = Output();
    EXPECT_EQ(output.rfind("demo-client: executor.token: required", 0), 0u) << output;
    EXPECT_EQ(std::count(output.begin(), output.end(), '\n'), 1);

    Process c({"--config", (dir_ / "missing.yaml").string()}, {}, OutputPath());
    EXPECT_EQ(c.Wait(), 2);
}

TEST_F(DemoClientProcess, ServesRunsAndDeregistersOnSigterm) {
    client::testing::FakeWeb web(kToken);
    const auto config = WriteConfig("log:\n  level: warn\nexecutor:\n  app: demo\n  web-endpoints: [\"" + web.Url() +
                                    "\"]\n  heartbeat-interval: 100ms\n  callback-flush-interval: 5ms\n"
                                    "  spool-dir: \"" +
                                    (dir_ / "spool").string() + "\"\n  http:\n    listen: \"127.0.0.1:0\"\n");
    Process demo({"--config", config}, {std::string("SCHED_TOKEN=") + kToken}, OutputPath());
    ASSERT_GT(demo.pid(), 0);
    ASSERT_TRUE(WaitFor([&] { return !web.Heartbeats().empty(); })) << Output();
    const auto heartbeat = web.Heartbeats().front();
    EXPECT_EQ(heartbeat["handlers"], (nlohmann::json{"conformance.echo", "conformance.fail", "conformance.sleep",
                                                     "count", "echo", "fail", "pay", "sleep"}));
    const std::string base = "http://" + heartbeat["address"].get<std::string>();

    http::testing::BlockingClient client;
    // Signed with the key FakeWeb's heartbeat answers hand out (docs/protocol.md).
    const auto run = [&](std::int64_t fire, const std::string& handler, nlohmann::json params) {
        nlohmann::json body = {{"fire_id", fire}, {"job_id", fire},     {"attempt", 0},
                               {"epoch", 1},      {"handler", handler}, {"params", std::move(params)}};
        auto r = client.Send(client::testing::SignedRequest(client::testing::TestSigningKey(), http::Method::kPost,
                                                            base + "/v1/run", body.dump()));
        return r.ok() ? r->status : -1;
    };
    // The keys arrive with the first heartbeat's answer, just after the heartbeat itself.
    ASSERT_TRUE(WaitFor([&] {
        auto r = client.Send(
            client::testing::SignedRequest(client::testing::TestSigningKey(), http::Method::kGet, base + "/v1/beat"));
        return r.ok() && r->status == 200;
    }));
    ASSERT_EQ(run(1, "echo", {{"hello", "world"}}), 202);
    ASSERT_EQ(run(2, "count", nullptr), 202);
    ASSERT_EQ(run(3, "fail", {{"message", "nope"}}), 202);
    ASSERT_TRUE(WaitFor([&] { return web.Results().size() == 3; }));
    EXPECT_EQ(web.ResultsFor(1)[0]["message"], R"({"hello":"world"})");
    EXPECT_EQ(web.ResultsFor(2)[0]["message"], "1");
    EXPECT_EQ(web.ResultsFor(3)[0]["status"], "failed");

    ASSERT_EQ(run(4, "sleep", {{"ms", 60'000}}), 202);
    ASSERT_EQ(::kill(demo.pid(), SIGTERM), 0);
    // The grace (30 s) is longer than this wait: the sleep must not hold up a kill request.
    auto kill = client.Send(client::testing::SignedRequest(client::testing::TestSigningKey(), http::Method::kPost,
                                                           base + "/v1/kill", R"({"fire_id":4})"));
    ASSERT_TRUE(kill.ok());
    EXPECT_EQ(kill->status, 200);
    EXPECT_EQ(demo.Wait(), 0) << Output();
    ASSERT_EQ(web.ResultsFor(4).size(), 1u);
    EXPECT_EQ(web.ResultsFor(4)[0]["status"], "killed");
    ASSERT_EQ(web.Deregistrations().size(), 1u);
    EXPECT_EQ(web.Deregistrations()[0]["address"], heartbeat["address"]);
}

}  // namespace
}  // namespace sched::demo
