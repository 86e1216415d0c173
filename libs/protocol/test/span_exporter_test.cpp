#include "sched/protocol/span_exporter.hpp"

#include "sched/protocol/fire_spans.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>

#include "sched/common/testing/io_thread.hpp"
#include "sched/http/testing/test_server.hpp"

namespace sched::protocol {
namespace {

using namespace std::chrono_literals;
using http::testing::WaitFor;
using sched::testing::IoThread;

Span TestSpan(int i) {
    Span s;
    s.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    s.span_id = "00f067aa0ba902b" + std::to_string(i % 10);
    s.parent_span_id = "00f067aa0ba902b7";
    s.name = "span-" + std::to_string(i);
    s.kind = SpanKind::kClient;
    s.start_ns = 1764000000000000000 + i;
    s.end_ns = 1764000000000000100 + i;
    s.attributes = {{"sched.fire_id", std::int64_t{42}}, {"sched.app", std::string("billing")}};
    return s;
}

// The spans of one posted body (one resource, one scope).
const nlohmann::json& SpansOf(const nlohmann::json& body) {
    return body["resourceSpans"][0]["scopeSpans"][0]["spans"];
}

// A collector on loopback that answers every post with `status` and keeps the bodies.
class Collector {
  public:
    explicit Collector(int status) : status_(status), server_(MakeRouter()) {}

    std::string Url() const { return server_.Url("/v1/traces"); }
    int posts() const { return posts_.load(); }
    std::vector<nlohmann::json> Bodies() {
        std::lock_guard lock(mu_);
        return bodies_;
    }
    std::size_t SpansReceived() {
        std::size_t n = 0;
        for (const auto& b : Bodies()) n += SpansOf(b).size();
        return n;
    }

  private:
    http::Router MakeRouter() {
        http::Router router;
        router.Add(
            http::Method::kPost, "/v1/traces",
            [this](http::Request& req) {
                ++posts_;
                {
                    std::lock_guard lock(mu_);
                    bodies_.push_back(nlohmann::json::parse(req.body));
                }
                return status_ == 200 ? http::Response::Json(nlohmann::json::object())
                                      : http::Response::Text("unavailable", status_);
            },
            http::Access::kPublic);
        return router;
    }

    int status_;
    std::atomic<int> posts_{0};
    std::mutex mu_;
    std::vector<nlohmann::json> bodies_;
    http::testing::TestServer server_;
};

// An exporter under test with `options`, posting to a collector that answers `status`, as the
// service "scheduler-test"; its io_context run by a thread of its own.
struct ExporterRig {
    ExporterRig(int status, SpanExporterOptions options)
        : collector(status), exporter(loop.io.get_executor(), To(collector, options)) {}
    Collector collector;
    IoThread loop;
    SpanExporter exporter;

