#include "sched/trigger/master.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include <spdlog/spdlog.h>

#include "sched/store/fire.hpp"
#include "sched/store/job.hpp"
#include "sched/store/registry.hpp"
#include "sched/trigger/assigner.hpp"
#include "sched/trigger/backoff.hpp"
#include "sched/trigger/fire_planner.hpp"

namespace sched::trigger {

namespace {

std::int64_t Ms(Micros d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// The try a fire is: its attempt, except for a workflow step's fire, whose attempt is 1000 x the
// run's generation + the try (docs/workflows.md "Step fires"). Other fires stay below 1000
// (retry_max is at most 100), so the remainder is their attempt.
int TryOf(const store::Fire& fire) {
    return fire.attempt % 1000;
}

bool ShouldRetry(const store::Fire& fire, const store::Job& job) {
    switch (fire.status) {
        case store::FireStatus::kFailed:
        case store::FireStatus::kTimeout:
            return TryOf(fire) < job.retry_max;
        // A lost fire may have run: only jobs that accept a second run (at-least-once) retry it,
        // and those always at least once, whatever retry_max says: `at_least_once` with the
        // default retry_max 0 would otherwise promise a run it never makes.
        case store::FireStatus::kLost:
            return job.at_least_once && TryOf(fire) < std::max(job.retry_max, 1);
        default:
            return false;
    }
}

// The jobs of `fires` that still exist, by id, each read once and together (JobRepository::FindMany:
// one statement per 500 jobs): a scan looks at up to `batch` fires, and a lookup per job was up
// to `batch` round trips inside the scan's transaction (the running sweep's, issue 20).
std::map<std::int64_t, store::Job> JobsOf(soci::session& s, const std::vector<store::Fire>& fires) {
    std::set<std::int64_t> ids;
    for (const auto& fire : fires) ids.insert(fire.job_id);
    std::map<std::int64_t, store::Job> jobs;
    for (auto& job : store::JobRepository::FindMany(s, std::vector<std::int64_t>(ids.begin(), ids.end()))) {
        const std::int64_t id = job.id;
        jobs.emplace(id, std::move(job));
    }
    return jobs;
}

std::string SkippedMessage(const SkippedTimes& skipped, cron::MisfirePolicy policy, std::int64_t threshold_ms,
                           std::int64_t now_ms) {
    const std::string count = (skipped.count_is_lower_bound ? "at least " : "") + std::to_string(skipped.count);
    const std::string range = skipped.first_ms == skipped.last_ms ? "at " + std::to_string(skipped.first_ms)
                                                                  : "from " + std::to_string(skipped.first_ms) +
                                                                        " to " + std::to_string(skipped.last_ms);
    if (policy == cron::MisfirePolicy::kFireOnceNow) {
        return "misfire: " + count + " scheduled time(s) " + range + " folded into one fire at " +
               std::to_string(now_ms) + " (policy fire-once-now)";
    }
    return "misfire: " + count + " scheduled time(s) " + range + " more than " + std::to_string(threshold_ms) +
           " ms late got no fire (policy " + std::string(cron::MisfirePolicyName(policy)) + ")";
}

}  // namespace

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
      workflows_({.lookahead_ms = Ms(config_.lookahead),
                  .batch = std::min(config_.batch, 100),
                  .sweep_ms = Ms(config_.running_sweep),
                  .misfire = {.threshold_ms = Ms(config_.misfire_threshold),
                              .fire_all_cap = static_cast<std::size_t>(config_.fire_all_cap)},
                  .max_runs_per_workflow = 100}),
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
}

const Master::CachedSchedule& Master::ScheduleFor(const store::Job& job) {
    const std::string key = std::string(ScheduleTypeName(job.schedule_type)) + '\n' + job.schedule_expr + '\n' +
                            job.time_zone + '\n' + std::to_string(job.jitter_ms) + '\n' + job.dst_gap + '\n' +
                            job.dst_overlap;
    auto& entry = schedules_[job.id];
    if (entry.key != key || (!entry.schedule && entry.error.empty())) {
        entry.key = key;
        entry.schedule.reset();
        entry.error.clear();
        const auto options = cron::ParseScheduleOptions(job.id, job.jitter_ms, job.dst_gap, job.dst_overlap);
        auto made = options.ok()
                        ? cron::Schedule::Make(job.schedule_type, job.schedule_expr, job.time_zone, nullptr, *options)
                        : Result<cron::Schedule>(options.status());
        if (made.ok()) {
            entry.schedule = *made;
        } else {
            entry.error = made.status().message();
        }
    }
    return entry;
}

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
        const auto live_ids = assigner.NodeIds();
        const auto assign = [&](std::int64_t fire_id, const store::Fire& fire) {
            if (fire.assigned_node)
                r.assigned[*fire.assigned_node].push_back({.id = fire_id, .due_at = store::StoredDueAt(fire)});
        };

