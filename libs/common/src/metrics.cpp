#include "sched/common/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace sched {

namespace {

// atomic<double>::fetch_add is C++20 but not in libstdc++ 12; a CAS loop is equivalent.
void AtomicAdd(std::atomic<double>& a, double v) {
    double cur = a.load(std::memory_order_relaxed);
    while (!a.compare_exchange_weak(cur, cur + v, std::memory_order_relaxed)) {
    }
}

std::string Number(double v) {
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    if (std::isnan(v)) return "NaN";
    if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}

std::string LabelSet(const std::vector<std::string>& names, const std::vector<std::string>& values,
                     const std::string& extra = "") {
    std::string out;
    for (std::size_t i = 0; i < names.size(); ++i) {
        out += (out.empty() ? "" : ",") + names[i] + "=\"" + EscapeLabelValue(values[i]) + "\"";
    }
    if (!extra.empty()) out += (out.empty() ? "" : ",") + extra;
    return out.empty() ? "" : "{" + out + "}";
}

template <typename Child>
std::unique_ptr<Child> MakeChild(const std::vector<double>& bounds) {
    if constexpr (std::is_same_v<Child, HistogramChild>) {
        return std::make_unique<HistogramChild>(bounds);
    } else {
        return std::make_unique<Child>();
    }
}

}  // namespace

std::string EscapeLabelValue(const std::string& v) {
    std::string out;
    for (char c : v) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

void CounterChild::Inc(double v) {
    // Counters only go up; a negative increment is a caller bug that would corrupt rate().
    if (v < 0) throw std::invalid_argument("counter increment must be >= 0");
    AtomicAdd(value_, v);
}

void GaugeChild::Add(double v) {
    AtomicAdd(value_, v);
}

HistogramChild::HistogramChild(const std::vector<double>& bounds)
    : bounds_(bounds), buckets_(new std::atomic<std::uint64_t>[bounds.size() + 1]) {
    std::sort(bounds_.begin(), bounds_.end());
    for (std::size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0);
}

void HistogramChild::Observe(double v) {
    const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), v);
    buckets_[static_cast<std::size_t>(it - bounds_.begin())].fetch_add(1, std::memory_order_relaxed);
    AtomicAdd(sum_, v);
    count_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<std::uint64_t> HistogramChild::CumulativeCounts() const {
    std::vector<std::uint64_t> out;
    std::uint64_t running = 0;
    for (std::size_t i = 0; i <= bounds_.size(); ++i) {
        running += buckets_[i].load(std::memory_order_relaxed);
        out.push_back(running);
    }
    return out;
}

template <typename Child>
Family<Child>::Family(std::string name, std::string help, std::string type, std::vector<std::string> label_names,
                      std::vector<double> bounds)
    : name_(std::move(name)),
      help_(std::move(help)),
      type_(std::move(type)),
      label_names_(std::move(label_names)),
      bounds_(std::move(bounds)) {}

template <typename Child>
Child& Family<Child>::Labels(const std::vector<std::string>& values) {
    if (values.size() != label_names_.size()) {
        throw std::invalid_argument(name_ + ": expected " + std::to_string(label_names_.size()) + " label values");
    }
    std::lock_guard lock(mu_);
    auto& child = children_[values];
    if (!child) child = MakeChild<Child>(bounds_);
    return *child;
}

template <typename Child>
void Family<Child>::Render(std::string& out) const {
    out += "# HELP " + name_ + " " + help_ + "\n# TYPE " + name_ + " " + type_ + "\n";
    std::lock_guard lock(mu_);
    for (const auto& [values, child] : children_) {
        if constexpr (std::is_same_v<Child, HistogramChild>) {
            const auto counts = child->CumulativeCounts();
            for (std::size_t i = 0; i < counts.size(); ++i) {
                const std::string le = i < child->bounds().size() ? Number(child->bounds()[i]) : "+Inf";
                out += name_ + "_bucket" + LabelSet(label_names_, values, "le=\"" + le + "\"") + " " +
                       std::to_string(counts[i]) + "\n";
            }
            out += name_ + "_sum" + LabelSet(label_names_, values) + " " + Number(child->Sum()) + "\n";
            out += name_ + "_count" + LabelSet(label_names_, values) + " " + std::to_string(child->Count()) + "\n";
        } else {
            out += name_ + LabelSet(label_names_, values) + " " + Number(child->Value()) + "\n";
        }
    }
}

template class Family<CounterChild>;
template class Family<GaugeChild>;
template class Family<HistogramChild>;

Family<CounterChild>& MetricsRegistry::Counter(const std::string& name, const std::string& help,
                                               std::vector<std::string> label_names) {
    std::lock_guard lock(mu_);
    if (auto it = by_name_.find(name); it != by_name_.end()) return *static_cast<Family<CounterChild>*>(it->second);
    auto& f =
        counters_.emplace_back(std::make_unique<Family<CounterChild>>(name, help, "counter", std::move(label_names)));
    by_name_[name] = f.get();
    renderers_.push_back([p = f.get()](std::string& out) { p->Render(out); });
    return *f;
}

Family<GaugeChild>& MetricsRegistry::Gauge(const std::string& name, const std::string& help,
                                           std::vector<std::string> label_names) {
    std::lock_guard lock(mu_);
    if (auto it = by_name_.find(name); it != by_name_.end()) return *static_cast<Family<GaugeChild>*>(it->second);
    auto& f = gauges_.emplace_back(std::make_unique<Family<GaugeChild>>(name, help, "gauge", std::move(label_names)));
    by_name_[name] = f.get();
    renderers_.push_back([p = f.get()](std::string& out) { p->Render(out); });
    return *f;
}

Family<HistogramChild>& MetricsRegistry::Histogram(const std::string& name, const std::string& help,
                                                   std::vector<std::string> label_names, std::vector<double> bounds) {
    std::lock_guard lock(mu_);
    if (auto it = by_name_.find(name); it != by_name_.end()) return *static_cast<Family<HistogramChild>*>(it->second);
    auto& f = histograms_.emplace_back(
        std::make_unique<Family<HistogramChild>>(name, help, "histogram", std::move(label_names), std::move(bounds)));
    by_name_[name] = f.get();
    renderers_.push_back([p = f.get()](std::string& out) { p->Render(out); });
    return *f;
}

std::string MetricsRegistry::Render() const {
    std::string out;
    std::lock_guard lock(mu_);
    for (const auto& r : renderers_) r(out);
    return out;
}

}  // namespace sched
