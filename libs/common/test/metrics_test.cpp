#include "sched/common/metrics.hpp"

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

}  // namespace
}  // namespace sched
