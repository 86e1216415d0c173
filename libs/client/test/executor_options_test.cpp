#include <cstdlib>

#include <gtest/gtest.h>

#include "sched/client/executor.hpp"
#include "sched/common/logging.hpp"
#include "sched/common/testing/config_error.hpp"

namespace sched::client {
namespace {

using namespace std::chrono_literals;

std::string ErrorOf(const std::string& yaml) {
    return sched::testing::ConfigErrorOf([&] {
        auto root = ConfigNode::LoadString(yaml);
        (void)ExecutorOptions::FromYaml(root.Child("executor"));
        root.RejectUnknownKeys();
    });
}

class ExecutorOptionsTest : public ::testing::Test {
  protected:
    void SetUp() override {
        unsetenv("SCHED_TOKEN");
        unsetenv("SCHED_METRICS_TOKEN");
    }
    void TearDown() override {
        unsetenv("SCHED_TOKEN");
        unsetenv("SCHED_METRICS_TOKEN");
    }
};

TEST_F(ExecutorOptionsTest, ReadsEveryKey) {
    auto root = ConfigNode::LoadString(R"(
executor:
  app: billing
  advertised-address: "10.0.0.5:9999"
  web-endpoints: ["http://web-1:8080", "http://web-2:8080"]
  token: abc
  heartbeat-interval: 5s
  worker-threads: 4
  io-threads: 3
  capacity: 10
  spool-dir: /tmp/x
  callback-batch-size: 20
  callback-flush-interval: 10ms
  callback-max-backoff: 2s
  web-timeout: 1s
  shutdown-grace: 3s
  log-retained-fires: 50
  log-max-lines: 60
  log-tail-bytes: 1000
  dedupe-window: 70
  metrics: true
  metrics-token: "0123456789abcdef"
  http:
    listen: "127.0.0.1:0"
    body-limit: 4096
)");
    const auto o = ExecutorOptions::FromYaml(root.Child("executor"));
    EXPECT_NO_THROW(root.RejectUnknownKeys());
    EXPECT_EQ(o.app, "billing");
    EXPECT_EQ(o.advertised_address, "10.0.0.5:9999");
    EXPECT_EQ(o.web_endpoints.size(), 2u);
    EXPECT_EQ(o.token, "abc");
    EXPECT_EQ(o.heartbeat_interval, 5s);
    EXPECT_EQ(o.worker_threads, 4);
    EXPECT_EQ(o.io_threads, 3);
    EXPECT_EQ(o.capacity, 10);
    EXPECT_EQ(o.spool_dir, "/tmp/x");
    EXPECT_EQ(o.callback_batch_size, 20);
    EXPECT_EQ(o.callback_flush_interval, 10ms);
    EXPECT_EQ(o.callback_max_backoff, 2s);
    EXPECT_EQ(o.web_timeout, 1s);
    EXPECT_EQ(o.shutdown_grace, 3s);
    EXPECT_EQ(o.log_retained_fires, 50);
    EXPECT_EQ(o.log_max_lines, 60);
    EXPECT_EQ(o.log_tail_bytes, 1000);
    EXPECT_EQ(o.dedupe_window, 70);
    EXPECT_TRUE(o.metrics);
    EXPECT_EQ(o.metrics_token, "0123456789abcdef");
    EXPECT_EQ(o.http.listen, "127.0.0.1:0");
    EXPECT_EQ(o.http.body_limit, 4096u);
    EXPECT_EQ(o.http.access_log, http::AccessLog::kErrors);  // the executor's default
}

TEST_F(ExecutorOptionsTest, EnvironmentTokenOverridesTheFile) {
    setenv("SCHED_TOKEN", "from-env", 1);
    auto root = ConfigNode::LoadString("executor:\n  app: a\n  web-endpoints: [\"http://w:1\"]\n  token: from-file\n");
    EXPECT_EQ(ExecutorOptions::FromYaml(root.Child("executor")).token, "from-env");
}

TEST_F(ExecutorOptionsTest, EnvironmentMetricsTokenOverridesTheFile) {
    setenv("SCHED_METRICS_TOKEN", "metrics-token-from-env", 1);
    auto root = ConfigNode::LoadString(
        "executor:\n  app: a\n  web-endpoints: [\"http://w:1\"]\n  token: t\n  metrics: true\n  metrics-token: "
        "metrics-token-from-file\n");
    EXPECT_EQ(ExecutorOptions::FromYaml(root.Child("executor")).metrics_token, "metrics-token-from-env");
}

TEST_F(ExecutorOptionsTest, ErrorsNameTheKey) {
    const std::string base = "executor:\n  app: a\n  web-endpoints: [\"http://w:1\"]\n  token: t\n";
    EXPECT_EQ(ErrorOf("executor:\n  web-endpoints: [\"http://w:1\"]\n  token: t\n").rfind("executor.app: required", 0),
              0u);
    EXPECT_EQ(ErrorOf("executor:\n  app: a\n  token: t\n").rfind("executor.web-endpoints: required", 0), 0u);
    EXPECT_EQ(ErrorOf("executor:\n  app: a\n  web-endpoints: [\"http://w:1\"]\n").rfind("executor.token: required", 0),
              0u);
    EXPECT_EQ(ErrorOf("executor:\n  app: a\n  web-endpoints: [\"http://w:1\", \"ftp://w:2\"]\n  token: t\n")
                  .rfind("executor.web-endpoints[1]: expected an http or https URL", 0),
              0u);
    EXPECT_EQ(ErrorOf(base + "  http-client:\n    tls:\n      cert-file: c.pem\n")
                  .rfind("executor.http-client.tls.key-file: required", 0),
              0u);
    EXPECT_EQ(ErrorOf(base + "  capacity: 0\n").rfind("executor.capacity:", 0), 0u);
    EXPECT_EQ(ErrorOf(base + "  io-threads: 0\n").rfind("executor.io-threads:", 0), 0u);
    EXPECT_EQ(ErrorOf(base + "  io-threads: 65\n").rfind("executor.io-threads:", 0), 0u);
    EXPECT_EQ(ErrorOf(base + "  heartbeat-interval: often\n").rfind("executor.heartbeat-interval:", 0), 0u);
    EXPECT_EQ(ErrorOf(base + "  advertised-address: nowhere\n").rfind("executor.advertised-address:", 0), 0u);
    EXPECT_EQ(ErrorOf(base + "  http:\n    listen: x\n").rfind("executor.http.listen:", 0), 0u);
    EXPECT_EQ(ErrorOf(base + "  capacty: 5\n"), "executor.capacty: unknown key");
    EXPECT_EQ(ErrorOf(base + "  log-tail-bytes: 131073\n").rfind("executor.log-tail-bytes:", 0), 0u);
    EXPECT_EQ(ErrorOf(base + "  metrics: yes-please\n").rfind("executor.metrics:", 0), 0u);
    EXPECT_EQ(ErrorOf(base + "  metrics: true\n  metrics-token: short\n").rfind("executor.metrics-token: too short", 0),
              0u);
    EXPECT_EQ(ErrorOf(base + "  log-tail-bytes: -1\n").rfind("executor.log-tail-bytes:", 0), 0u);
    EXPECT_EQ(ErrorOf("executor:\n  app: \"bad name\"\n  web-endpoints: [\"http://w:1\"]\n  token: t\n")
                  .rfind("executor.app: expected letters", 0),
              0u);
}

TEST_F(ExecutorOptionsTest, TheShippedDemoConfigIsValid) {
    setenv("SCHED_TOKEN", "demo-token", 1);
    auto root = ConfigNode::LoadFile(SCHED_DEMO_CLIENT_CONFIG);
    (void)LogConfig::FromYaml(root.Child("log"));
    const auto o = ExecutorOptions::FromYaml(root.Child("executor"));
    // The demo app's own section (apps/demo-client's DemoOptions, tested in demo_client_test).
    (void)root.Child("demo").String("ledger-dir", "");
    EXPECT_NO_THROW(root.RejectUnknownKeys());
    EXPECT_EQ(o.app, "demo");
}

TEST_F(ExecutorOptionsTest, CodeConfiguredOptionsAreValidatedToo) {
    ExecutorOptions o;
    o.app = "a";
    o.web_endpoints = {"http://w:1"};
    EXPECT_THROW(Executor{o}, ConfigError);  // no token
    o.token = "t";
    EXPECT_NO_THROW(Executor{o});
}

}  // namespace
}  // namespace sched::client
