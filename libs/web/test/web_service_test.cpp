// WebService: the scheduler-web process minus main(): configuration, start, serve, stop.

#include "sched/web/web_service.hpp"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

#include "sched/common/testing/config_error.hpp"
#include "sched/lock/sql_lock_store.hpp"
#include "sched/protocol/fire_spans.hpp"
#include "sched/protocol/master_wake.hpp"
#include "sched/store/registry.hpp"
#include "web_test_base.hpp"

namespace sched::web::testing {
namespace {

WebServiceConfig Parse(const std::string& yaml) {
    return WebServiceConfig::FromYaml(ConfigNode::LoadString(yaml, "web.yaml"));
}

std::string ErrorOf(const std::string& yaml) {
    return sched::testing::ConfigErrorOf([&] { Parse(yaml); });
}

TEST(WebServiceConfig, ReadsEveryKeyAndRejectsUnknownOnesByPath) {
    const auto c = Parse(
        "token: t\nexecutor-api: false\nui: false\nexecutor-ttl: 10s\nnode-ttl: 2s\n"
        "auth-cache: 0s\nexecutor-timeout: 1s\nio-threads: 3\ndb-threads: 5\nhttp:\n  listen: \"0.0.0.0:9090\"\n"
        "database:\n  url: \"sqlite:///tmp/x.db\"\nlog:\n  level: warn\n");
    EXPECT_EQ(c.api.token, "t");
    // The removed key is refused, naming what replaced it.
    const std::string removed = ErrorOf("token: t\nexecutor-token: e\n");
    EXPECT_NE(removed.find("executor-token"), std::string::npos) << removed;
    EXPECT_NE(removed.find("signing key"), std::string::npos) << removed;
    EXPECT_FALSE(c.api.executor_api);
    EXPECT_FALSE(c.api.ui);
    EXPECT_EQ(c.api.executor_ttl, std::chrono::seconds(10));
    EXPECT_EQ(c.api.node_ttl, std::chrono::seconds(2));
    EXPECT_EQ(c.api.auth_cache, Micros{0});
    EXPECT_EQ(c.api.executor_timeout, std::chrono::seconds(1));
    EXPECT_EQ(c.io_threads, 3);
    EXPECT_EQ(c.db_threads, 5);
    EXPECT_EQ(c.http.listen, "0.0.0.0:9090");
    EXPECT_EQ(c.log.level, "warn");
    const auto defaults = Parse("token: t\n");
    EXPECT_EQ(defaults.http.listen, "127.0.0.1:8080");
    EXPECT_TRUE(defaults.api.executor_api);
    EXPECT_TRUE(defaults.api.ui);

    EXPECT_NE(ErrorOf("token: t\nhtp:\n  listen: x\n").find("htp: unknown key"), std::string::npos);
    EXPECT_NE(ErrorOf("token: t\nhttp:\n  lisen: x\n").find("http.lisen: unknown key"), std::string::npos);
    EXPECT_NE(ErrorOf("ui: true\n").find("token: required"), std::string::npos);
    EXPECT_NE(ErrorOf("token: t\nnode-ttl: soon\n").find("node-ttl"), std::string::npos);
    EXPECT_NE(ErrorOf("token: t\nio-threads: 0\n").find("io-threads"), std::string::npos);

    // The spans' section: off by default, named scheduler-web.
    EXPECT_FALSE(defaults.telemetry.enabled());
    EXPECT_EQ(defaults.telemetry.service_name, "scheduler-web");
    const auto traced = Parse(
        "token: t\ntelemetry:\n  otlp-endpoint: \"http://127.0.0.1:4318/v1/traces\"\n"
        "  batch-size: 64\n");
    EXPECT_EQ(traced.telemetry.endpoint, "http://127.0.0.1:4318/v1/traces");
    EXPECT_EQ(traced.telemetry.batch_size, 64u);
    EXPECT_NE(ErrorOf("token: t\ntelemetry:\n  batch-size: 0\n").find("telemetry.batch-size"), std::string::npos);

    // The lock API's section.
    const auto locks = Parse("token: t\nlocks:\n  max-lease: 10m\n  max-wait: 5s\n  max-waiters: 7\n");
    EXPECT_EQ(locks.api.locks.max_lease, std::chrono::minutes(10));
    EXPECT_EQ(locks.api.locks.max_wait, std::chrono::seconds(5));
    EXPECT_EQ(locks.api.locks.max_waiters, 7);
    EXPECT_EQ(defaults.api.locks.max_wait, std::chrono::seconds(30));
    EXPECT_NE(ErrorOf("token: t\nlocks:\n  max-wait: 11m\n").find("locks.max-wait"), std::string::npos);
    EXPECT_NE(ErrorOf("token: t\nlocks:\n  max-lease: 0s\n").find("locks.max-lease"), std::string::npos);
    EXPECT_NE(ErrorOf("token: t\nlocks:\n  waiters: 1\n").find("locks.waiters: unknown key"), std::string::npos);
}

class WebServiceTest : public db::testing::DbTest {
  protected:
    // A web service on the test database, on a free loopback port, with the cluster token.
    WebServiceConfig Config() {
        WebServiceConfig config;
        config.api.token = kClusterToken;
        config.http = http::testing::LoopbackOptions();
        config.database.url = test_db().url();
        return config;
    }
};

TEST_P(WebServiceTest, ServesHealthReadinessMetricsAndTheApiThenStops) {
    WebService service(Config());
    Status started = service.Start();
    ASSERT_TRUE(started.ok()) << started.ToString();
    const std::string base = "http://127.0.0.1:" + std::to_string(service.port());
    http::testing::BlockingClient client;
    EXPECT_EQ(client.Get(base + "/healthz")->body, "ok\n");
    EXPECT_EQ(client.Get(base + "/readyz")->status, 200);
    EXPECT_EQ(client.Get(base + "/api/v1/jobs")->status, 401);
    http::CallOptions call;
    call.bearer_token = kClusterToken;
    auto jobs = client.Get(base + "/api/v1/jobs", call);
    ASSERT_TRUE(jobs.ok());
    EXPECT_EQ(jobs->status, 200) << jobs->body;
    EXPECT_EQ(client.Get(base + "/")->status, 200);
    auto metrics = client.Get(base + "/metrics");
    EXPECT_NE(metrics->body.find("sched_http_requests_total"), std::string::npos) << metrics->body;
    service.Stop();
    EXPECT_FALSE(client.Get(base + "/healthz").ok());
}

// A job written through the process's API wakes the master's leader (a trigger node's wake
// route, here a stand-in that counts), over HTTP with the cluster token.
TEST_P(WebServiceTest, AJobWrittenWakesTheLeadingTriggerNode) {
    std::atomic<int> wakes{0};
    http::Router router;
    router.Add(
        http::Method::kPost, protocol::kMasterWakePath,
        [&wakes](http::Request& req) {
            if (req.headers.Get("Authorization") != "Bearer " + std::string(kClusterToken)) {
                return http::Response::Text("no\n", 401);
            }
            ++wakes;
            return http::Response::Json({{"woken", 1}}, 202);
        },
        http::Access::kPublic);
    http::testing::TestServer node(std::move(router));

    WebService service(Config());
    ASSERT_TRUE(service.Start().ok());
    ASSERT_TRUE(store::TriggerNodeRepository(db())
                    .Heartbeat({.node_id = "node-1", .address = "127.0.0.1:" + std::to_string(node.port())})
                    .ok());
    auto held = lock::SqlLockStore(db().shared_from_this()).Insert("master", "node-1", std::chrono::hours(1));
    ASSERT_TRUE(held.ok() && *held);

    http::testing::BlockingClient client;
    http::CallOptions call;
    call.bearer_token = kClusterToken;
    const nlohmann::json job = {{"name", "woken"},
                                {"app", "demo"},
                                {"handler", "echo"},
                                {"schedule_type", "cron"},
                                {"schedule_expr", "0 * * * * ?"}};
    auto created = client.PostJson("http://127.0.0.1:" + std::to_string(service.port()) + "/api/v1/jobs", job, call);
    ASSERT_TRUE(created.ok());
    ASSERT_EQ(created->status, 201) << created->body;
    EXPECT_TRUE(http::testing::WaitFor([&] { return wakes.load() == 1; })) << wakes.load();
    service.Stop();
}

// With telemetry on, the process exports spans and counts them on /metrics (the collector here
// is absent: nothing is exported, and stopping does not hang on it).
TEST_P(WebServiceTest, TelemetryOnCountsItsSpansOnMetrics) {
    WebServiceConfig config;
    config.api.token = kClusterToken;
    config.http = http::testing::LoopbackOptions();
    config.database.url = test_db().url();
    config.telemetry.endpoint = "http://127.0.0.1:1/v1/traces";
    config.telemetry.timeout = std::chrono::milliseconds(200);
    WebService service(config);
    ASSERT_TRUE(service.Start().ok());
    EXPECT_TRUE(protocol::FireTracer::On());
    http::testing::BlockingClient client;
    auto metrics = client.Get("http://127.0.0.1:" + std::to_string(service.port()) + "/metrics");
    ASSERT_TRUE(metrics.ok());
    EXPECT_NE(metrics->body.find("sched_trace_spans_exported_total 0"), std::string::npos) << metrics->body;
    EXPECT_NE(metrics->body.find("sched_trace_spans_dropped_total{reason=\"queue_full\"} 0"), std::string::npos);
    service.Stop();
    EXPECT_FALSE(protocol::FireTracer::On()) << "uninstalled at stop";
}

TEST_P(WebServiceTest, ABusyPortIsAnErrorValue) {
    const WebServiceConfig first_config = Config();
    WebService first(first_config);
    ASSERT_TRUE(first.Start().ok());
    WebServiceConfig second_config = first_config;
    second_config.http.listen = "127.0.0.1:" + std::to_string(first.port());
    WebService second(second_config);
    Status s = second.Start();
    EXPECT_EQ(s.code(), Code::kUnavailable) << s.ToString();
    EXPECT_NE(s.message().find("in use"), std::string::npos) << s.ToString();

    // The port is taken before the migrations run: a busy port leaves a new database untouched.
    const auto fresh =
        std::filesystem::temp_directory_path() / ("sched-busy-port-" + std::to_string(::getpid()) + ".db");
    std::filesystem::remove(fresh);
    WebServiceConfig third_config = second_config;
    third_config.database.url = *db::ParseDbUrl("sqlite://" + fresh.string());
    WebService third(third_config);
    EXPECT_EQ(third.Start().code(), Code::kUnavailable);
    EXPECT_FALSE(std::filesystem::exists(fresh)) << fresh;
}

SCHED_DB_TEST_SUITE(WebServiceTest);

}  // namespace
}  // namespace sched::web::testing
