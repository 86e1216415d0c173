#include "sched/trigger/master.hpp"

#include <algorithm>
#include <chrono>

#include "scan/due_jobs_step.hpp"
#include "scan/followups_step.hpp"
#include "scan/orphans_step.hpp"
#include "scan/planner_steps.hpp"
#include "scan/running_sweep_step.hpp"
#include "scan/scan_step.hpp"
#include "scan/schedule_cache.hpp"
#include "sched/cron/misfire.hpp"
#include "sched/store/job.hpp"
#include "sched/store/registry.hpp"
#include "sched/trigger/assigner.hpp"

namespace sched::trigger {

using impl::Ms;

MasterConfig MasterConfig::FromYaml(const ConfigNode& node) {
    MasterConfig c;
    using std::chrono::milliseconds;
    using std::chrono::seconds;
    c.scan_interval = node.Duration("scan-interval", c.scan_interval, milliseconds(1), seconds(10));
    c.scan_min_interval = node.Duration("scan-min-interval", c.scan_min_interval, Micros{0}, seconds(10));
    c.lookahead = node.Duration("lookahead", c.lookahead, Micros{0}, std::chrono::minutes(5));
    c.batch = static_cast<int>(node.Int("batch", c.batch, 1, 100000));
    c.misfire_threshold = node.Duration("misfire-threshold", c.misfire_threshold, Micros{0}, std::chrono::hours(24));
    c.fire_all_cap = static_cast<int>(node.Int("fire-all-cap", c.fire_all_cap, 1, 10000));
    c.max_fires_per_job = static_cast<int>(node.Int("max-fires-per-job", c.max_fires_per_job, 1, 100000));
    c.node_ttl = node.Duration("node-ttl", c.node_ttl, milliseconds(100), std::chrono::minutes(10));
    c.executor_ttl = node.Duration("executor-ttl", c.executor_ttl, milliseconds(100), std::chrono::hours(1));
    c.retry_backoff_cap =
        node.Duration("retry-backoff-cap", c.retry_backoff_cap, milliseconds(1), std::chrono::hours(24));
    c.running_sweep = node.Duration("running-sweep", c.running_sweep, milliseconds(100), std::chrono::hours(1));
    c.history_retention =
        node.Duration("history-retention", c.history_retention, seconds(1), std::chrono::hours(24 * 3650));
    c.history_max_per_job = static_cast<int>(node.Int("history-max-per-job", c.history_max_per_job, 1, 10000000));
    c.purge_interval = node.Duration("purge-interval", c.purge_interval, milliseconds(100), std::chrono::hours(1));
    c.purge_batch = static_cast<int>(node.Int("purge-batch", c.purge_batch, 1, 10000));
    c.alert_interval = node.Duration("alert-interval", c.alert_interval, milliseconds(100), std::chrono::hours(1));
    c.alert_batch = static_cast<int>(node.Int("alert-batch", c.alert_batch, 1, 10000));
    c.alert_lookback = node.Duration("alert-lookback", c.alert_lookback, Micros{0}, std::chrono::hours(24));
    c.alert_settle = node.Duration("alert-settle", c.alert_settle, Micros{0}, std::chrono::minutes(10));
    c.alert_timeout = node.Duration("alert-timeout", c.alert_timeout, milliseconds(100), seconds(60));
    c.alert_max_attempts = static_cast<int>(node.Int("alert-max-attempts", c.alert_max_attempts, 1, 100));
    c.alert_backoff = node.Duration("alert-backoff", c.alert_backoff, milliseconds(10), std::chrono::hours(1));
    c.alert_backoff_max =
        node.Duration("alert-backoff-max", c.alert_backoff_max, c.alert_backoff, std::chrono::hours(24));
    c.cluster_url = node.String("cluster-url", c.cluster_url);
    if (c.cluster_url.size() > 2048) throw ConfigError("scheduler.cluster-url", "at most 2048 characters");
    return c;
}

Master::Master(std::shared_ptr<db::Database> db, lock::Fence& fence, const DbTime& time, MasterConfig config,
               MetricsRegistry& metrics)
    : db_(std::move(db)),
      fence_(fence),
      time_(time),
      config_(std::move(config)),
      schedules_(std::make_unique<impl::ScheduleCache>()),
      fires_created_(metrics.Counter("sched_master_fires_created_total", "Fire rows created by the master.", {"kind"})
                         .Labels({"all"})),
      retries_created_(
          metrics.Counter("sched_master_retries_total", "Retry fire rows created by the master.").Labels({})),
      fires_lost_(
          metrics.Counter("sched_master_fires_lost_total", "Dispatching fires of dead slaves marked lost.").Labels({})),
      running_lost_(metrics
                        .Counter("sched_master_running_swept_total",
                                 "Running fires ended by the master's sweep, by outcome.", {"outcome"})
                        .Labels({"lost"})),
      running_timed_out_(metrics.Counter("sched_master_running_swept_total", "", {"outcome"}).Labels({"timeout"})),
      misfire_skipped_(metrics.Counter("sched_master_misfire_skipped_total",
                                       "Scheduled times that got no fire of their own, by the job's misfire policy "
                                       "(each is recorded in a ledger row of reason misfire).",
                                       {"policy"})),
      scans_(metrics.Counter("sched_master_scans_total", "Master scans committed.").Labels({})),
      scan_seconds_(metrics
                        .Histogram("sched_master_scan_seconds", "Duration of one master scan transaction.", {},
                                   {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1})
                        .Labels({})) {
    for (auto policy : {cron::MisfirePolicy::kSkip, cron::MisfirePolicy::kFireOnceNow, cron::MisfirePolicy::kFireAll}) {
        misfire_skipped_.Labels({std::string(cron::MisfirePolicyName(policy))});  // known values start at 0
    }
    // The order is the contract of master.hpp: follow-ups after the sweeps that end fires, and
    // workflows after the follow-ups, so a step's retry exists before its run is judged.
    steps_.push_back(std::make_unique<impl::DueJobsStep>(config_, *schedules_));
    steps_.push_back(std::make_unique<impl::BackfillsStep>());
    steps_.push_back(std::make_unique<impl::OrphansStep>(config_));
    steps_.push_back(std::make_unique<impl::RunningSweepStep>(config_));
    steps_.push_back(std::make_unique<impl::FollowupsStep>(config_, *schedules_));
    steps_.push_back(std::make_unique<impl::WorkflowsStep>(config_));
}

Master::~Master() = default;

Micros Master::SleepAfter(const ScanReport& report) const {
    // A full batch means more due jobs are waiting: scan again at once.
    if (report.due_jobs >= config_.batch) return Micros{0};
    if (!report.earliest_due_ms) return config_.scan_interval;
    // Jobs due within the lookahead were planned already; the next one to plan becomes due at
    // earliest - lookahead. Not sooner than scan-min-interval: with start times spread over the
    // second a job enters the lookahead every few ms, and a scan per job (227 scans/s at 300
    // fires/s in the cluster benchmark) costs more than planning it some ms later, still about
    // `lookahead` ahead of its time.
    const std::int64_t wake_in_ms = *report.earliest_due_ms - Ms(config_.lookahead) - time_.NowMs();
    const Micros floor = std::min(config_.scan_min_interval, config_.scan_interval);
    return std::clamp<Micros>(std::chrono::milliseconds(wake_in_ms), floor, config_.scan_interval);
}

Result<ScanReport> Master::Scan(std::int64_t epoch) {
    const auto started = std::chrono::steady_clock::now();
    const std::int64_t now = time_.NowMs();
    // Live slaves are read outside the fenced transaction: the choice only spreads load, and a
    // slave that dies right after is handled as an orphan by a later scan.
    //
    // Two thresholds. Fires are given (new ones, and pending ones taken back) only to nodes
    // whose heartbeat is within node-ttl / 2 - a healthy node beats at least twice per node-ttl,
    // so it always is - which moves a dead node's queue after half the TTL: after a kill -9 of
    // the master that is before the new master's first scan (lease ttl 3 s > 2.5 s), so its
    // planned fires do not wait for the full node-ttl. Moving a pending fire is always safe (the
    // claim is a CAS on the status). Declaring `dispatching` fires lost waits for the full
    // node-ttl: a run may be in flight there.
    store::TriggerNodeRepository nodes(*db_);
    auto live = nodes.ListLive(Ms(config_.node_ttl) / 2);
    if (!live.ok()) return live.status();
    auto alive = nodes.ListLive(Ms(config_.node_ttl));
    if (!alive.ok()) return alive.status();
    std::vector<std::string> alive_ids;
    for (const auto& n : *alive) alive_ids.push_back(n.node_id);
    std::vector<SlaveWeight> weights;
    std::map<std::string, std::string> addresses;
    for (const auto& n : *live) {
        weights.push_back({n.node_id, n.capacity});
        addresses[n.node_id] = n.address;
    }

    auto report = fence_.RunFenced(epoch, [&](soci::session& s) -> Result<ScanReport> {
        ScanReport r;
        r.now_ms = now;
        r.node_addresses = addresses;
        Assigner assigner(weights);
        impl::ScanContext ctx(s, db_->dialect(), epoch, now, assigner, alive_ids, Ms(config_.executor_ttl), r);
        for (const auto& step : steps_) step->Run(ctx);
        const auto jobs_due = store::JobRepository::EarliestDue(s);
        if (jobs_due && (!r.earliest_due_ms || *jobs_due < *r.earliest_due_ms)) r.earliest_due_ms = jobs_due;
        return r;
    });
    if (report.ok()) {
        scans_.Inc();
        fires_created_.Inc(report->fires_created + report->backfill_fires);
        retries_created_.Inc(report->retries);
        fires_lost_.Inc(report->lost);
        running_lost_.Inc(report->running_lost);
        running_timed_out_.Inc(report->running_timed_out);
        for (const auto& [policy, n] : report->misfire_skipped)
            misfire_skipped_.Labels({policy}).Inc(static_cast<double>(n));
        scan_seconds_.Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    }
    return report;
}

}  // namespace sched::trigger
