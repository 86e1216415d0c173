// The scheduler-standalone binary as an operator runs it: real process, real HTTP on loopback.

#include <signal.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "../support/child_process.hpp"
#include "sched/common/node_id.hpp"

namespace sched {
namespace {

using namespace std::chrono_literals;
using testing::ChildProcess;

class StandaloneProcess : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = std::filesystem::temp_directory_path() / ("sched-standalone-" + RandomHex(10));
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    std::string WriteConfig(const std::string& yaml) {
        const auto path = dir_ / "standalone.yaml";
        std::ofstream(path) << yaml;
        return path.string();
    }
    std::string DefaultConfig() {
        return WriteConfig("http:\n  listen: \"127.0.0.1:0\"\ndatabase:\n  url: \"sqlite://" +
                           (dir_ / "data/s.db").string() + "\"\nlog:\n  level: info\n");
    }
    static unsigned short PortOf(const std::string& line) {
        return static_cast<unsigned short>(std::stoi(line.substr(line.rfind(':') + 1)));
    }

    std::filesystem::path dir_;
};

TEST_F(StandaloneProcess, ServesHealthReadinessAndMetricsThenStopsOnSigterm) {
    ChildProcess p({SCHED_STANDALONE_BIN, "--config", DefaultConfig()}, dir_.string());
    auto line = p.WaitForStdoutLine("listening on http://127.0.0.1:", 20s);
    ASSERT_TRUE(line) << p.stderr_text();
    const auto port = PortOf(*line);
    // No token configured: one is generated and printed, never an open scheduler.
    auto token = p.WaitForStdoutLine("token (generated): ", 1s);
    ASSERT_TRUE(token) << p.stdout_text();
    EXPECT_EQ(token->size() - token->rfind(' ') - 1, 32u) << *token;

    auto [health_status, health_body] = testing::HttpGet(port, "/healthz");
    EXPECT_EQ(health_status, 200);
    EXPECT_EQ(health_body, "ok\n");
    EXPECT_EQ(testing::HttpGet(port, "/readyz").first, 200);
    auto [metrics_status, metrics] = testing::HttpGet(port, "/metrics");
    EXPECT_EQ(metrics_status, 200);
    EXPECT_NE(metrics.find("# TYPE sched_leader gauge\n"), std::string::npos) << metrics;
    EXPECT_NE(metrics.find("# TYPE sched_fire_lag_seconds histogram\n"), std::string::npos) << metrics;
    EXPECT_EQ(testing::HttpGet(port, "/nope").first, 404);
    EXPECT_TRUE(std::filesystem::exists(dir_ / "data/s.db"));

    p.Signal(SIGTERM);
    auto code = p.WaitForExit(10s);
    ASSERT_TRUE(code) << "did not stop within 10 s of SIGTERM";
    EXPECT_EQ(*code, 0) << p.stderr_text();
    EXPECT_NE(p.stderr_text().find("stopped"), std::string::npos) << p.stderr_text();
}

TEST_F(StandaloneProcess, RestartOnTheSameDatabaseAppliesNoMigrationTwice) {
    const auto config = DefaultConfig();
    for (int run = 0; run < 2; ++run) {
        ChildProcess p({SCHED_STANDALONE_BIN, "--config", config}, dir_.string());
        ASSERT_TRUE(p.WaitForStdoutLine("listening on", 20s)) << p.stderr_text();
        p.Signal(SIGINT);
        ASSERT_EQ(p.WaitForExit(10s), 0);
        const bool applied = p.stderr_text().find("applying migration") != std::string::npos;
        EXPECT_EQ(applied, run == 0) << "run " << run << ": " << p.stderr_text();
    }
}

TEST_F(StandaloneProcess, InvalidConfigExitsWithCode2AndOneLineNamingTheKey) {
    const std::pair<std::string, std::string> cases[] = {
        {"http:\n  listen: \"nowhere\"\n", "http.listen: expected host:port"},
        {"http:\n  lisen: \"127.0.0.1:0\"\n", "http.lisen: unknown key"},
        {"database:\n  url: \"oracle://x\"\n", "database.url: expected mysql://"},
        {"database:\n  connect-retry-for: \"soon\"\n", "database.connect-retry-for: expected a duration"},
        {"log:\n  level: chatty\n", "log.level: expected one of"},
    };
    for (const auto& [yaml, want] : cases) {
        ChildProcess p({SCHED_STANDALONE_BIN, "--config", WriteConfig(yaml)}, dir_.string());
        auto code = p.WaitForExit(10s);
        ASSERT_TRUE(code) << yaml;
        EXPECT_EQ(*code, 2) << yaml;
        const std::string& err = p.stderr_text();
        EXPECT_NE(err.find(want), std::string::npos) << yaml << " -> " << err;
        EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    }
}

TEST_F(StandaloneProcess, MissingConfigFileAndBadArgumentsExitWith2) {
    ChildProcess missing({SCHED_STANDALONE_BIN, "--config", (dir_ / "absent.yaml").string()}, dir_.string());
    EXPECT_EQ(missing.WaitForExit(10s), 2);
    EXPECT_NE(missing.stderr_text().find("cannot read config file"), std::string::npos);
    ChildProcess bad({SCHED_STANDALONE_BIN, "--frobnicate"}, dir_.string());
    EXPECT_EQ(bad.WaitForExit(10s), 2);
    EXPECT_NE(bad.stderr_text().find("unknown argument \"--frobnicate\""), std::string::npos);
}

TEST_F(StandaloneProcess, VersionAndHelp) {
    ChildProcess v({SCHED_STANDALONE_BIN, "--version"});
    EXPECT_EQ(v.WaitForExit(10s), 0);
    EXPECT_EQ(v.stdout_text().rfind("scheduler-standalone ", 0), 0u) << v.stdout_text();
    ChildProcess h({SCHED_STANDALONE_BIN, "--help"});
    EXPECT_EQ(h.WaitForExit(10s), 0);
    EXPECT_NE(h.stdout_text().find("--config FILE"), std::string::npos);
}

TEST_F(StandaloneProcess, UnreachableDatabaseIsRetriedWithLogsThenExitsNonZero) {
    ChildProcess p(
        {SCHED_STANDALONE_BIN, "--config",
         WriteConfig("http:\n  listen: \"127.0.0.1:0\"\ndatabase:\n  url: "
                     "\"mysql://nobody@127.0.0.1:1/none?connect-timeout=1s\"\n  connect-retry-for: 1500ms\n")},
        dir_.string());
    auto code = p.WaitForExit(30s);
    ASSERT_TRUE(code) << "hung instead of giving up";
    EXPECT_EQ(*code, 1);
    const std::string& err = p.stderr_text();
    EXPECT_NE(err.find("unreachable (attempt 1)"), std::string::npos) << err;
    EXPECT_NE(err.find("retrying in"), std::string::npos) << err;
    EXPECT_NE(err.find("cannot start: unavailable: database"), std::string::npos) << err;
    EXPECT_NE(err.find("unreachable after"), std::string::npos) << err;
    EXPECT_EQ(p.stdout_text().find("listening"), std::string::npos);
}

TEST_F(StandaloneProcess, SigtermWhileWaitingForTheDatabaseStopsPromptly) {
    ChildProcess p({SCHED_STANDALONE_BIN, "--config",
                    WriteConfig("database:\n  url: \"mysql://nobody@127.0.0.1:1/none?connect-timeout=1s\"\n"
                                "  connect-retry-for: 1h\n")},
                   dir_.string());
    // Wait until it is in the retry loop, then ask it to stop.
    for (int i = 0; i < 200 && p.stderr_text().find("retrying in") == std::string::npos; ++i) {
        (void)p.WaitForExit(50ms);
    }
    ASSERT_NE(p.stderr_text().find("retrying in"), std::string::npos) << p.stderr_text();
    p.Signal(SIGTERM);
    auto code = p.WaitForExit(10s);
    ASSERT_TRUE(code) << "ignored SIGTERM while retrying";
    EXPECT_EQ(*code, 0);
}

}  // namespace
}  // namespace sched
