#include "sched/trigger/node.hpp"

#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "impl/node_admin.hpp"
#include "impl/node_impl.hpp"
#include "sched/db/aborted_transactions.hpp"
#include "sched/store/fire_metrics.hpp"

namespace sched::trigger {

std::string TriggerNode::StatusJson() const {
    nlohmann::json j;
    j["node_id"] = node_id_;
    j["address"] = advertised_;
    const auto leadership = impl_->leases ? impl_->leases->elector(0).CurrentLeadership() : std::nullopt;
    j["role"] = leadership ? "master" : "slave";
    j["epoch"] = leadership ? nlohmann::json(leadership->epoch) : nlohmann::json(nullptr);
    // The term ends at valid_until = (start of the last successful renew) + ttl - margin, so the
    // lease's age - time since that renew - follows from it without another clock read.
    if (leadership) {
        const auto& election = config_.election;
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
        const auto& leader = impl_->leaders.empty() ? std::nullopt : impl_->leaders[0];
        j["leader"] = leader ? nlohmann::json(leader->first) : nlohmann::json(nullptr);
        j["leader_epoch"] = leader ? nlohmann::json(leader->second) : nlohmann::json(nullptr);
    }
    // Every shard: who leads it as this node sees it, at which epoch, and since when this node
    // leads it (ms ago), so an operator can read the spread from any node.
    nlohmann::json shards = nlohmann::json::array();
    if (impl_->leases) {
        const auto now = std::chrono::steady_clock::now();
        for (const auto& s : impl_->leases->States()) {
            nlohmann::json e = {{"shard", s.shard}, {"lease", s.lease}, {"leading", s.leading.has_value()}};
            if (s.leading) {
                e["leader"] = node_id_;
                e["epoch"] = s.leading->epoch;
            } else {
                // This node's own sighting outlives its term until a round reads the new holder.
                const bool seen = s.leader && s.leader->first != node_id_;
                e["leader"] = seen ? nlohmann::json(s.leader->first) : nlohmann::json(nullptr);
                e["epoch"] = seen ? nlohmann::json(s.leader->second) : nlohmann::json(nullptr);
            }
            e["leading_for_ms"] =
                s.leading_since
                    ? nlohmann::json(
                          std::chrono::duration_cast<std::chrono::milliseconds>(now - *s.leading_since).count())
                    : nlohmann::json(nullptr);
            shards.push_back(std::move(e));
        }
    }
    j["shard_count"] = config_.scheduler.shards;
    j["shards_led"] = impl_->leases ? impl_->leases->Led() : 0;
    j["shards"] = std::move(shards);
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
    {
        std::lock_guard serving_lock(serving_mu_);
        if (!db_not_serving_.empty()) return db_not_serving_;
        if (!shards_refused_.empty()) return shards_refused_;
    }
    // A cluster (or a shard of it) that nobody leads plans no fire, even though every node and
    // the database are up (a lease nobody can take, a database that refuses writes): ttl + tick
    // is the longest a healthy hand-over takes, so a longer gap is an outage the operator must see.
    const auto& election = config_.election;
    const auto now = std::chrono::steady_clock::now();
    for (const auto& s : impl_->leases->States()) {
        const auto gap = now - s.last_leader_activity.value_or(started_at_);
        if (gap <= election.ttl + election.tick) continue;
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(gap).count();
        const std::string what = config_.scheduler.shards == 1 ? "the cluster" : "shard " + std::to_string(s.shard);
        return "no node has led " + what + " for " + FormatDuration(std::chrono::milliseconds(ms)) +
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
    auto* leases = impl_->leases.get();
    auto* elector = &leases->elector(0);
    if (const protocol::SpanExporter* spans = impl_->spans.get()) {
        metrics_.Observed("sched_trace_spans_dropped_total",
                          "Spans not exported: queue_full (pushed while the queue was full), export_failed (a "
                          "batch dropped after its last retry).",
                          Kind::kCounter, {"reason"}, [spans] {
                              const auto s = spans->Stats();
                              return Samples{{{"queue_full"}, static_cast<double>(s.dropped_queue_full)},
                                             {{"export_failed"}, static_cast<double>(s.dropped_export_failed)}};
                          });
        metrics_.Observed("sched_trace_spans_exported_total", "Spans an OTLP collector accepted.", Kind::kCounter, {},
                          [spans, single] { return single(static_cast<double>(spans->Stats().exported)); });
    }
    if (const dispatch::RunEndsForwarder* run_ends = impl_->run_ends.get()) {
        metrics_.Observed("sched_run_end_notices_total",
                          "Notices of ended runs posted to other nodes (POST /internal/v1/runs/ended): sent (a 2xx "
                          "answer), failed.",
                          Kind::kCounter, {"outcome"}, [run_ends] {
                              const auto s = run_ends->Stats();
                              return Samples{{{"sent"}, static_cast<double>(s.posts - s.failed_posts)},
                                             {{"failed"}, static_cast<double>(s.failed_posts)}};
                          });
        metrics_.Observed("sched_run_end_ids_total",
                          "Ended fires in those notices: withdrawn (another node dropped its running record "
                          "for it), dropped (over the queue's bound, never sent).",
                          Kind::kCounter, {"outcome"}, [run_ends] {
                              const auto s = run_ends->Stats();
                              return Samples{{{"withdrawn"}, static_cast<double>(s.withdrawn)},
                                             {{"dropped"}, static_cast<double>(s.dropped)}};
                          });
    }
    metrics_.Observed("sched_leader", "1 while this node is the master (leads shard 0).", Kind::kGauge, {},
                      [elector, single] { return single(elector->IsLeading() ? 1 : 0); });
    metrics_.Observed("sched_epoch", "The lease epoch this node leads shard 0 in (0 when not leading).", Kind::kGauge,
                      {}, [elector, single] {
                          const auto leadership = elector->CurrentLeadership();
                          return single(leadership ? static_cast<double>(leadership->epoch) : 0);
                      });
    // One sample per shard, labelled with its index: `value(i)` of shard i.
    const auto per_shard = [leases](auto value) {
        return [leases, value] {
            Samples out;
            for (int i = 0; i < leases->count(); ++i) out.push_back({{std::to_string(i)}, value(i)});
            return out;
        };
    };
    metrics_.Observed("sched_shard_leader", "1 while this node leads the shard.", Kind::kGauge, {"shard"},
                      per_shard([leases](int i) { return leases->elector(i).IsLeading() ? 1.0 : 0.0; }));
    metrics_.Observed("sched_shard_epoch", "The highest lease epoch of the shard this node has seen.", Kind::kGauge,
                      {"shard"},
                      per_shard([leases](int i) { return static_cast<double>(leases->ObservedEpoch(i).value_or(0)); }));
    metrics_.Observed("sched_shards_led", "How many shards this node leads.", Kind::kGauge, {},
                      [leases, single] { return single(static_cast<double>(leases->Led())); });
    metrics_.Observed("sched_lease_transitions_total", "Leadership terms started and ended, over every shard's lease.",
                      Kind::kCounter, {"kind"}, [leases] {
                          const auto c = leases->Counters();
                          return Samples{{{"started"}, static_cast<double>(c.started_leading)},
                                         {{"ended"}, static_cast<double>(c.stopped_leading)}};
                      });
    metrics_.Observed("sched_lease_renew_failures_total", "Renew rounds that failed.", Kind::kCounter, {},
                      [leases, single] { return single(static_cast<double>(leases->Counters().renew_failures)); });
    metrics_.Observed("sched_lease_self_demotions_total", "Terms ended by the local deadline.", Kind::kCounter, {},
                      [leases, single] { return single(static_cast<double>(leases->Counters().self_demotions)); });
    metrics_.Observed("sched_lease_clock_anomalies_total", "Leases taken over because the clock had moved back.",
                      Kind::kCounter, {},
                      [leases, single] { return single(static_cast<double>(leases->Counters().clock_anomalies)); });
    metrics_.Observed("sched_db_aborted_transactions_total",
                      "Transactions the database aborted as deadlocks (on Galera: certification failures); each is "
                      "retried by its caller.",
                      Kind::kCounter, {}, [single] { return single(static_cast<double>(db::AbortedTransactions())); });
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
          "Finish time of the job's latest succeeded fire still in the history; leader only.",
          {"app", "job_id", "name"}, [](const store::ClusterGauges& g) {
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
    auto* impl = impl_.get();
    impl::NodeAdmin::Hooks hooks;
    // The highest lease epoch of the shard this node has seen: its own term or the last holder a
    // round read (epochs only grow, so the last sighting is the highest).
    hooks.observed_epoch = [impl](int shard) -> std::optional<std::int64_t> {
        if (!impl->leases) return std::nullopt;
        return impl->leases->ObservedEpoch(shard);
    };
    hooks.wake_slave = [impl](protocol::FiresNotice notice) {
        if (!impl->slave) return;
        if (auto fires = protocol::NoticedFires(notice)) {
            impl->slave->Notify(*fires);
        } else {
            impl->slave->NotifyIds(std::move(notice.fire_ids));  // from a master older than due_at
        }
    };
    hooks.nudge = [impl] {
        if (impl->leases) impl->leases->Nudge();
    };
    hooks.wake_masters = [this] {
        return WakeLocalMasters();
    };
    hooks.runs_ended = [this](const std::vector<std::int64_t>& fire_ids) -> std::size_t {
        // The routes are served before the slave exists (Start); started_ is set after it is.
        return started_ && impl_->slave ? impl_->slave->ResultsApplied(fire_ids) : 0;
    };
    hooks.status_json = [this] {
        return StatusJson();
    };
    hooks.not_ready_reason = [this] {
        return NotReadyReason();
    };
    hooks.metrics = [this] {
        return Metrics();
    };
    impl_->admin = std::make_unique<impl::NodeAdmin>(std::move(hooks));
    impl_->admin->AddRoutes(impl_->router);
}

}  // namespace sched::trigger
