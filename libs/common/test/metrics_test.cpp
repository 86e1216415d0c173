#include "sched/common/metrics.hpp"

#include <ctime>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

namespace sched {
namespace {

TEST(Metrics, CountersAndGaugesRenderWithLabels) {
    MetricsRegistry r;
    auto& fires = r.Counter("sched_fires_total", "Fires by final status.", {"status"});
    fires.Labels({"succeeded"}).Inc();
    fires.Labels({"succeeded"}).Inc(2);
    fires.Labels({"fa\"il\\ed\n"}).Inc();
    r.Gauge("sched_leader", "1 while leading.").Labels({}).Set(1);
    const std::string text = r.Render();
    EXPECT_NE(text.find("# HELP sched_fires_total Fires by final status.\n# TYPE sched_fires_total counter\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("sched_fires_total{status=\"succeeded\"} 3\n"), std::string::npos) << text;
    EXPECT_NE(text.find("sched_fires_total{status=\"fa\\\"il\\\\ed\\n\"} 1\n"), std::string::npos) << text;
    EXPECT_NE(text.find("# TYPE sched_leader gauge\nsched_leader 1\n"), std::string::npos) << text;
}

TEST(Metrics, FamiliesWithoutChildrenAreDeclared) {
    MetricsRegistry r;
    r.Counter("sched_fire_outcomes_total", "Outcomes.", {"app", "job_id", "status"});
    r.Observed("sched_fires_pending", "Pending.", MetricsRegistry::Kind::kGauge, {},
               [] { return std::vector<ObservedSample>{}; });
    const std::string text = r.Render();
    EXPECT_NE(text.find("# TYPE sched_fire_outcomes_total counter\n"), std::string::npos) << text;
    EXPECT_NE(text.find("# TYPE sched_fires_pending gauge\n"), std::string::npos) << text;
    EXPECT_EQ(text.find("sched_fire_outcomes_total{"), std::string::npos) << text;
}

// Prometheus's scrape sets `job` and `instance` itself; a series of ours with either label would
// see it renamed to exported_job/exported_instance and rules on it would match nothing.
TEST(Metrics, LabelsThePrometheusScrapeSetsAreRefused) {
    MetricsRegistry r;
    EXPECT_THROW(r.Counter("sched_a_total", "A.", {"app", "job"}), std::invalid_argument);
    EXPECT_THROW(r.Gauge("sched_b", "B.", {"instance"}), std::invalid_argument);
    EXPECT_THROW(r.Histogram("sched_c_seconds", "C.", {"job"}, {0.1}), std::invalid_argument);
    EXPECT_THROW(r.Observed("sched_d", "D.", MetricsRegistry::Kind::kGauge, {"job"},
                            [] { return std::vector<ObservedSample>{}; }),
                 std::invalid_argument);
    EXPECT_NO_THROW(r.Counter("sched_e_total", "E.", {"app", "job_id"}));
}

TEST(Metrics, HistogramBucketsAreCumulative) {
    MetricsRegistry r;
    auto& lag = r.Histogram("lag_seconds", "Lag.", {}, {0.01, 0.001, 0.1}).Labels({});
    for (double v : {0.0005, 0.002, 0.002, 0.05, 3.0}) lag.Observe(v);
    const std::string text = r.Render();
    EXPECT_NE(text.find("lag_seconds_bucket{le=\"0.001\"} 1\n"), std::string::npos) << text;
    EXPECT_NE(text.find("lag_seconds_bucket{le=\"0.01\"} 3\n"), std::string::npos) << text;
    EXPECT_NE(text.find("lag_seconds_bucket{le=\"0.1\"} 4\n"), std::string::npos) << text;
    EXPECT_NE(text.find("lag_seconds_bucket{le=\"+Inf\"} 5\n"), std::string::npos) << text;
    EXPECT_NE(text.find("lag_seconds_count 5\n"), std::string::npos) << text;
    EXPECT_NEAR(lag.Sum(), 3.0545, 1e-9);
}

TEST(Metrics, WrongLabelCountAndNegativeIncrementThrow) {
    MetricsRegistry r;
    auto& c = r.Counter("c_total", "c", {"a", "b"});
    EXPECT_THROW(c.Labels({"x"}), std::invalid_argument);
    EXPECT_THROW(c.Labels({"x", "y"}).Inc(-1), std::invalid_argument);
    EXPECT_EQ(&r.Counter("c_total", "again", {"a", "b"}), &c);
}

TEST(Metrics, ConcurrentIncrementsAreNotLost) {
    MetricsRegistry r;
    auto& c = r.Counter("n_total", "n").Labels({});
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < 10000; ++i) c.Inc();
        });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(c.Value(), 40000);
}

TEST(Metrics, ObservedFamiliesAreReadAtRenderTime) {
    MetricsRegistry r;
    double requests = 7;
    r.Observed("sched_http_requests_total", "Requests.", MetricsRegistry::Kind::kCounter, {"class"}, [&] {
        return std::vector<ObservedSample>{{{"2xx"}, requests}, {{"5xx"}, 0}};
    });
    requests = 9;
    const std::string text = r.Render();
    EXPECT_NE(text.find("# TYPE sched_http_requests_total counter\n"), std::string::npos) << text;
    EXPECT_NE(text.find("sched_http_requests_total{class=\"2xx\"} 9\n"), std::string::npos) << text;
    EXPECT_NE(text.find("sched_http_requests_total{class=\"5xx\"} 0\n"), std::string::npos) << text;
    EXPECT_THROW(r.Observed("sched_http_requests_total", "again", MetricsRegistry::Kind::kGauge, {}, {}),
                 std::invalid_argument);
    EXPECT_THROW(r.Gauge("sched_http_requests_total", "again"), std::invalid_argument);
}

TEST(Metrics, ProcessMetricsAndBuildInfoAreExported) {
    MetricsRegistry r;
    r.AddProcessMetrics();
    r.AddProcessMetrics();
    const std::string text = r.Render();
    for (const char* series :
         {"process_cpu_seconds_total ", "process_resident_memory_bytes ", "process_virtual_memory_bytes ",
          "process_open_fds ", "process_max_fds ", "process_start_time_seconds "}) {
        EXPECT_NE(text.find(std::string("\n") + series), std::string::npos) << series << "\n" << text;
    }
    EXPECT_NE(text.find("sched_build_info{revision=\"" + std::string(BuildRevision()) + "\",version=\"" +
                        BuildVersion() + "\"} 1\n"),
              std::string::npos)
        << text;
    // Started within the last day, not at the epoch: the boot time was added.
    const auto pos = text.find("\nprocess_start_time_seconds ");
    const double start = std::stod(text.substr(pos + 28));
    const double now = static_cast<double>(std::time(nullptr));
    EXPECT_GT(start, now - 86400);
    EXPECT_LE(start, now + 1);
}

}  // namespace
}  // namespace sched
