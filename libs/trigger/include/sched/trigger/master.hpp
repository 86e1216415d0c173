#pragma once

/// The master's work, one scan at a time, while this node holds the lease.
///
/// With `scheduler.shards: K` > 1 there is one Master per shard of the job space
/// (store::JobShard: jobs by id % K), each scanning under its own shard's lease and epoch: steps
/// 1, 1b and 3 see only the shard's jobs (step 3: their fires; shard 0 also every workflow
/// step's fire), and steps 2, 2b and 4, which concern the whole cluster, run in shard 0 only.
/// With one shard every step sees everything, as described below.
///
/// Scan(epoch) runs ONE fenced transaction (lock::Fence::RunFenced), so every write of a scan
/// lands only if this node still holds the lease at `epoch`. Inside it the steps run in order,
/// each a type of its own (src/scan/*_step.hpp):
///   1. due jobs (enabled, next_fire_time <= now + lookahead; index-served, batch-limited):
///      plan their fires (PlanJobFires: misfire policy + lookahead), advance next_fire_time by
///      CAS, insert the fire rows (insert-if-absent on the unique key), each assigned to a live
///      slave by capacity; sharding-broadcast makes one fire per live executor instance. The
///      work is batched: every due job is planned in memory first, then one UPDATE advances the
///      batch's schedules (JobRepository::AdvanceMany), the fires of the jobs whose CAS won go in
///      with multi-row inserts that return their rows on MariaDB (elsewhere the ids are read back
///      by key in buckets of jobs due within 5 s of each other: FireRepository::InsertManyIfAbsent);
///   1b. backfills (BackfillAdvancer): up to 20 running backfills per scan each get their next
///      fires (kind backfill) within their overlap limit, assigned like the fires of step 1;
///   2. orphans: pending fires with no live slave (manual triggers, retries, fires of slaves
///      silent for node-ttl / 2) are assigned, with one UPDATE per target node; dispatching
///      fires of slaves silent for node-ttl become `lost` (not in the term's first node-ttl);
///   2b. every `running-sweep`, running fires nobody will finish: past the job's timeout by
///      more than node-ttl (its slave died or missed it) -> `timeout`; dispatched more than
///      executor-ttl ago to an executor instance whose heartbeat has expired -> `lost` (skipped
///      while no executor instance at all has a fresh heartbeat: then the registry, not the
///      executors, is what failed). Both get the follow-up of any ended fire;
///   3. follow-ups of fires that ended: a retry row when attempts remain (failed, timeout, and
///      lost for at-least-once jobs) with exponential backoff and jitter; a fixed-delay job's
///      next time from the run's finish (the batch's flags cleared with one UPDATE);
///   4. workflows (WorkflowPlanner, docs/workflows.md): runs of due workflows (overlap policy),
///      steps started or skipped as their parents end (the runs of step fires followed up in
///      step 3, runs the API created or re-ran, a round-robin batch every running-sweep), run
///      ends and run timeouts.
/// "now" is the database clock (DbTime). The caller sends each slave its new fire ids after
/// the commit; slaves also poll, so a lost notification only delays a fire by the poll interval.
///
/// YAML (section `scheduler`), defaults shown:
///   shards: 1                  # shards of the job space, each led by one node (1 .. 64)
///   scan-interval: 100ms       # the longest the master sleeps between scans
///   scan-min-interval: 50ms    # the shortest (unless a scan hit `batch`: then at once)
///   scan-idle-interval: 2s     # while scans find nothing to do, the longest between two (0: off)
///   lookahead: 3s              # fires due within this are created ahead
///   lookahead-refill: 1s       # a scan that only planned is followed by the next once a job is due within lookahead
///   minus this burst-lookahead: 60s       # more than `batch` jobs due at one time are planned up to this far ahead
///   (0: off) burst-plan-rate: 5000      # such a burst is planned N / this seconds (plus the lookahead) ahead batch:
///   500                 # due jobs per scan misfire-threshold: 5s      # later than this, a fire time is a misfire
///   fire-all-cap: 100          # fire-all: at most this many catch-up fires per job
///   max-fires-per-job: 1000    # per scan
///   node-ttl: 5s               # a slave whose heartbeat is older gets no fires
///   executor-ttl: 30s          # an executor instance whose heartbeat is older is not counted
///   retry-backoff-cap: 5m      # the longest retry delay
///   running-sweep: 5s          # how often running fires are checked for a dead executor / timeout
///   history-retention: 30d     # ended fires older than this are purged (1s .. 3650d; no "forever")
///   history-max-per-job: 10000 # and beyond a job's newest this many fires (1 .. 10,000,000)
///   purge-interval: 10s        # how often the master purges (HistoryPurger; 100ms .. 1h)
///   purge-batch: 1000          # fires per DELETE / per short fenced transaction (1 .. 10,000)
///   alert-interval: 2s         # how often the master evaluates alerts and sends webhooks (Alerter)
///   alert-batch: 500           # ended fires per fenced evaluation / deliveries per round (1 .. 10,000)
///   alert-lookback: 10m        # a new master first evaluates fires ended this long ago (0 .. 24h)
///   alert-settle: 2s           # fires that ended less than this ago wait for the next round
///   alert-timeout: 5s          # one webhook call, connect to the answer's last byte (100ms .. 60s)
///   alert-connect-timeout: 2s  # connecting (resolving included), within alert-timeout
///   alert-first-byte-timeout: 3s  # from the request sent to the answer's header, within alert-timeout
///   alert-body-limit: 65536    # answer body bytes read (0 .. 1 MiB); a longer answer fails the attempt
///   alert-concurrency: 64      # webhook calls in flight at once (1 .. 1,000)
///   alert-receiver-concurrency: 4  # of them to one receiver (host:port) (1 .. alert-concurrency)
///   alert-addresses:           # where webhooks may connect (http::AddressPolicy): by default not
///     allow: []                #   to loopback, link-local, unspecified or multicast addresses;
///     deny: []                 #   CIDRs, addresses or host names, at most 256 each
///   alert-max-attempts: 8      # then the delivery is `failed` (1 .. 100)
///   alert-backoff: 5s          # delay before the 2nd attempt; doubles each time (10ms .. 1h)
///   alert-backoff-max: 10m     # the longest delay between attempts
///   cluster-url: ""            # sent in alert payloads (e.g. the web UI's address)
///
/// Not thread-safe: one master loop calls Scan.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sched/common/metrics.hpp"
#include "sched/common/status.hpp"
#include "sched/db/database.hpp"
#include "sched/lock/fenced.hpp"
#include "sched/store/scan_probe.hpp"
#include "sched/store/shard.hpp"
#include "sched/trigger/db_time.hpp"
#include "sched/trigger/master_config.hpp"

