#include "sched/trigger/node.hpp"

#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "impl/node_impl.hpp"
#include "sched/store/fire_metrics.hpp"

namespace sched::trigger {

using namespace std::chrono_literals;

namespace {

http::Response BadField(const std::string& field, std::string message) {
    return http::Response::Error(http::ApiError{Code::kInvalidArgument, std::move(message), field});
}

// A field name from the request, as an error names it: bounded, so a hostile key cannot make
// the answer (or a log line) as large as the body.
std::string ShownField(const std::string& key) {
    constexpr std::size_t kMax = 64;
    return key.size() <= kMax ? key : key.substr(0, kMax) + "...";
}

struct FireNotification {
    std::int64_t epoch = 0;
    std::vector<std::int64_t> fire_ids;
};

// The master's POST /internal/v1/fires {epoch, fire_ids}: exactly these fields, bounded. The
// ids come from one scan (its batch), so a few thousand is already generous.
constexpr std::size_t kMaxNotifiedFires = 10000;

Result<FireNotification> ParseFireNotification(const http::Request& req, std::string& field) {
    field = "body";
    auto body = req.Json();
    if (!body.ok()) return InvalidArgument("body: " + body.status().message());
    if (!body->is_object()) return InvalidArgument("body: expected a JSON object {epoch, fire_ids}");
    FireNotification n;
    for (const auto& [key, value] : body->items()) {
        field = ShownField(key);
        if (key == "epoch") {
            if (!value.is_number_integer() || value.get<std::int64_t>() < 1) {
                return InvalidArgument("epoch: expected an integer >= 1");
            }
            n.epoch = value.get<std::int64_t>();
        } else if (key == "fire_ids") {
            if (!value.is_array()) return InvalidArgument("fire_ids: expected an array of integers");
            if (value.size() > kMaxNotifiedFires) {
                return InvalidArgument("fire_ids: at most " + std::to_string(kMaxNotifiedFires) + " ids");
            }
            for (const auto& id : value) {
                if (!id.is_number_integer() || id.get<std::int64_t>() < 1) {
                    return InvalidArgument("fire_ids: expected an array of integers >= 1");
                }
                n.fire_ids.push_back(id.get<std::int64_t>());
            }
        } else {
            return InvalidArgument(field + ": unknown field");
        }
    }
    for (const char* required : {"epoch", "fire_ids"}) {
        field = required;
        if (!body->contains(required)) return InvalidArgument(field + ": required");
    }
    return n;
}

}  // namespace

std::string TriggerNode::StatusJson() const {
    nlohmann::json j;
    j["node_id"] = node_id_;
    j["address"] = advertised_;
    const auto leadership = impl_->elector ? impl_->elector->CurrentLeadership() : std::nullopt;
    j["role"] = leadership ? "master" : "slave";
    j["epoch"] = leadership ? nlohmann::json(leadership->epoch) : nlohmann::json(nullptr);
    // The term ends at valid_until = (start of the last successful renew) + ttl - margin, so the
    // lease's age - time since that renew - follows from it without another clock read.
    if (leadership) {
        const auto& election = impl_->elector->config();
        const auto valid_for = std::chrono::duration_cast<std::chrono::milliseconds>(leadership->valid_until -
                                                                                     std::chrono::steady_clock::now());
        const auto term = std::chrono::duration_cast<std::chrono::milliseconds>(election.ttl - election.margin);
        j["lease_age_ms"] = std::max<std::int64_t>(0, (term - valid_for).count());
        j["lease_valid_for_ms"] = std::max<std::int64_t>(0, valid_for.count());
    } else {
        j["lease_age_ms"] = nullptr;
        j["lease_valid_for_ms"] = nullptr;
    }
    {
        std::lock_guard lock(impl_->leader_mu);
        j["leader"] = impl_->leader ? nlohmann::json(impl_->leader->first) : nlohmann::json(nullptr);
        j["leader_epoch"] = impl_->leader ? nlohmann::json(impl_->leader->second) : nlohmann::json(nullptr);
    }
    j["db_ok"] = db_ok_.load();
    j["db_clock_offset_ms"] = time_ ? time_->Offset().count() / 1000.0 : 0.0;
    j["db_round_trip_ms"] = time_ ? time_->RoundTrip().count() / 1000.0 : 0.0;
    j["scheduled_fires"] = impl_->slave ? impl_->slave->Scheduled() : 0;
    j["in_flight_fires"] = impl_->slave ? impl_->slave->InFlight() : 0;
    return j.dump();
}

std::string TriggerNode::NotReadyReason() const {
    if (stopping_) return "stopping";
    if (!started_) return "starting";
    if (!db_ok_) return "database unreachable (the last heartbeat failed)";
    // A cluster where nobody leads plans no fire, even though every node and the database are
    // up (a lease nobody can take, a database that refuses writes): ttl + tick is the longest a
    // healthy hand-over takes, so a longer gap is an outage the operator must see.
    const auto& election = config_.election;
    const auto now = std::chrono::steady_clock::now();
    const auto last = impl_->elector->LastLeaderActivity().value_or(started_at_);
    const auto gap = now - last;
    if (gap > election.ttl + election.tick) {
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(gap).count();
        return "no node has led the cluster for " + FormatDuration(std::chrono::milliseconds(ms)) +
               " (longer than election ttl + tick, " + FormatDuration(election.ttl + election.tick) + ")";
    }
    return "";
}

std::string TriggerNode::Metrics() const {
    return metrics_.Render();
}

void TriggerNode::ExportNodeMetrics() {
    using Kind = MetricsRegistry::Kind;
    using Samples = std::vector<ObservedSample>;
    const auto single = [](double v) {
        return Samples{{{}, v}};
    };
    auto* elector = impl_->elector.get();
    metrics_.Observed("sched_leader", "1 while this node is the master.", Kind::kGauge, {},
                      [elector, single] { return single(elector->IsLeading() ? 1 : 0); });
    metrics_.Observed("sched_epoch", "The lease epoch this node leads in (0 when not leading).", Kind::kGauge, {},
                      [elector, single] {
                          const auto leadership = elector->CurrentLeadership();
                          return single(leadership ? static_cast<double>(leadership->epoch) : 0);
                      });
    metrics_.Observed("sched_lease_transitions_total", "Leadership terms started and ended.", Kind::kCounter, {"kind"},
                      [elector] {
                          const auto c = elector->Counters();
                          return Samples{{{"started"}, static_cast<double>(c.started_leading)},
                                         {{"ended"}, static_cast<double>(c.stopped_leading)}};
                      });
    metrics_.Observed("sched_lease_renew_failures_total", "Renew rounds that failed.", Kind::kCounter, {},
                      [elector, single] { return single(static_cast<double>(elector->Counters().renew_failures)); });
    metrics_.Observed("sched_lease_self_demotions_total", "Terms ended by the local deadline.", Kind::kCounter, {},
                      [elector, single] { return single(static_cast<double>(elector->Counters().self_demotions)); });
    metrics_.Observed("sched_lease_clock_anomalies_total", "Leases taken over because the clock had moved back.",
                      Kind::kCounter, {},
                      [elector, single] { return single(static_cast<double>(elector->Counters().clock_anomalies)); });
    auto* time = time_.get();
    metrics_.Observed("sched_db_clock_offset_seconds", "Database clock minus local clock.", Kind::kGauge, {},
                      [time, single] { return single(static_cast<double>(time->Offset().count()) / 1e6); });
    // Cluster-wide gauges: exported by the leading master only (ClusterGaugesLoop), so a sum
    // or max over all nodes counts each fire once.
    auto* impl = impl_.get();
    const auto gauge = [this, impl](const char* name, const char* help, std::vector<std::string> labels,
                                    const std::function<Samples(const store::ClusterGauges&)>& pick) {
        metrics_.Observed(name, help, Kind::kGauge, std::move(labels), [impl, pick] {
            std::lock_guard lock(impl->gauges_mu);
            return impl->gauges ? pick(*impl->gauges) : Samples{};
        });
    };
    gauge("sched_fires_pending", "Fires waiting to be sent (pending or dispatching); leader only.", {},
          [](const store::ClusterGauges& g) {
              return Samples{{{}, static_cast<double>(g.pending)}};
          });
    gauge("sched_fires_running", "Fires an executor accepted and has not finished; leader only.", {},
          [](const store::ClusterGauges& g) {
              return Samples{{{}, static_cast<double>(g.running)}};
          });
    gauge("sched_fires_overdue", "Pending fires due longer ago than misfire-threshold; leader only.", {},
          [](const store::ClusterGauges& g) {
              return Samples{{{}, static_cast<double>(g.overdue)}};
          });
    gauge("sched_executors_live",
          "Executor instances with a heartbeat within executor-ttl, per app (apps with enabled jobs at 0); "
          "leader only.",
          {"app"}, [](const store::ClusterGauges& g) {
              Samples out;
              for (const auto& [app, n] : g.executors_live) out.push_back({{app}, static_cast<double>(n)});
              return out;
          });
    gauge("sched_job_last_success_timestamp_seconds",
          "Finish time of the job's latest succeeded fire still in the history; leader only.", {"app", "job", "name"},
          [](const store::ClusterGauges& g) {
              Samples out;
              for (const auto& j : g.last_success) {
                  out.push_back({{j.app, std::to_string(j.job_id), j.name}, static_cast<double>(j.finished_ms) / 1e3});
              }
              return out;
          });
    auto* server = impl_->server.get();
    http::ExportServerStats(metrics_, "sched_http", [server] { return server->Stats(); });
}

void TriggerNode::AddRoutes() {
    auto& r = impl_->router;
    r.Add(
        http::Method::kGet, "/healthz", [](http::Request&) { return http::Response::Text("ok\n"); },
        http::Access::kPublic);
    r.Add(
        http::Method::kGet, "/readyz",
        [this](http::Request&) {
            const std::string why = NotReadyReason();
            return why.empty() ? http::Response::Text("ready\n", 200)
                               : http::Response::Text("not ready: " + why + "\n", 503);
        },
        http::Access::kPublic);
    r.Add(
        http::Method::kGet, "/metrics",
        [this](http::Request&) {
            return http::Response::Text(Metrics(), 200, "text/plain; version=0.0.4; charset=utf-8");
        },
        http::Access::kPublic);
    r.Add(
        http::Method::kGet, "/status",
        [this](http::Request&) {
            http::Response res = http::Response::Text(StatusJson(), 200, "application/json");
            return res;
        },
        http::Access::kPublic);
    r.Add(http::Method::kPost, "/internal/v1/election/nudge", [this](http::Request& req) {
        // No body, or `{}` (what NudgePeers sends): anything else is a caller's bug worth a 400.
        if (!req.body.empty()) {
            auto body = req.Json();
            if (!body.ok()) return BadField("body", "body: expected no body or {}: " + body.status().message());
            if (!body->is_object()) return BadField("body", "body: expected no body or {}");
            if (!body->empty()) {
                const std::string field = ShownField(body->begin().key());
                return BadField(field, field + ": unknown field");
            }
        }
        if (impl_->elector) impl_->elector->Nudge();
        return http::Response::Json({{"nudged", true}});
    });
    r.Add(http::Method::kPost, "/internal/v1/fires", [this](http::Request& req) {
        std::string field;
        auto parsed = ParseFireNotification(req, field);
        if (!parsed.ok()) return http::Response::Error(parsed.status(), field);
        if (impl_->slave) impl_->slave->Notify(std::move(parsed->fire_ids));
        return http::Response::Json({{"accepted", true}}, 202);
    });
}

}  // namespace sched::trigger
