#include "sched/common/metrics.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#ifndef SCHED_BUILD_VERSION
#define SCHED_BUILD_VERSION "unknown"
#endif
#ifndef SCHED_BUILD_REVISION
#define SCHED_BUILD_REVISION "unknown"
#endif

namespace sched {

namespace {

// Prometheus attaches `job` and `instance` to every scraped series (the scrape target's); a
// series carrying its own label of either name loses it to `exported_job` under the default
// `honor_labels: false`, and rules written against it match nothing. A family declared with one
// is a programming error, refused at start-up instead of showing up on a dashboard.
std::vector<std::string> CheckedLabelNames(const std::string& metric, std::vector<std::string> label_names) {
    for (const auto& label : label_names) {
        if (label == "job" || label == "instance") {
            throw std::invalid_argument("metric " + metric + ": label '" + label +
                                        "' is reserved by Prometheus's scrape (use e.g. job_id)");
        }
    }
    return label_names;
}

// A family of ObservedSamples read at collection time.
class ObservedCollectable final : public prometheus::Collectable {
  public:
    ObservedCollectable(std::string name, std::string help, MetricsRegistry::Kind kind,
                        std::vector<std::string> label_names, std::function<std::vector<ObservedSample>()> read)
        : name_(std::move(name)),
          help_(std::move(help)),
          kind_(kind),
          label_names_(CheckedLabelNames(name_, std::move(label_names))),
          read_(std::move(read)) {}

    std::vector<prometheus::MetricFamily> Collect() const override {
        prometheus::MetricFamily f;
        f.name = name_;
        f.help = help_;
        f.type =
            kind_ == MetricsRegistry::Kind::kCounter ? prometheus::MetricType::Counter : prometheus::MetricType::Gauge;
        for (const auto& s : read_()) {
            if (s.label_values.size() != label_names_.size()) continue;
            prometheus::ClientMetric m;
            for (std::size_t i = 0; i < label_names_.size(); ++i)
                m.label.push_back({label_names_[i], s.label_values[i]});
            if (kind_ == MetricsRegistry::Kind::kCounter) {
                m.counter.value = s.value;
            } else {
                m.gauge.value = s.value;
            }
            f.metric.push_back(std::move(m));
        }
        return {std::move(f)};
    }