        // 1. Due jobs, as a batch: plan every job in memory, advance their schedules with one
        // UPDATE, then insert the fires of the jobs that advanced with multi-row inserts.
        const auto due = store::JobRepository::SelectDue(s, now + Ms(config_.lookahead), config_.batch);
        r.due_jobs = static_cast<int>(due.size());
        std::vector<store::ScheduleAdvance> advances;
        std::vector<JobPlan> plans;  // aligned with advances; empty for a parked job
        std::vector<BoundedExtras> extras(due.size());
        advances.reserve(due.size());
        plans.reserve(due.size());
        std::set<std::string> calendar_names;
        for (const auto& job : due) {
            if (!job.calendar.empty()) calendar_names.insert(job.calendar);
        }
        calendars_.Refresh(s, calendar_names);
        for (const auto& job : due) {
            const auto& cached = ScheduleFor(job);
            if (!cached.schedule) {
                // Stored before a validation rule existed, or its zone vanished from tzdata: it
                // can never fire, so park it (next_fire_time NULL) instead of rescanning it.
                spdlog::error("job {} ({}) has an invalid schedule and is parked: {}", job.id, job.name, cached.error);
                advances.push_back(
                    {.id = job.id, .expected_version = job.version, .expected_next = job.next_fire_time});
                plans.emplace_back();
                continue;
            }
            PlanOptions options;
            options.lookahead_ms = Ms(config_.lookahead);
            options.max_fires_per_job = static_cast<std::size_t>(config_.max_fires_per_job);
            options.misfire.threshold_ms = Ms(config_.misfire_threshold);
            options.misfire.fire_all_cap = static_cast<std::size_t>(config_.fire_all_cap);
            options.misfire.policy = job.misfire_policy;
            auto plan = !job.calendar.empty() || job.start_at || job.end_at || job.max_runs
                            ? PlanBounded(job, *cached.schedule, now, options, extras[plans.size()])
                            : PlanJobFires(*cached.schedule, *job.next_fire_time, now, options);
            advances.push_back({.id = job.id,
                                .expected_version = job.version,
                                .expected_next = job.next_fire_time,
                                .next_fire_time = plan.next_fire_time,
                                .last_fire_time = plan.fires.empty()
                                                      ? std::nullopt
                                                      : std::optional<std::int64_t>(plan.fires.back().scheduled_ms)});
            plans.push_back(std::move(plan));
        }
        // A CAS fails when the job was edited after it was read: its new schedule wins and the
        // next scan plans it afresh.
        const auto advanced = store::JobRepository::AdvanceMany(s, advances);
        // The ledger: a run of scheduled times the policy gave no fire of its own is one row
        // (status skipped, reason misfire, the range and count), written with the advance that
        // skipped them, so it exists exactly once.
        std::vector<store::Fire> ledger;
        for (std::size_t i = 0; i < due.size(); ++i) {
            if (!advanced[i] || !plans[i].skipped) continue;
            const auto& skipped = *plans[i].skipped;
            const auto policy = due[i].misfire_policy;
            store::Fire row;
            row.job_id = due[i].id;
            row.scheduled_time = skipped.first_ms;
            row.kind = store::FireKind::kMisfire;
            row.epoch = epoch;
            row.status = store::FireStatus::kSkipped;
            row.finished_at = now;
            row.reason = store::FireReason::kMisfire;
            row.skipped_until = skipped.last_ms;
            row.skipped_count = skipped.count;
            row.result_message = SkippedMessage(skipped, policy, Ms(config_.misfire_threshold), now);
            r.misfire_skipped[std::string(cron::MisfirePolicyName(policy))] += skipped.count;
            spdlog::warn("job {} ({}): {}", due[i].id, due[i].name, *row.result_message);
            ledger.push_back(std::move(row));
        }
        store::FireRepository::InsertLedgerRows(s, db_->dialect(), ledger);
        RecordBounded(s, epoch, now, due, advanced, plans, extras, r);
        std::vector<store::Fire> new_fires;
        // Live executor instances per app (sharding-broadcast), counted once per scan.
        std::map<std::string, int> executors_by_app;
        const auto count_live = [&](const std::string& app) {
            auto it = executors_by_app.find(app);
            if (it == executors_by_app.end()) {
                it = executors_by_app
                         .emplace(app, store::ExecutorRepository::CountLive(s, db_->dialect(), app,
                                                                            Ms(config_.executor_ttl)))
                         .first;
            }
            return it->second;
        };
        for (std::size_t i = 0; i < due.size(); ++i) {
            if (!advanced[i] || plans[i].fires.empty()) continue;
            const auto& job = due[i];
            const int shards = store::ShardsPerFire(job, [&] { return count_live(job.app); });
            for (const auto& planned : plans[i].fires) {
                for (int shard = 0; shard < shards; ++shard) {
                    store::Fire fire;
                    fire.job_id = job.id;
                    fire.scheduled_time = planned.scheduled_ms;
                    fire.kind = planned.kind;
                    fire.shard_index = shard;
                    fire.shard_total = shards;
                    fire.epoch = epoch;
                    fire.assigned_node = assigner.Next();
                    new_fires.push_back(std::move(fire));
                }
            }
        }
        const auto stored = store::FireRepository::InsertManyIfAbsent(s, db_->dialect(), new_fires);
        for (std::size_t i = 0; i < new_fires.size(); ++i) {
            // Counted and notified: the rows as this scan wrote them (see StoredFire::as_written).
            if (!stored[i] || !stored[i]->as_written) continue;
            ++r.fires_created;
            assign(stored[i]->id, new_fires[i]);
        }

