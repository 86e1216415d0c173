#include "sched/trigger/master.hpp"

#include <algorithm>
#include <chrono>
#include <set>

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

Master::Master(std::shared_ptr<db::Database> db, lock::Fence& fence, const DbTime& time, MasterConfig config,
               MetricsRegistry& metrics, store::JobShard shard)
    : db_(std::move(db)),
      fence_(fence),
      time_(time),
      config_(std::move(config)),
      shard_(shard),
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
                        .Labels({})),
      scans_skipped_(metrics
                         .Counter("sched_master_scans_skipped_total",
                                  "Master scans skipped because a one-statement probe found no work waiting.")
                         .Labels({})) {
    for (auto policy : {cron::MisfirePolicy::kSkip, cron::MisfirePolicy::kFireOnceNow, cron::MisfirePolicy::kFireAll}) {
        misfire_skipped_.Labels({std::string(cron::MisfirePolicyName(policy))});  // known values start at 0
    }
    // The order is the contract of master.hpp: follow-ups after the sweeps that end fires, and
    // workflows after the follow-ups, so a step's retry exists before its run is judged. The
    // steps about the whole cluster (fires of dead slaves and executors, workflows, whose steps
    // are jobs of any shard) run in shard 0's scan: once, under one lease.
    steps_.push_back(std::make_unique<impl::DueJobsStep>(config_, *schedules_));
    steps_.push_back(std::make_unique<impl::BackfillsStep>());
    if (shard_.First()) {
        steps_.push_back(std::make_unique<impl::OrphansStep>(config_));
        steps_.push_back(std::make_unique<impl::RunningSweepStep>(config_));
    }
    steps_.push_back(std::make_unique<impl::FollowupsStep>(config_, *schedules_));
    if (shard_.First()) steps_.push_back(std::make_unique<impl::WorkflowsStep>(config_));
}

Master::~Master() = default;

Micros Master::SleepAfter(const ScanReport& report) const {
    // A full batch means more due jobs are waiting: scan again at once.
    if (report.due_jobs >= config_.batch) return Micros{0};
    // Jobs due within the lookahead were planned already; the next one to plan becomes due at
    // earliest - lookahead.
    return SleepUntilWithin(report.earliest_due_ms, Ms(config_.lookahead), config_.scan_interval);
}

// Not sooner than scan-min-interval: with start times spread over the second a job enters the
// lookahead every few ms, and a scan per job (227 scans/s at 300 fires/s in the cluster
// benchmark) costs more than planning it some ms later, still about `lookahead` ahead of its
// time. Not later than `longest`: after a scan, scan-interval (the next asks the probe); between
// probes, probe-interval (a lost wake is found within it).
Micros Master::SleepUntilWithin(std::optional<std::int64_t> earliest_due_ms, std::int64_t horizon_ms,
                                Micros longest) const {
    if (!earliest_due_ms) return longest;
    const std::int64_t wake_in_ms = *earliest_due_ms - horizon_ms - time_.NowMs();
    const Micros floor = std::min(config_.scan_min_interval, longest);
    return std::clamp<Micros>(std::chrono::milliseconds(wake_in_ms), floor, longest);
}

namespace {

// Whether a scan did nothing but plan due jobs (their fires, misfires, calendar skips and
// completions, and the fires' assignment). Any other change may have left work for the next
// scan (a retry due soon, a workflow step whose parent just ended), so the next is not skipped;
// planning leaves none: every due job was advanced past the lookahead.
bool OnlyPlanned(const ScanReport& r) {
    return r.backfill_fires == 0 && r.backfills_completed == 0 && r.orphans_assigned == 0 && r.lost == 0 &&
           r.retries == 0 && r.followups == 0 && r.running_lost == 0 && r.running_timed_out == 0 &&
           r.workflow_runs_created == 0 && r.workflow_runs_overlapped == 0 && r.workflow_runs_ended == 0 &&
           r.workflow_runs_timed_out == 0 && r.workflow_steps_started == 0 && r.workflow_steps_skipped == 0;
}

// Whether a scan changed anything at all.
bool ChangedNothing(const ScanReport& r) {
    return OnlyPlanned(r) && r.due_jobs == 0 && r.fires_created == 0 && r.misfire_skipped.empty() &&
           r.calendar_skipped == 0 && r.jobs_completed == 0 && r.assigned.empty();
}

}  // namespace