namespace sched::trigger {

namespace impl {
class ScanStep;
class ScheduleCache;
}  // namespace impl

class Master {
  public:
    /// `fence` is the lease of `shard`; `metrics` are shared by a node's shards (counted together).
    Master(std::shared_ptr<db::Database> db, lock::Fence& fence, const DbTime& time, MasterConfig config,
           MetricsRegistry& metrics, store::JobShard shard = {});
    ~Master();

    /// One scan under `epoch` (see above). lock::IsLeaseLost(status) means stop master work.
    Result<ScanReport> Scan(std::int64_t epoch);

    /// How long to sleep after a scan: until the earliest due time minus the lookahead, within
    /// [scan-min-interval, scan-interval]; 0 after a scan that hit `batch`.
    Micros SleepAfter(const ScanReport& report) const;

    /// Asked before each scan: nullopt when the scan should run now; otherwise the master skips
    /// it and asks again after the returned sleep. A scan is skipped only when the previous one
    /// changed nothing or only planned due jobs (their fires and the jobs' advance; not a batch
    /// full of them), the last full scan is less than scan-idle-interval old, and one statement
    /// (store::ReadScanProbe) finds no work waiting: no job or workflow due within `lookahead -
    /// lookahead-refill`, no follow-up, no unassigned fire, no running backfill, no unstarted
    /// workflow run, and the same live trigger nodes as at the last scan. The sleep it returns
    /// ends when the next job or workflow comes within that window, when the first live node's
    /// heartbeat would run out (store::ScanProbe::node_change_in_ms), at the next full scan, and
    /// at the latest after `probe-interval`: what the web module or a result writes wakes the
    /// master (the caller ends the sleep early), so the probe only backs a lost wake. So an idle
    /// cluster's master costs one statement per probe-interval, a busy one plans in blocks of
    /// about `lookahead-refill`. The first scan of a term (`epoch` not the last scan's) always
    /// runs. A probe error runs the scan (which reports it).
    ///
    /// The scan a probe prompts runs only the steps the probe found work for (a job due: the
    /// due jobs; a follow-up: the follow-ups and workflows; ...) and the self-timed running
    /// sweep; the others (orphans of a node set that did not change, workflow timeouts) wait
    /// for the next full scan, at most scan-idle-interval after the last. A scan not prompted
    /// (the first of a term, the first that may judge slaves, one after a scan that changed
    /// something, after a node joined or left, or when the idle interval has passed) is full.
    std::optional<Micros> Quiet(std::int64_t epoch);

    const MasterConfig& config() const { return config_; }
    const store::JobShard& shard() const { return shard_; }

  private:
    /// Until `earliest_due_ms` is within `horizon_ms` of now, within [scan-min-interval, longest];
    /// `longest` without a due time.
    Micros SleepUntilWithin(std::optional<std::int64_t> earliest_due_ms, std::int64_t horizon_ms, Micros longest) const;

    std::shared_ptr<db::Database> db_;
    lock::Fence& fence_;
    const DbTime& time_;
    MasterConfig config_;
    store::JobShard shard_;
    std::unique_ptr<impl::ScheduleCache> schedules_;      // shared by the steps that compute fire times
    std::vector<std::unique_ptr<impl::ScanStep>> steps_;  // in scan order
    CounterChild& fires_created_;
    CounterChild& retries_created_;
    CounterChild& fires_lost_;
    CounterChild& running_lost_;
    CounterChild& running_timed_out_;
    Family<CounterChild>& misfire_skipped_;
    CounterChild& scans_;
    HistogramChild& scan_seconds_;
    CounterChild& scans_skipped_;
    // What Quiet compares with: set by each committed scan.
    bool last_scan_quiet_ = false;    // it changed nothing
    bool last_scan_planned_ = false;  // it only planned due jobs, and not a full batch of them
    std::optional<std::int64_t> last_full_scan_ms_;
    std::int64_t last_scan_epoch_ = 0;
    // What the probe that prompted the next scan found, and its horizon: Quiet sets it, Scan
    // takes it (nullopt: a full scan).
    std::optional<store::ScanProbe> prompted_;
    std::int64_t prompted_horizon_ms_ = 0;
    bool judged_term_ = false;          // a full scan of this term judged slaves (past its first node-ttl)
    std::int64_t term_epoch_ = 0;       // the epoch of the term the scans run in
    std::int64_t term_started_ms_ = 0;  // the first scan of that term (DB clock)
    store::NodeSetPrint fresh_nodes_;
    store::NodeSetPrint live_nodes_;
};

}  // namespace sched::trigger