        // 1b. Backfills: their next fires, bounded per scan.
        {
            auto progress = backfills_.Advance(s, db_->dialect(), epoch, now, assigner, count_live);
            r.backfill_fires = progress.fires_created;
            r.backfills_completed = progress.completed;
            for (auto& [node, ids] : progress.assigned) {
                auto& to = r.assigned[node];
                to.insert(to.end(), ids.begin(), ids.end());
            }
        }

        // 2. Orphans. Without a live slave there is no one to give them to: leave them.
        if (!assigner.empty()) {
            // One UPDATE per target node, not one per fire.
            std::map<std::string, std::vector<std::int64_t>> orphans_by_node;
            std::map<std::int64_t, std::int64_t> orphan_due;  // id -> due_at, for the notices
            for (const auto& fire :
                 store::FireRepository::ListOrphans(s, live_ids, {store::FireStatus::kPending}, config_.batch)) {
                orphans_by_node[*assigner.Next()].push_back(fire.id);
                orphan_due[fire.id] = fire.due_at;
            }
            for (const auto& [node, ids] : orphans_by_node) {
                for (const std::int64_t id :
                     store::FireRepository::ReassignMany(s, ids, {store::FireStatus::kPending}, node)) {
                    ++r.orphans_assigned;
                    r.assigned[node].push_back({.id = id, .due_at = orphan_due.at(id)});
                }
            }
            for (const auto& fire :
                 store::FireRepository::ListOrphans(s, alive_ids, {store::FireStatus::kDispatching}, config_.batch)) {
                // Its slave died between claiming and recording the outcome: the run may or may
                // not have started, so the fire is lost, never silently re-sent.
                if (store::FireRepository::Transition(
                        s, fire.id, {store::FireStatus::kDispatching}, store::FireStatus::kLost,
                        {.finished_at = now,
                         .result_message = "slave " + fire.assigned_node.value_or("?") + " died while dispatching",
                         .reason = store::FireReason::kSlaveDied,
                         .followup = true}) == 1) {
                    ++r.lost;
                }
            }
        }

        // 2b. Running fires nobody will finish.
        if (now >= next_sweep_ms_) {
            next_sweep_ms_ = now + Ms(config_.running_sweep);
            SweepRunning(s, now, r);
        }

