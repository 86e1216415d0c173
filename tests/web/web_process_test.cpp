// The scheduler-web binary as an operator runs it: a real process on SQLite in a temp dir, real
// HTTP over loopback, stopped by SIGTERM (and by PID in any case).

#include <signal.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "../support/scratch_dir.hpp"
#include "sched/common/node_id.hpp"
#include "sched/common/testing/child_process.hpp"

namespace sched {
namespace {

using namespace std::chrono_literals;
using testing::ChildProcess;
using testing::HttpRequest;

class WebProcess : public ::testing::Test {
  protected:
    std::string WriteConfig(const std::string& yaml) { return scratch_.Write("web.yaml", yaml); }
    // No token in the file: it comes from SCHED_TOKEN, as in a deployment.
    std::string DefaultConfig() {
        return WriteConfig("http:\n  listen: \"127.0.0.1:0\"\n  shutdown-grace: 2s\ndatabase:\n  url: \"sqlite://" +
                           (dir_ / "data/web.db").string() + "\"\nlog:\n  level: info\n");
    }
    static unsigned short PortOf(const std::string& line) {
        return static_cast<unsigned short>(std::stoi(line.substr(line.rfind(':') + 1)));
    }

    testing::ScratchDir scratch_{"sched-web-"};
    const std::filesystem::path& dir_ = scratch_.path();
    std::string token_ = "web-test-" + RandomHex(16);
};

TEST_F(WebProcess, ServesHealthUiOpenApiAndTheAuthorisedApiThenStopsOnSigterm) {
    std::filesystem::create_directories(dir_ / "data");
    ChildProcess p({SCHED_WEB_BIN, "--config", DefaultConfig()}, dir_.string(), {"SCHED_TOKEN=" + token_});
    auto line = p.WaitForStdoutLine("scheduler-web listening on http://127.0.0.1:", 20s);
    ASSERT_TRUE(line) << p.stderr_text();
    const auto port = PortOf(*line);
    ASSERT_NE(port, 0);

    auto health = HttpRequest(port, "GET", "/healthz");
    EXPECT_EQ(health.status, 200);
    EXPECT_EQ(health.body, "ok\n");
    auto ready = HttpRequest(port, "GET", "/readyz");
    EXPECT_EQ(ready.status, 200) << ready.body;
    EXPECT_EQ(ready.body, "ready\n");

    auto index = HttpRequest(port, "GET", "/");
    EXPECT_EQ(index.status, 200);
    EXPECT_EQ(index.content_type.rfind("text/html", 0), 0u) << index.content_type;
    EXPECT_NE(index.body.find("<html"), std::string::npos) << index.body.substr(0, 200);

    auto openapi = HttpRequest(port, "GET", "/api/v1/openapi.json");
    EXPECT_EQ(openapi.status, 200);
    EXPECT_NE(openapi.body.find("\"openapi\""), std::string::npos) << openapi.body.substr(0, 200);
    EXPECT_NE(openapi.body.find("/api/v1/jobs"), std::string::npos);

    // The API with the token from the environment, and without any or with a wrong one.
    auto jobs = HttpRequest(port, "GET", "/api/v1/jobs", "", token_);
    EXPECT_EQ(jobs.status, 200) << jobs.body;
    EXPECT_EQ(jobs.content_type.rfind("application/json", 0), 0u) << jobs.content_type;
    auto anonymous = HttpRequest(port, "GET", "/api/v1/jobs");
    EXPECT_EQ(anonymous.status, 401) << anonymous.body;
    EXPECT_NE(anonymous.body.find("\"error\""), std::string::npos) << anonymous.body;
    EXPECT_EQ(HttpRequest(port, "GET", "/api/v1/jobs", "", token_ + "x").status, 401);

    // A write goes to the database, and a read on a new connection sees it.
    const std::string job = R"({"name":"web-process-test","app":"demo","handler":"echo",)"
                            R"("schedule_type":"cron","schedule_expr":"0 0 * * * ?"})";
    auto created = HttpRequest(port, "POST", "/api/v1/jobs", job, token_);
    EXPECT_EQ(created.status, 201) << created.body;
    auto listed = HttpRequest(port, "GET", "/api/v1/jobs", "", token_);
    EXPECT_NE(listed.body.find("web-process-test"), std::string::npos) << listed.body;
    EXPECT_TRUE(std::filesystem::exists(dir_ / "data/web.db"));

    const auto asked = std::chrono::steady_clock::now();
    p.Signal(SIGTERM);
    auto code = p.WaitForExit(10s);
    ASSERT_TRUE(code) << "did not stop within 10 s of SIGTERM";
    EXPECT_EQ(*code, 0) << p.stderr_text();
    EXPECT_LT(std::chrono::steady_clock::now() - asked, 10s);
    EXPECT_NE(p.stderr_text().find("scheduler-web stopped"), std::string::npos) << p.stderr_text();
    // Stopped means the port is closed.
    EXPECT_THROW(HttpRequest(port, "GET", "/healthz"), std::exception);
}

TEST_F(WebProcess, RefusesToStartWithoutAToken) {
    ChildProcess p({SCHED_WEB_BIN, "--config", DefaultConfig()}, dir_.string(), {"SCHED_TOKEN="});
    auto code = p.WaitForExit(10s);
    ASSERT_TRUE(code);
    EXPECT_EQ(*code, 2);
    EXPECT_NE(p.stderr_text().find("scheduler-web: token: required"), std::string::npos) << p.stderr_text();
}

TEST_F(WebProcess, CheckConfigValidatesWithoutTouchingTheDatabase) {
    // A database that does not exist (SQLite in a missing dir, MariaDB on a closed port) is fine:
    // --check-config reads the file and the environment only.
    const auto sqlite_config = WriteConfig("database:\n  url: \"sqlite://" + (dir_ / "absent/x.db").string() + "\"\n");
    ChildProcess ok({SCHED_WEB_BIN, "--check-config", "--config", sqlite_config}, dir_.string(),
                    {"SCHED_TOKEN=" + token_});
    EXPECT_EQ(ok.WaitForExit(10s), 0) << ok.stderr_text();
    EXPECT_EQ(ok.stdout_text(), "config ok\n");
    EXPECT_FALSE(std::filesystem::exists(dir_ / "absent"));

    const auto mysql_config =
        WriteConfig("database:\n  url: \"mysql://nobody@127.0.0.1:1/none\"\n  connect-retry-for: 1h\n");
    ChildProcess quick({SCHED_WEB_BIN, "--config", mysql_config, "--check-config"}, dir_.string(),
                       {"SCHED_TOKEN=" + token_});
    EXPECT_EQ(quick.WaitForExit(5s), 0) << "tried the database? " << quick.stderr_text();

    // Errors name the key and exit 2; nothing on stdout.
    const std::pair<std::string, std::string> cases[] = {
        {"database:\n  url: \"mysql://nobody@/none\"\n", "scheduler-web: database.url: "},
        {"http:\n  listen: \"nowhere\"\n", "scheduler-web: http.listen: expected host:port"},
        {"auth-cache: forever\n", "scheduler-web: auth-cache: expected a duration"},
        {"colour: blue\n", "scheduler-web: colour: unknown key"},
    };
    for (const auto& [yaml, want] : cases) {
        ChildProcess bad({SCHED_WEB_BIN, "--check-config", "--config", WriteConfig(yaml)}, dir_.string(),
                         {"SCHED_TOKEN=" + token_});
        EXPECT_EQ(bad.WaitForExit(10s), 2) << yaml;
        EXPECT_EQ(bad.stderr_text().rfind(want, 0), 0u) << yaml << " -> " << bad.stderr_text();
        EXPECT_EQ(bad.stdout_text(), "") << yaml;
    }
}

TEST_F(WebProcess, ArgumentsHelpAndVersion) {
    ChildProcess v({SCHED_WEB_BIN, "--version"});
    EXPECT_EQ(v.WaitForExit(10s), 0);
    EXPECT_EQ(v.stdout_text().rfind("scheduler-web ", 0), 0u) << v.stdout_text();
    ChildProcess h({SCHED_WEB_BIN, "--help"});
    EXPECT_EQ(h.WaitForExit(10s), 0);
    EXPECT_NE(h.stdout_text().find("--check-config"), std::string::npos) << h.stdout_text();
    ChildProcess bad({SCHED_WEB_BIN, "--demo"});
    EXPECT_EQ(bad.WaitForExit(10s), 2);
    EXPECT_EQ(bad.stderr_text(), "scheduler-web: unknown argument \"--demo\" (see --help)\n");
    ChildProcess missing({SCHED_WEB_BIN, "--config"});
    EXPECT_EQ(missing.WaitForExit(10s), 2);
    EXPECT_EQ(missing.stderr_text(), "scheduler-web: --config needs a FILE (see --help)\n");
}

}  // namespace
}  // namespace sched
