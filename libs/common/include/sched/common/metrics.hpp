#pragma once

/// Prometheus metrics: counters, gauges and histograms in a registry that renders the text
/// exposition format (version 0.0.4) for `/metrics`.
///
///     MetricsRegistry registry;
///     auto& fires = registry.Counter("sched_fires_total", "Fires by final status.", {"status"});
///     fires.Labels({"succeeded"}).Inc();
///     auto& lag = registry.Histogram("sched_fire_lag_seconds", "...", {}, {0.001, 0.005, 0.01});
///     lag.Labels({}).Observe(0.004);
///     std::string text = registry.Render();
///
/// Thread-safe: registering takes a lock; updating a child is lock-free (atomics); children are
/// never removed, so references stay valid for the registry's life.

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace sched {

class CounterChild {
  public:
    void Inc(double v = 1.0);
    double Value() const { return value_.load(std::memory_order_relaxed); }

  private:
    std::atomic<double> value_{0};
};

class GaugeChild {
  public:
    void Set(double v) { value_.store(v, std::memory_order_relaxed); }
    void Add(double v);
    double Value() const { return value_.load(std::memory_order_relaxed); }

  private:
    std::atomic<double> value_{0};
};

class HistogramChild {
  public:
    explicit HistogramChild(const std::vector<double>& bounds);
    void Observe(double v);
    /// Cumulative count per bucket bound (le), then +Inf.
    std::vector<std::uint64_t> CumulativeCounts() const;
    double Sum() const { return sum_.load(std::memory_order_relaxed); }
    std::uint64_t Count() const { return count_.load(std::memory_order_relaxed); }
    const std::vector<double>& bounds() const { return bounds_; }

  private:
    std::vector<double> bounds_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> buckets_;  // non-cumulative, last = +Inf
    std::atomic<double> sum_{0};
    std::atomic<std::uint64_t> count_{0};
};

/// A metric family with fixed label names; Labels(values) returns the child for those values
/// (created on first use). Throws std::invalid_argument when the number of values is wrong.
template <typename Child>
class Family {
  public:
    Family(std::string name, std::string help, std::string type, std::vector<std::string> label_names,
           std::vector<double> bounds = {});
    Child& Labels(const std::vector<std::string>& values);
    void Render(std::string& out) const;

  private:
    std::string name_;
    std::string help_;
    std::string type_;
    std::vector<std::string> label_names_;
    std::vector<double> bounds_;
    mutable std::mutex mu_;
    std::map<std::vector<std::string>, std::unique_ptr<Child>> children_;
};

class MetricsRegistry {
  public:
    /// Registering the same name twice returns the first family (its help and labels win).
    Family<CounterChild>& Counter(const std::string& name, const std::string& help,
                                  std::vector<std::string> label_names = {});
    Family<GaugeChild>& Gauge(const std::string& name, const std::string& help,
                              std::vector<std::string> label_names = {});
    Family<HistogramChild>& Histogram(const std::string& name, const std::string& help,
                                      std::vector<std::string> label_names, std::vector<double> bounds);
    /// All families, in registration order.
    std::string Render() const;

  private:
    mutable std::mutex mu_;
    std::deque<std::unique_ptr<Family<CounterChild>>> counters_;
    std::deque<std::unique_ptr<Family<GaugeChild>>> gauges_;
    std::deque<std::unique_ptr<Family<HistogramChild>>> histograms_;
    std::map<std::string, void*> by_name_;
    std::vector<std::function<void(std::string&)>> renderers_;
};

/// Escapes a label value for the exposition format (backslash, quote, newline).
std::string EscapeLabelValue(const std::string& v);

}  // namespace sched