        // 3. Follow-ups of ended fires: first, in one statement, those after which nothing follows.
        r.followups += store::FireRepository::ClearTrivialFollowups(s);
        const auto followups = store::FireRepository::ListFollowups(s, config_.batch);
        std::vector<std::int64_t> followup_ids;
        followup_ids.reserve(followups.size());
        for (const auto& fire : followups) followup_ids.push_back(fire.id);
        store::FireRepository::ClearFollowups(s, followup_ids);
        // Fires of one job often end together (shards, a burst): the batch's jobs are read
        // together, each once. A row can be stale only by this loop's own fixed-delay advance,
        // whose CAS (from NULL) then simply loses for the job's second fire, as a fresh read would
        // skip it.
        const auto followup_jobs = JobsOf(s, followups);
        std::set<std::int64_t> ended_runs;  // workflow runs whose step fires ended (step 4)
        for (const auto& fire : followups) {
            ++r.followups;
            if (fire.workflow_run_id) ended_runs.insert(*fire.workflow_run_id);
            const auto found = followup_jobs.find(fire.job_id);
            if (found == followup_jobs.end()) continue;  // deleted since
            const store::Job* job = &found->second;
            if (ShouldRetry(fire, *job)) {
                store::Fire retry;
                retry.job_id = fire.job_id;
                retry.scheduled_time = fire.scheduled_time;
                // A workflow step's retry stays a step fire (its run reads it by kind).
                retry.kind =
                    fire.kind == store::FireKind::kWorkflow ? store::FireKind::kWorkflow : store::FireKind::kRetry;
                retry.attempt = fire.attempt + 1;
                retry.shard_index = fire.shard_index;
                retry.shard_total = fire.shard_total;
                retry.workflow_run_id = fire.workflow_run_id;
                retry.workflow_step = fire.workflow_step;
                retry.epoch = epoch;
                retry.due_at =
                    now + RetryDelayMs(job->retry_backoff_ms, TryOf(retry), Ms(config_.retry_backoff_cap), rng_);
                retry.assigned_node = assigner.Next();
                if (auto id = store::FireRepository::InsertIfAbsent(s, db_->dialect(), retry)) {
                    ++r.retries;
                    assign(*id, retry);
                }
                continue;
            }
            if (job->schedule_type == ScheduleType::kFixedDelay && job->enabled && !job->next_fire_time &&
                fire.kind != store::FireKind::kManual) {
                const auto& cached = ScheduleFor(*job);
                if (cached.schedule) {
                    const std::int64_t finished = fire.finished_at.value_or(now);
                    (void)store::JobRepository::AdvanceSchedule(s, job->id, job->version, std::nullopt,
                                                                cached.schedule->NextFireTime(finished, finished),
                                                                std::nullopt);
                }
            }
        }
        // 4. Workflows: after the follow-ups, so a step's retry exists before its run is judged.
        {
            auto progress = workflows_.Advance(s, db_->dialect(), epoch, now, assigner, ended_runs, count_live);
            r.workflow_runs_created = progress.runs_created;
            r.workflow_runs_overlapped = progress.runs_overlapped;
            r.workflow_runs_ended = progress.runs_ended;
            r.workflow_runs_timed_out = progress.runs_timed_out;
            r.workflow_steps_started = progress.steps_started;
            r.workflow_steps_skipped = progress.steps_skipped;
            for (auto& [node, ids] : progress.assigned) {
                auto& to = r.assigned[node];
                to.insert(to.end(), ids.begin(), ids.end());
            }
            r.earliest_due_ms = store::JobRepository::EarliestDue(s);
            if (progress.earliest_due_ms && (!r.earliest_due_ms || *progress.earliest_due_ms < *r.earliest_due_ms)) {
                r.earliest_due_ms = progress.earliest_due_ms;
            }
        }
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

JobPlan Master::PlanBounded(const store::Job& job, const cron::Schedule& schedule, std::int64_t now,
                            const PlanOptions& options, BoundedExtras& extras) {
    const cron::Calendar* calendar = nullptr;
    if (!job.calendar.empty()) {
        std::string error;
        calendar = calendars_.Find(job.calendar, &error);
        // The API refuses unknown calendars and deleting one in use, so this is a race or a damaged
        // row; the job fires without exclusions rather than silently not at all.
        if (!calendar) spdlog::error("job {} ({}): {}; planned without exclusions", job.id, job.name, error);
    }
    auto bounded = PlanBoundedJobFires(
        schedule, calendar,
        {.start_ms = job.start_at, .end_ms = job.end_at, .max_runs = job.max_runs, .planned_runs = job.planned_runs},
        *job.next_fire_time, now, options);
    extras.excluded = std::move(bounded.excluded);
    extras.end = bounded.end;
    extras.bounded = true;
    return std::move(bounded.plan);
}

void Master::RecordBounded(soci::session& s, std::int64_t epoch, std::int64_t now, const std::vector<store::Job>& due,
                           const std::vector<bool>& advanced, const std::vector<JobPlan>& plans,
                           const std::vector<BoundedExtras>& extras, ScanReport& r) {
    // Like the misfire rows: one row per run of excluded times, written with the advance that
    // moved the job past them, so it exists exactly once.
    std::vector<store::Fire> ledger;
    std::vector<store::JobRunsUpdate> runs;
    for (std::size_t i = 0; i < due.size(); ++i) {
        if (!advanced[i] || !extras[i].bounded) continue;
        const auto& job = due[i];
        for (const auto& run : extras[i].excluded) {
            store::Fire row;
            row.job_id = job.id;
            row.scheduled_time = run.first_ms;
            row.kind = store::FireKind::kSchedule;
            row.epoch = epoch;
            row.status = store::FireStatus::kSkipped;
            row.finished_at = now;
            row.reason = store::FireReason::kCalendar;
            row.skipped_until = run.last_ms;
            row.skipped_count = run.count;
            row.result_message = "calendar: " + std::to_string(run.count) + " scheduled time(s) " +
                                 (run.first_ms == run.last_ms
                                      ? "at " + std::to_string(run.first_ms)
                                      : "from " + std::to_string(run.first_ms) + " to " + std::to_string(run.last_ms)) +
                                 " in an excluded period of calendar \"" + job.calendar + "\" got no fire";
            r.calendar_skipped += run.count;
            ledger.push_back(std::move(row));
        }
        const auto planned = static_cast<std::int64_t>(plans[i].fires.size());
        if (extras[i].end || (job.max_runs && planned > 0)) {
            store::JobRunsUpdate u{.id = job.id, .runs = job.max_runs ? planned : 0};
            if (extras[i].end) {
                u.completed_at = now;
                u.completed_reason = std::string(JobEndName(*extras[i].end));
                ++r.jobs_completed;
                spdlog::info("job {} ({}) completed: {}", job.id, job.name, u.completed_reason);
            }
            runs.push_back(std::move(u));
        }
    }
    store::FireRepository::InsertLedgerRows(s, db_->dialect(), ledger);
    store::JobRepository::RecordRuns(s, runs);
}

void Master::SweepRunning(soci::session& s, std::int64_t now, ScanReport& r) {
    // A running fire normally ends by the executor's callback, or by its slave's timeout kill.
    // Neither comes when the executor process died (its heartbeat stops) or when the slave died
    // and the executor never answers: without this sweep such a fire would stay `running`
    // forever and a retry policy would never see it (XXL-JOB's "result lost" sweep does the same
    // for an offline executor). Ending it is a CAS from `running`, so a late callback and the
    // sweep produce one outcome.
    const auto fires = store::FireRepository::ListRunning(s, sweep_after_scheduled_, sweep_after_id_, config_.batch);
    if (static_cast<int>(fires.size()) < config_.batch) {
        sweep_after_scheduled_ = -1;  // the end was reached: start over next time
        sweep_after_id_ = 0;
    } else {
        sweep_after_scheduled_ = fires.back().scheduled_time;
        sweep_after_id_ = fires.back().id;
    }
    if (fires.empty()) return;
    const auto live = store::ExecutorRepository::LiveAddresses(s, db_->dialect(), Ms(config_.executor_ttl));
    const auto jobs = JobsOf(s, fires);
    for (const auto& fire : fires) {
        const std::int64_t since = fire.started_at.value_or(fire.dispatched_at.value_or(fire.due_at));
        const auto found = jobs.find(fire.job_id);
        const store::Job* job = found == jobs.end() ? nullptr : &found->second;  // null: deleted since
        if (job && job->timeout_ms > 0 && now > since + job->timeout_ms + Ms(config_.node_ttl)) {
            const int moved = store::FireRepository::Transition(
                s, fire.id, {store::FireStatus::kRunning}, store::FireStatus::kTimeout,
                {.finished_at = now,
                 .result_message = "no result within the timeout (" + std::to_string(job->timeout_ms) +
                                   " ms) and none recorded by slave " + fire.assigned_node.value_or("?") +
                                   "; the run may still be going on at " + fire.executor_address.value_or("?"),
                 .reason = store::FireReason::kNoResult,
                 .followup = true});
            r.running_timed_out += moved;
            continue;
        }
        // An empty registry means nobody's heartbeat arrives: the registry path failed, not
        // every executor at once, so nothing is concluded from it.
        if (live.empty() || !fire.executor_address || live.contains(*fire.executor_address)) continue;
        if (now <= fire.dispatched_at.value_or(fire.due_at) + Ms(config_.executor_ttl)) continue;
        const int moved =
            store::FireRepository::Transition(s, fire.id, {store::FireStatus::kRunning}, store::FireStatus::kLost,
                                              {.finished_at = now,
                                               .result_message = "executor " + *fire.executor_address +
                                                                 " stopped heartbeating while the fire was running",
                                               .reason = store::FireReason::kExecutorGone,
                                               .followup = true});
        r.running_lost += moved;
    }
    if (r.running_lost + r.running_timed_out > 0) {
        spdlog::warn("master sweep: {} running fires lost (executor gone), {} timed out without a result",
                     r.running_lost, r.running_timed_out);
    }
}

}  // namespace sched::trigger