std::optional<Micros> Master::Quiet(std::int64_t epoch) {
    prompted_.reset();
    if (config_.scan_idle_interval <= Micros{0} || !(last_scan_quiet_ || last_scan_planned_) || !last_full_scan_ms_ ||
        epoch != last_scan_epoch_) {
        return std::nullopt;
    }
    const std::int64_t now = time_.NowMs();
    if (now - *last_full_scan_ms_ >= Ms(config_.scan_idle_interval)) return std::nullopt;
    auto probe = store::ReadScanProbe(*db_, shard_, Ms(config_.node_ttl));
    if (!probe.ok()) return std::nullopt;
    // Jobs due within the lookahead were planned by the last scan; the next plans once the
    // planned window has shrunk by lookahead-refill.
    const std::int64_t horizon = now + Ms(config_.lookahead) - Ms(config_.lookahead_refill);
    const auto due = [horizon](const std::optional<std::int64_t>& t) {
        return t && *t <= horizon;
    };
    // Another set of nodes: a full scan moves or judges their fires.
    if (probe->fresh != fresh_nodes_ || probe->live != live_nodes_) return std::nullopt;
    if (due(probe->earliest_job_due) || due(probe->earliest_workflow_due) || probe->followups || probe->unassigned ||
        probe->backfills || probe->unstarted_runs) {
        // The scan runs the steps for what was found (Scan): under spread load the due jobs
        // alone, about one scan per lookahead-refill, without the reads of the steps that have
        // nothing to do (orphans, follow-ups, backfills, workflows: six statements a scan).
        prompted_ = *probe;
        prompted_horizon_ms_ = horizon;
        return std::nullopt;
    }
    scans_skipped_.Inc();
    ScanReport earliest;
    earliest.earliest_due_ms = probe->earliest_job_due;
    if (probe->earliest_workflow_due &&
        (!earliest.earliest_due_ms || *probe->earliest_workflow_due < *earliest.earliest_due_ms)) {
        earliest.earliest_due_ms = probe->earliest_workflow_due;
    }
    // The probe finds a job once it is due within lookahead - lookahead-refill: woken as it enters
    // the lookahead (every scan-min-interval under a spread load, where a job enters it every few
    // ms), it asked twice as often and found nothing. Not past the next full scan either.
    //
    // Nor past the moment the first live node's heartbeat runs out (a threshold by the database
    // clock, which the probe measured): its pending fires then go to the others at once, as when
    // the probe ran every scan-interval. Everything else that makes work (the web module's writes,
    // results and slave ends that leave a follow-up) wakes the master, so the probe waits up to
    // probe-interval for a wake that was lost.
    const Micros until_full = std::chrono::milliseconds(*last_full_scan_ms_ + Ms(config_.scan_idle_interval) - now);
    const Micros longest = std::max(config_.probe_interval, config_.scan_interval);
    Micros sleep = std::min(
        SleepUntilWithin(earliest.earliest_due_ms, Ms(config_.lookahead) - Ms(config_.lookahead_refill), longest),
        until_full);
    if (probe->node_change_in_ms) {
        // A millisecond past the threshold, so that the node has left the set when the next probe looks.
        sleep = std::min<Micros>(sleep, std::chrono::milliseconds(*probe->node_change_in_ms + 1));
    }
    return std::max(sleep, Micros{0});
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
    //
    // One read for both: the nodes alive by the full node-ttl, of which those whose heartbeat
    // (a database-clock time) is within node-ttl / 2 of the database clock now get fires.
    //
    // A term's first node-ttl judges no slave dead: a term often begins right after the database
    // came back from an outage (the last master's lease ran out during it), when no node could
    // write a heartbeat for a while; the slaves' first beats after it may land after this
    // master's first scan, and their dispatching fires, in flight, would be declared lost (and
    // their jobs' seats held for the lost runs). Pending fires still move at once; a dead
    // slave's dispatches are judged by the first full scan after it (within scan-idle-interval).
    if (epoch != term_epoch_) {
        term_epoch_ = epoch;
        term_started_ms_ = now;
        judged_term_ = false;
    }
    const bool judges_slaves = now - term_started_ms_ >= Ms(config_.node_ttl);
    // Prompted by a probe: only the steps it found work for, unless this is the term's first
    // scan that may judge slaves (a full one does, at once).
    std::optional<impl::ProbedWork> work;
    if (auto probe = std::exchange(prompted_, std::nullopt); probe && (!judges_slaves || judged_term_)) {
        const auto due = [horizon = prompted_horizon_ms_](const std::optional<std::int64_t>& t) {
            return t && *t <= horizon;
        };
        work = impl::ProbedWork{.jobs_due = due(probe->earliest_job_due),
                                .workflows_due = due(probe->earliest_workflow_due),
                                .followups = probe->followups,
                                .unassigned = probe->unassigned,
                                .backfills = probe->backfills,
                                .unstarted_runs = probe->unstarted_runs};
    }
    store::TriggerNodeRepository nodes(*db_);
    auto alive = nodes.ListLive(Ms(config_.node_ttl));
    if (!alive.ok()) return alive.status();
    std::vector<std::string> alive_ids;
    std::vector<SlaveWeight> weights;
    std::map<std::string, std::string> addresses;
    std::set<std::string> planned_nodes;
    store::NodeSetPrint fresh;
    store::NodeSetPrint live;
    for (const auto& n : *alive) {
        alive_ids.push_back(n.node_id);
        ++live.count;
        live.started_sum += n.started_at_ms;
        if (n.last_heartbeat_ms <= now - Ms(config_.node_ttl) / 2) continue;
        weights.push_back({n.node_id, n.capacity});
        addresses[n.node_id] = n.address;
        if (n.sent_through) planned_nodes.insert(n.node_id);
        ++fresh.count;
        fresh.started_sum += n.started_at_ms;
    }

    auto report = fence_.RunFenced(epoch, [&](soci::session& s) -> Result<ScanReport> {
        ScanReport r;
        r.now_ms = now;
        r.node_addresses = addresses;
        Assigner assigner(weights);
        impl::ScanContext ctx(s, db_->dialect(), epoch, now, assigner, alive_ids, Ms(config_.executor_ttl), r);
        ctx.shard = shard_;
        ctx.judges_slaves = judges_slaves;
        ctx.planned_nodes = planned_nodes;
        ctx.lease_base = store::ShardLeaseBase(fence_.name(), shard_.index);
        for (const auto& step : steps_) {
            if (!work || step->Wanted(*work)) step->Run(ctx);
        }
        r.full = !work;
        const auto jobs_due = store::JobRepository::EarliestDue(s, shard_);
        if (jobs_due && (!r.earliest_due_ms || *jobs_due < *r.earliest_due_ms)) r.earliest_due_ms = jobs_due;
        return r;
    });
    last_scan_quiet_ = report.ok() && ChangedNothing(*report);
    last_scan_planned_ = report.ok() && OnlyPlanned(*report) && report->due_jobs < config_.batch;
    if (report.ok()) {
        PushFireSpans(report->spans);  // committed: the fires they name exist
        if (report->full) {
            last_full_scan_ms_ = now;
            judged_term_ = judged_term_ || judges_slaves;
        }
        last_scan_epoch_ = epoch;
        fresh_nodes_ = fresh;
        live_nodes_ = live;
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
