#pragma once

/// Prometheus metrics: a facade over one `prometheus::Registry` (prometheus-cpp) that renders
/// the text exposition format (version 0.0.4) for `/metrics` with `prometheus::TextSerializer`.
/// Each process has one MetricsRegistry; every component registers its series in it.
///
///     MetricsRegistry registry;
///     auto& fires = registry.Counter("sched_fires_total", "Fires by final status.", {"status"});
///     fires.Labels({"succeeded"}).Inc();
///     auto& lag = registry.Histogram("sched_fire_lag_seconds", "...", {}, {0.001, 0.005, 0.01});
///     lag.Labels({}).Observe(0.004);
///     std::string text = registry.Render();
///
/// A series stays absent until its child is created (its family is still declared, HELP and
/// TYPE without samples): callers that want a known label value exported at 0 create it up
/// front with `Labels({...})`.
///
/// Thread-safe: registering and Labels() take a lock; updating a child is thread-safe;
/// children are never removed, so references stay valid for the registry's life.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace prometheus {
class Collectable;
class Counter;
class Gauge;
class Histogram;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace sched {

class CounterChild {
  public:
    using Metric = prometheus::Counter;
    explicit CounterChild(prometheus::Counter& c) : c_(&c) {}
    /// Throws std::invalid_argument for a negative increment (a caller bug that would corrupt rate()).
    void Inc(double v = 1.0);
    double Value() const;

  private:
    prometheus::Counter* c_;
};

class GaugeChild {
  public:
    using Metric = prometheus::Gauge;
    explicit GaugeChild(prometheus::Gauge& g) : g_(&g) {}
    void Set(double v);
    void Add(double v);
    double Value() const;

  private:
    prometheus::Gauge* g_;
};

class HistogramChild {
  public:
    using Metric = prometheus::Histogram;
    HistogramChild(prometheus::Histogram& h, std::vector<double> bounds) : h_(&h), bounds_(std::move(bounds)) {}
    void Observe(double v);
    /// Cumulative count per bucket bound (le), then +Inf.
    std::vector<std::uint64_t> CumulativeCounts() const;
    double Sum() const;
    std::uint64_t Count() const;
    const std::vector<double>& bounds() const { return bounds_; }

  private:
    prometheus::Histogram* h_;
    std::vector<double> bounds_;  // sorted
};

/// A metric family with fixed label names; Labels(values) returns the child for those values
/// (created on first use). Throws std::invalid_argument when the number of values is wrong.
template <typename Child>
class Family {
  public:
    Family(prometheus::Family<typename Child::Metric>& family, std::string name, std::vector<std::string> label_names,
           std::vector<double> bounds = {});
    Child& Labels(const std::vector<std::string>& values);
    const std::string& name() const { return name_; }

  private:
    prometheus::Family<typename Child::Metric>* family_;
    std::string name_;
    std::vector<std::string> label_names_;
    std::vector<double> bounds_;
    std::mutex mu_;
    std::map<std::vector<std::string>, std::unique_ptr<Child>> children_;
};

/// One sample of a family read at render time (MetricsRegistry::Observed).
struct ObservedSample {
    std::vector<std::string> label_values;
    double value = 0;
};

class MetricsRegistry {
  public:
    enum class Kind { kCounter, kGauge };

    MetricsRegistry();
    ~MetricsRegistry();
    MetricsRegistry(const MetricsRegistry&) = delete;
    MetricsRegistry& operator=(const MetricsRegistry&) = delete;

    /// Registering the same name twice returns the first family (its help and labels win);
    /// the same name with another type throws std::invalid_argument, as does an invalid name.
    Family<CounterChild>& Counter(const std::string& name, const std::string& help,
                                  std::vector<std::string> label_names = {});
    Family<GaugeChild>& Gauge(const std::string& name, const std::string& help,
                              std::vector<std::string> label_names = {});
    /// `bounds` may be given in any order.
    Family<HistogramChild>& Histogram(const std::string& name, const std::string& help,
                                      std::vector<std::string> label_names, std::vector<double> bounds);

    /// A family whose samples `read` returns at every Render(): for values another component
    /// already keeps (a server's or the elector's atomic counters), so nothing is counted
    /// twice. `read` runs on the rendering thread, must be thread-safe, and must not block; the
    /// objects it reads must outlive every Render().
    void Observed(const std::string& name, const std::string& help, Kind kind, std::vector<std::string> label_names,
                  std::function<std::vector<ObservedSample>()> read);

    /// Adds `sched_build_info{version,revision} 1` (the CMake project version and the git
    /// revision at configure time, "unknown" without git) and the standard process series read
    /// from /proc/self at render time: process_cpu_seconds_total, process_resident_memory_bytes,
    /// process_virtual_memory_bytes, process_open_fds, process_max_fds,
    /// process_start_time_seconds. Idempotent.
    void AddProcessMetrics();

    /// Every family, in the text exposition format.
    std::string Render() const;

    /// The underlying registry, for code that uses prometheus-cpp directly.
    prometheus::Registry& registry() { return *registry_; }

  private:
    enum class Type { kCounter, kGauge, kHistogram, kObserved };
    void Claim(const std::string& name, Type type);
    // The family `name` of `type`: the one registered already, or the new one `make()` builds,
    // kept in `kept` (defined in metrics.cpp, its only user).
    template <typename Child, typename Make>
    Family<Child>& FindOrAdd(const std::string& name, const std::string& help, Type type,
                             std::deque<std::unique_ptr<Family<Child>>>& kept, Make make);

    std::shared_ptr<prometheus::Registry> registry_;
    mutable std::mutex mu_;
    std::deque<std::unique_ptr<Family<CounterChild>>> counters_;
    std::deque<std::unique_ptr<Family<GaugeChild>>> gauges_;
    std::deque<std::unique_ptr<Family<HistogramChild>>> histograms_;
    std::map<std::string, std::pair<Type, void*>> by_name_;
    std::map<std::string, std::string> helps_;
    std::vector<std::shared_ptr<prometheus::Collectable>> collectables_;
    bool process_metrics_ = false;
};

/// The version and git revision this binary was built from (see AddProcessMetrics).
const char* BuildVersion();
const char* BuildRevision();

}  // namespace sched