  private:
    std::string name_;
    std::string help_;
    MetricsRegistry::Kind kind_;
    std::vector<std::string> label_names_;
    std::function<std::vector<ObservedSample>()> read_;
};

prometheus::MetricFamily Single(const char* name, const char* help, prometheus::MetricType type, double value) {
    prometheus::MetricFamily f;
    f.name = name;
    f.help = help;
    f.type = type;
    prometheus::ClientMetric m;
    if (type == prometheus::MetricType::Counter) {
        m.counter.value = value;
    } else {
        m.gauge.value = value;
    }
    f.metric.push_back(std::move(m));
    return f;
}

// The standard process_* series (as the Go and Java clients export them), from /proc/self.
// prometheus-cpp has no process collector.
class ProcessCollectable final : public prometheus::Collectable {
  public:
    std::vector<prometheus::MetricFamily> Collect() const override {
        using prometheus::MetricType;
        std::vector<prometheus::MetricFamily> out;
        const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
        const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
        std::ifstream stat_file("/proc/self/stat");
        std::string stat((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
        // The command name (field 2) may contain spaces: fields are counted after its ')'.
        const auto close = stat.rfind(')');
        if (close != std::string::npos && ticks > 0) {
            std::istringstream in(stat.substr(close + 2));
            std::vector<std::string> f;  // f[0] is field 3 (state)
            for (std::string w; in >> w;) f.push_back(w);
            if (f.size() > 21) {
                const double utime = std::stod(f[11]);
                const double stime = std::stod(f[12]);
                const double start_ticks = std::stod(f[19]);
                const double vsize = std::stod(f[20]);
                const double rss_pages = std::stod(f[21]);
                out.push_back(Single("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
                                     MetricType::Counter, (utime + stime) / ticks));
                out.push_back(
                    Single("process_virtual_memory_bytes", "Virtual memory size in bytes.", MetricType::Gauge, vsize));
                out.push_back(Single("process_resident_memory_bytes", "Resident memory size in bytes.",
                                     MetricType::Gauge, rss_pages * page));
                if (const double boot = BootTime(); boot > 0) {
                    out.push_back(Single("process_start_time_seconds",
                                         "Start time of the process since unix epoch in seconds.", MetricType::Gauge,
                                         boot + start_ticks / ticks));
                }
            }
        }
        std::error_code ec;
        double fds = 0;
        for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end; it.increment(ec)) {
            ++fds;
        }
        if (!ec) {
            out.push_back(Single("process_open_fds", "Number of open file descriptors.", MetricType::Gauge, fds));
        }
        rlimit lim{};
        if (::getrlimit(RLIMIT_NOFILE, &lim) == 0) {
            out.push_back(Single("process_max_fds", "Maximum number of open file descriptors.", MetricType::Gauge,
                                 static_cast<double>(lim.rlim_cur)));
        }
        return out;
    }

  private:
    static double BootTime() {
        std::ifstream in("/proc/stat");
        for (std::string line; std::getline(in, line);) {
            if (line.rfind("btime ", 0) == 0) return std::stod(line.substr(6));
        }
        return 0;
    }
};

}  // namespace

const char* BuildVersion() {
    return SCHED_BUILD_VERSION;
}

const char* BuildRevision() {
    return SCHED_BUILD_REVISION;
}

void CounterChild::Inc(double v) {
    if (v < 0) throw std::invalid_argument("counter increment must be >= 0");
    c_->Increment(v);
}

double CounterChild::Value() const {
    return c_->Value();
}

void GaugeChild::Set(double v) {
    g_->Set(v);
}

void GaugeChild::Add(double v) {
    g_->Increment(v);
}

double GaugeChild::Value() const {
    return g_->Value();
}

void HistogramChild::Observe(double v) {
    h_->Observe(v);
}

std::vector<std::uint64_t> HistogramChild::CumulativeCounts() const {
    std::vector<std::uint64_t> out;
    for (const auto& b : h_->Collect().histogram.bucket) out.push_back(b.cumulative_count);
    return out;
}

double HistogramChild::Sum() const {
    return h_->Collect().histogram.sample_sum;
}

std::uint64_t HistogramChild::Count() const {
    return h_->Collect().histogram.sample_count;
}

template <typename Child>
Family<Child>::Family(prometheus::Family<typename Child::Metric>& family, std::string name,
                      std::vector<std::string> label_names, std::vector<double> bounds)
    : family_(&family),
      name_(std::move(name)),
      label_names_(CheckedLabelNames(name_, std::move(label_names))),
      bounds_(std::move(bounds)) {}

template <typename Child>
Child& Family<Child>::Labels(const std::vector<std::string>& values) {
    if (values.size() != label_names_.size()) {
        throw std::invalid_argument(name_ + ": expected " + std::to_string(label_names_.size()) + " label values");
    }
    std::lock_guard lock(mu_);
    auto& child = children_[values];
    if (!child) {
        std::map<std::string, std::string> labels;
        for (std::size_t i = 0; i < values.size(); ++i) labels.emplace(label_names_[i], values[i]);
        if constexpr (std::is_same_v<Child, HistogramChild>) {
            child = std::make_unique<Child>(family_->Add(labels, bounds_), bounds_);
        } else {
            child = std::make_unique<Child>(family_->Add(labels));
        }
    }
    return *child;
}

template class Family<CounterChild>;
template class Family<GaugeChild>;
template class Family<HistogramChild>;

MetricsRegistry::MetricsRegistry() : registry_(std::make_shared<prometheus::Registry>()) {}

MetricsRegistry::~MetricsRegistry() = default;

void MetricsRegistry::Claim(const std::string& name, Type type) {
    if (auto it = by_name_.find(name); it != by_name_.end() && it->second.first != type) {
        throw std::invalid_argument("metric " + name + " is already registered with another type");
    }
}

template <typename Child, typename Make>
Family<Child>& MetricsRegistry::FindOrAdd(const std::string& name, const std::string& help, Type type,
                                          std::deque<std::unique_ptr<Family<Child>>>& kept, Make make) {
    std::lock_guard lock(mu_);
    Claim(name, type);
    if (auto it = by_name_.find(name); it != by_name_.end()) {
        return *static_cast<Family<Child>*>(it->second.second);
    }
    auto& f = kept.emplace_back(make());
    by_name_[name] = {type, f.get()};
    helps_[name] = help;
    return *f;
}

Family<CounterChild>& MetricsRegistry::Counter(const std::string& name, const std::string& help,
                                               std::vector<std::string> label_names) {
    return FindOrAdd(name, help, Type::kCounter, counters_, [&] {
        auto& family = prometheus::BuildCounter().Name(name).Help(help).Register(*registry_);
        return std::make_unique<Family<CounterChild>>(family, name, std::move(label_names));
    });
}

Family<GaugeChild>& MetricsRegistry::Gauge(const std::string& name, const std::string& help,
                                           std::vector<std::string> label_names) {
    return FindOrAdd(name, help, Type::kGauge, gauges_, [&] {
        auto& family = prometheus::BuildGauge().Name(name).Help(help).Register(*registry_);
        return std::make_unique<Family<GaugeChild>>(family, name, std::move(label_names));
    });
}

Family<HistogramChild>& MetricsRegistry::Histogram(const std::string& name, const std::string& help,
                                                   std::vector<std::string> label_names, std::vector<double> bounds) {
    return FindOrAdd(name, help, Type::kHistogram, histograms_, [&] {
        // prometheus-cpp requires strictly increasing bounds.
        std::sort(bounds.begin(), bounds.end());
        bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
        auto& family = prometheus::BuildHistogram().Name(name).Help(help).Register(*registry_);
        return std::make_unique<Family<HistogramChild>>(family, name, std::move(label_names), std::move(bounds));
    });
}

void MetricsRegistry::Observed(const std::string& name, const std::string& help, Kind kind,
                               std::vector<std::string> label_names,
                               std::function<std::vector<ObservedSample>()> read) {
    std::lock_guard lock(mu_);
    if (by_name_.count(name) != 0) throw std::invalid_argument("metric " + name + " is already registered");
    by_name_[name] = {Type::kObserved, nullptr};
    collectables_.push_back(
        std::make_shared<ObservedCollectable>(name, help, kind, std::move(label_names), std::move(read)));
}

void MetricsRegistry::AddProcessMetrics() {
    {
        std::lock_guard lock(mu_);
        if (process_metrics_) return;
        process_metrics_ = true;
        collectables_.push_back(std::make_shared<ProcessCollectable>());
    }
    Gauge("sched_build_info", "Always 1; the labels name the version and git revision of this binary.",
          {"version", "revision"})
        .Labels({BuildVersion(), BuildRevision()})
        .Set(1);
}

std::string MetricsRegistry::Render() const {
    auto families = registry_->Collect();
    std::vector<std::shared_ptr<prometheus::Collectable>> extra;
    {
        std::lock_guard lock(mu_);
        extra = collectables_;
        // prometheus-cpp leaves out a family without children; declaring it (HELP and TYPE, no
        // samples) lets dashboards and alert rules be checked against any live /metrics.
        std::set<std::string> present;
        for (const auto& f : families) present.insert(f.name);
        for (const auto& [name, entry] : by_name_) {
            if (entry.first == Type::kObserved || present.count(name) != 0) continue;
            prometheus::MetricFamily f;
            f.name = name;
            f.help = helps_.at(name);
            f.type = entry.first == Type::kCounter ? prometheus::MetricType::Counter
                     : entry.first == Type::kGauge ? prometheus::MetricType::Gauge
                                                   : prometheus::MetricType::Histogram;
            families.push_back(std::move(f));
        }
    }
    for (const auto& c : extra) {
        auto more = c->Collect();
        families.insert(families.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
    }
    return prometheus::TextSerializer().Serialize(families);
}

}  // namespace sched
