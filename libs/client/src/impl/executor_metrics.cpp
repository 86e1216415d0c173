#include "impl/executor_metrics.hpp"

namespace sched::client::impl {

namespace {

// The outcomes a result reports; each handler's series start at 0 for all of them so that a
// rate() over a handler that never failed is 0, not absent.
constexpr const char* kOutcomes[] = {"succeeded", "failed", "timeout", "killed"};

// Handlers run from milliseconds to hours: the buckets span both.
const std::vector<double> kDurationBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,  1,
                                              2.5,   5,    10,    30,   60,  300,  1800, 3600};
// A start's delay is a few ms when all is well; seconds mean the workers are all busy.
const std::vector<double> kStartDelayBuckets = {0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5};

}  // namespace

ExecutorMetrics::ExecutorMetrics(MetricsRegistry& registry, const std::string& app,
                                 const std::vector<std::string>& handlers, std::function<ExecutorStats()> stats,
                                 std::function<http::ServerStats()> server)
    : runs_(registry.Counter("sched_client_runs_total", "Runs ended, by handler and outcome.", {"handler", "outcome"})),
      duration_(registry.Histogram("sched_client_run_duration_seconds",
                                   "Time the handler ran (runs that never started are not observed).", {"handler"},
                                   kDurationBuckets)),
      start_delay_(registry
                       .Histogram("sched_client_run_start_delay_seconds",
                                  "Time from a run being handed to the workers (its hold over, or admitted, or "
                                  "launched when its job's running fire ended) to its handler's start: the "
                                  "executor's own delay, its workers busy or its process short of CPU.",
                                  {}, kStartDelayBuckets)
                       .Labels({})) {
    for (const auto& h : handlers) {
        for (const char* outcome : kOutcomes) runs_.Labels({h, outcome});
        duration_.Labels({h});
    }
    using Kind = MetricsRegistry::Kind;
    // The app is a label of one info series rather than of every series: the scrape target
    // already identifies the instance, and a join adds the app where a query wants it.
    registry.Gauge("sched_client_info", "1, labelled with the executor's app.", {"app"}).Labels({app}).Set(1);
    const auto one = [&](const std::string& name, const std::string& help, Kind kind,
                         const std::function<double(const ExecutorStats&)>& pick) {
        registry.Observed(name, help, kind, {}, [stats, pick] {
            return std::vector<ObservedSample>{{{}, pick(stats())}};
        });
    };
    one("sched_client_runs_accepted_total", "Runs accepted (202), duplicates excluded.", Kind::kCounter,
        [](const ExecutorStats& s) { return static_cast<double>(s.accepted); });
    registry.Observed("sched_client_runs_refused_total",
                      "Run requests not accepted, by reason (duplicate: answered 202 and ignored).", Kind::kCounter,
                      {"reason"}, [stats] {
                          const ExecutorStats s = stats();
                          return std::vector<ObservedSample>{
                              {{"duplicate"}, static_cast<double>(s.duplicates)},
                              {{"stale_epoch"}, static_cast<double>(s.refused_stale_epoch)},
                              {{"busy"}, static_cast<double>(s.refused_busy)},
                              {{"capacity"}, static_cast<double>(s.refused_capacity)},
                              {{"unsigned"}, static_cast<double>(s.refused_unsigned)}};
                      });
    one("sched_client_runs_in_flight", "Accepted runs not finished (running and queued).", Kind::kGauge,
        [](const ExecutorStats& s) { return static_cast<double>(s.in_flight); });
    one("sched_client_results_queued", "Results not yet delivered: in memory and in the spool file.", Kind::kGauge,
        [](const ExecutorStats& s) { return static_cast<double>(s.results_queued + s.spool_pending); });
    one("sched_client_results_spool_pending", "Results in the spool file, not yet delivered.", Kind::kGauge,
        [](const ExecutorStats& s) { return static_cast<double>(s.spool_pending); });
    one("sched_client_results_delivered_total", "Results acknowledged by a web endpoint.", Kind::kCounter,
        [](const ExecutorStats& s) { return static_cast<double>(s.results_delivered); });
    one("sched_client_results_spooled_total", "Results written to the spool file while no web endpoint answered.",
        Kind::kCounter, [](const ExecutorStats& s) { return static_cast<double>(s.results_spooled); });
    one("sched_client_callback_failures_total", "Result batches no web endpoint accepted (each retried later).",
        Kind::kCounter, [](const ExecutorStats& s) { return static_cast<double>(s.callback_failures); });
    registry.Observed("sched_client_heartbeats_total", "Heartbeats, by whether a web endpoint acknowledged them.",
                      Kind::kCounter, {"outcome"}, [stats] {
                          const ExecutorStats s = stats();
                          return std::vector<ObservedSample>{{{"ok"}, static_cast<double>(s.heartbeats_sent)},
                                                             {{"failed"}, static_cast<double>(s.heartbeats_failed)}};
                      });
    one("sched_client_signing_keys", "Signing keys held from the last heartbeat answer (0: every call refused).",
        Kind::kGauge, [](const ExecutorStats& s) { return static_cast<double>(s.signing_keys); });
    one("sched_client_clock_offset_seconds", "Cluster clock minus this host's clock, as last measured.", Kind::kGauge,
        [](const ExecutorStats& s) { return static_cast<double>(s.clock_offset_ms) / 1e3; });
    http::ExportServerStats(registry, "sched_client_http", std::move(server));
    registry.AddProcessMetrics();
}

void ExecutorMetrics::RunStarted(double seconds) {
    start_delay_.Observe(seconds);
}

void ExecutorMetrics::RunEnded(const std::string& handler, const std::string& status, double seconds) {
    runs_.Labels({handler, status}).Inc();
    if (seconds >= 0) duration_.Labels({handler}).Observe(seconds);
}

}  // namespace sched::client::impl
