#pragma once

/// For tests: a SpanSink that keeps what FireTracer pushes, installed for the scope of a test
/// (header only; the tests of the nodes and the web module assert on the spans of a fire).

#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "sched/protocol/fire_spans.hpp"
#include "sched/protocol/span_exporter.hpp"

namespace sched::protocol::testing {

class CollectingSpanSink final : public SpanSink {
  public:
    bool Push(Span span) override {
        std::lock_guard lock(mu_);
        spans_.push_back(std::move(span));
        return true;
    }
    std::vector<Span> Spans() const {
        std::lock_guard lock(mu_);
        return spans_;
    }
    /// The spans named `name`.
    std::vector<Span> Named(const std::string& name) const {
        std::vector<Span> out;
        for (auto& s : Spans()) {
            if (s.name == name) out.push_back(std::move(s));
        }
        return out;
    }

  private:
    mutable std::mutex mu_;
    std::vector<Span> spans_;
};

/// Installs a CollectingSpanSink as the process's FireTracer until destroyed.
class ScopedSpanSink {
  public:
    ScopedSpanSink() { FireTracer::Install(sink_, "node-test"); }
    ~ScopedSpanSink() { FireTracer::Uninstall(); }
    ScopedSpanSink(const ScopedSpanSink&) = delete;
    ScopedSpanSink& operator=(const ScopedSpanSink&) = delete;
    const CollectingSpanSink& operator*() const { return *sink_; }
    const CollectingSpanSink* operator->() const { return sink_.get(); }

  private:
    std::shared_ptr<CollectingSpanSink> sink_ = std::make_shared<CollectingSpanSink>();
};

/// The integer attribute `key` of `span` (-1 when absent).
inline std::int64_t IntAttribute(const Span& span, const std::string& key) {
    for (const auto& a : span.attributes) {
        if (a.key == key) {
            if (const auto* v = std::get_if<std::int64_t>(&a.value)) return *v;
        }
    }
    return -1;
}

}  // namespace sched::protocol::testing