  private:
    static SpanExporterOptions To(const Collector& collector, SpanExporterOptions options) {
        options.endpoint = collector.Url();
        options.service_name = "scheduler-test";
        return options;
    }
};

TEST(ExportTraceServiceRequest, WritesTheOtlpJsonShape) {
    Span root = TestSpan(1);
    root.parent_span_id.clear();
    root.error = true;
    root.status_message = "timeout";
    Span with_state = TestSpan(2);
    with_state.trace_state = "vendor=opaque";
    const auto j = ExportTraceServiceRequest("scheduler", {root, with_state});
    const auto& rs = j.at("resourceSpans").at(0);
    EXPECT_EQ(rs["resource"]["attributes"][0]["key"], "service.name");
    EXPECT_EQ(rs["resource"]["attributes"][0]["value"]["stringValue"], "scheduler");
    const auto& spans = rs.at("scopeSpans").at(0).at("spans");
    ASSERT_EQ(spans.size(), 2u);
    EXPECT_EQ(rs["scopeSpans"][0]["scope"]["name"], "sched");
    EXPECT_EQ(spans[0]["traceId"], "4bf92f3577b34da6a3ce929d0e0e4736");
    EXPECT_EQ(spans[0]["spanId"], "00f067aa0ba902b1");
    EXPECT_FALSE(spans[0].contains("parentSpanId"));  // a root span
    EXPECT_FALSE(spans[0].contains("traceState"));
    EXPECT_EQ(spans[1]["traceState"], "vendor=opaque");
    EXPECT_EQ(spans[0]["status"]["code"], 2);
    EXPECT_EQ(spans[0]["status"]["message"], "timeout");
    EXPECT_EQ(spans[1]["parentSpanId"], "00f067aa0ba902b7");
    EXPECT_FALSE(spans[1].contains("status"));
    EXPECT_EQ(spans[1]["name"], "span-2");
    EXPECT_EQ(spans[1]["kind"], 3);
    EXPECT_EQ(spans[1]["startTimeUnixNano"], "1764000000000000002");  // strings, not numbers
    EXPECT_EQ(spans[1]["endTimeUnixNano"], "1764000000000000102");
    EXPECT_EQ(spans[1]["attributes"][0]["key"], "sched.fire_id");
    EXPECT_EQ(spans[1]["attributes"][0]["value"]["intValue"], "42");
    EXPECT_EQ(spans[1]["attributes"][1]["value"]["stringValue"], "billing");
}

TEST(SpanExporter, PostsQueuedSpansInBatches) {
    ExporterRig rig(200, {.batch_size = 2, .flush_interval = 50ms, .queue_limit = 100});
    rig.exporter.Start();
    for (int i = 0; i < 5; ++i) EXPECT_TRUE(rig.exporter.Push(TestSpan(i)));
    ASSERT_TRUE(WaitFor([&] { return rig.collector.SpansReceived() == 5; }, 5s));
    rig.exporter.Stop();
    const auto bodies = rig.collector.Bodies();
    for (const auto& b : bodies) {
        EXPECT_LE(SpansOf(b).size(), 2u);
        EXPECT_EQ(b["resourceSpans"][0]["resource"]["attributes"][0]["value"]["stringValue"], "scheduler-test");
    }
    EXPECT_GE(bodies.size(), 3u);
    EXPECT_EQ(rig.exporter.Stats().exported, 5u);
    EXPECT_EQ(rig.exporter.Stats().dropped_queue_full, 0u);
}

TEST(SpanExporter, AFullQueueDropsAndCounts) {
    // Not started: nothing leaves the queue.
    ExporterRig rig(200, {.batch_size = 2, .queue_limit = 4});
    for (int i = 0; i < 4; ++i) EXPECT_TRUE(rig.exporter.Push(TestSpan(i)));
    EXPECT_FALSE(rig.exporter.Push(TestSpan(4)));
    EXPECT_FALSE(rig.exporter.Push(TestSpan(5)));
    EXPECT_EQ(rig.exporter.Stats().dropped_queue_full, 2u);
    // Started, it posts what it kept.
    rig.exporter.Start();
    ASSERT_TRUE(WaitFor([&] { return rig.collector.SpansReceived() == 4; }, 5s));
    rig.exporter.Stop();
    EXPECT_EQ(rig.exporter.Stats().exported, 4u);
}

TEST(SpanExporter, RetriesAFailedPostThenDropsTheBatch) {
    ExporterRig rig(503,
                    {.batch_size = 3, .flush_interval = 20ms, .queue_limit = 10, .retries = 2, .retry_backoff = 10ms});
    rig.exporter.Start();
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(rig.exporter.Push(TestSpan(i)));
    ASSERT_TRUE(WaitFor([&] { return rig.exporter.Stats().dropped_export_failed == 3; }, 5s));
    EXPECT_EQ(rig.collector.posts(), 3);  // the first attempt and two retries
    EXPECT_EQ(rig.exporter.Stats().failed_posts, 3u);
    EXPECT_EQ(rig.exporter.Stats().exported, 0u);
    rig.exporter.Stop();
}

TEST(SpanExporter, ARefusalIsNotRetried) {
    ExporterRig rig(400, {.batch_size = 1, .queue_limit = 10, .retries = 3, .retry_backoff = 10ms});
    rig.exporter.Start();
    EXPECT_TRUE(rig.exporter.Push(TestSpan(0)));
    ASSERT_TRUE(WaitFor([&] { return rig.exporter.Stats().dropped_export_failed == 1; }, 5s));
    EXPECT_EQ(rig.collector.posts(), 1);
    rig.exporter.Stop();
}

TEST(SpanExporter, StopPostsWhatIsQueued) {
    ExporterRig rig(200, {.batch_size = 100, .flush_interval = std::chrono::minutes(1), .queue_limit = 1000});
    rig.exporter.Start();
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(rig.exporter.Push(TestSpan(i)));
    rig.exporter.Stop();
    EXPECT_EQ(rig.collector.SpansReceived(), 3u);
    EXPECT_FALSE(rig.exporter.Push(TestSpan(9)));  // stopped
}

TEST(SpanExporterOptions, ReadsTheSectionAndNamesABadKey) {
    auto root = ConfigNode::LoadString(
        "telemetry:\n  otlp-endpoint: http://127.0.0.1:4318/v1/traces\n  batch-size: 10\n  flush-interval: 250ms\n");
    const auto o = SpanExporterOptions::FromYaml(root.Child("telemetry"), "scheduler-trigger");
    EXPECT_TRUE(o.enabled());
    EXPECT_EQ(o.service_name, "scheduler-trigger");
    EXPECT_EQ(o.batch_size, 10u);
    EXPECT_EQ(o.flush_interval, 250ms);
    EXPECT_FALSE(SpanExporterOptions::FromYaml(ConfigNode::LoadString("{}").Child("telemetry"), "x").enabled());
    // The key the ConfigError for `yaml` names; the test fails when there is none.
    const auto bad_key = [](const std::string& yaml) -> std::string {
        try {
            (void)SpanExporterOptions::FromYaml(ConfigNode::LoadString(yaml).Child("telemetry"), "x");
        } catch (const ConfigError& e) {
            return e.path();
        }
        ADD_FAILURE() << "expected a ConfigError for " << yaml;
        return "";
    };
    EXPECT_EQ(bad_key("telemetry:\n  otlp-endpoint: ftp://x\n"), "telemetry.otlp-endpoint");
    EXPECT_EQ(bad_key("telemetry:\n  batch-size: 20\n  queue-limit: 10\n"), "telemetry.batch-size");
}

TEST(RunTrace, IsTheFiresTraceOrUnderTheCallersTrace) {
    const FireRef fire{.fire_id = 42, .job_id = 7, .scheduled_ms = 1764000000000, .attempt = 1, .app = "billing"};
    EXPECT_EQ(RunTrace(fire), FireTrace(42, 7, 1764000000000, 1));
    FireRef manual = fire;
    manual.caller = ParseTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    const TraceContext run = RunTrace(manual);
    EXPECT_EQ(run.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
    EXPECT_NE(run.span_id, "00f067aa0ba902b7");  // the attempt's own span, child of the caller's
    EXPECT_EQ(run, RunTrace(manual));            // derived: every node agrees
    manual.attempt = 2;
    EXPECT_NE(RunTrace(manual).span_id, run.span_id);
    EXPECT_NE(FireStepSpanId(run, FireStep::kPlanned), FireStepSpanId(run, FireStep::kClaimed));
}

TEST(FireTracer, PushesStepsAndTheRootUnderTheRunsSpan) {
    Collector collector(200);
    IoThread loop;
    auto exporter =
        std::make_shared<SpanExporter>(loop.io.get_executor(), SpanExporterOptions{.endpoint = collector.Url(),
                                                                                   .service_name = "node-test",
                                                                                   .batch_size = 100,
                                                                                   .flush_interval = 20ms,
                                                                                   .queue_limit = 100});
    exporter->Start();
    const FireRef fire{.fire_id = 42, .job_id = 7, .scheduled_ms = 1764000000000, .attempt = 0, .app = "billing"};
    FireTracer::Step(fire, FireStep::kPlanned, 1, 1);  // not installed: nothing
    FireTracer::Install(exporter, "n1");
    EXPECT_TRUE(FireTracer::On());
    FireTracer::Step(fire, FireStep::kClaimed, 1764000000000000000, 1764000000001000000);
    FireTracer::Ended(fire, 1763999999000000000, 1764000000500000000, "failed");
    FireTracer::Uninstall();
    FireTracer::Step(fire, FireStep::kSent, 1, 1);  // uninstalled: nothing
    ASSERT_TRUE(WaitFor([&] { return collector.SpansReceived() == 3; }, 5s));
    exporter->Stop();
    std::map<std::string, nlohmann::json> by_name;
    for (const auto& b : collector.Bodies()) {
        for (const auto& s : SpansOf(b)) by_name[s["name"]] = s;
    }
    const TraceContext run = FireTrace(42, 7, 1764000000000, 0);
    ASSERT_EQ(by_name.size(), 3u);
    EXPECT_EQ(by_name["fire"]["spanId"], run.span_id);
    EXPECT_FALSE(by_name["fire"].contains("parentSpanId"));
    EXPECT_EQ(by_name["fire"]["status"]["code"], 2);
    EXPECT_EQ(by_name["fire"]["startTimeUnixNano"], "1763999999000000000");
    for (const char* step : {"claimed", "ended"}) {
        EXPECT_EQ(by_name[step]["traceId"], run.trace_id) << step;
        EXPECT_EQ(by_name[step]["parentSpanId"], run.span_id) << step;
    }
    EXPECT_EQ(by_name["claimed"]["spanId"], FireStepSpanId(run, FireStep::kClaimed));
    std::map<std::string, nlohmann::json> attributes;
    for (const auto& a : by_name["claimed"]["attributes"]) attributes[a["key"]] = a["value"];
    EXPECT_EQ(attributes["sched.fire_id"]["intValue"], "42");
    EXPECT_EQ(attributes["sched.job_id"]["intValue"], "7");
    EXPECT_EQ(attributes["sched.attempt"]["intValue"], "0");
    EXPECT_EQ(attributes["sched.app"]["stringValue"], "billing");
    EXPECT_EQ(attributes["sched.node"]["stringValue"], "n1");
}

}  // namespace
}  // namespace sched::protocol
