#pragma once

/// The master's work, one scan at a time, while this node holds the lease (DESIGN 5).
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
///      with multi-row inserts, and their ids are read back by key in buckets of jobs due within
///      5 s of each other (FireRepository::InsertManyIfAbsent);
///   1b. backfills (BackfillAdvancer): up to 20 running backfills per scan each get their next
///      fires (kind backfill) within their overlap limit, assigned like the fires of step 1;
///   2. orphans: pending fires with no live slave (manual triggers, retries, fires of slaves
///      silent for node-ttl / 2) are assigned, with one UPDATE per target node; dispatching
///      fires of slaves silent for node-ttl become `lost`;
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
///   scan-interval: 100ms       # the longest the master sleeps between scans
///   scan-min-interval: 25ms    # the shortest (unless a scan hit `batch`: then at once)
///   lookahead: 2s              # fires due within this are created ahead
///   batch: 500                 # due jobs per scan
///   misfire-threshold: 5s      # later than this, a fire time is a misfire
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
///   alert-timeout: 5s          # one webhook call, connect to response (100ms .. 60s)
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

#include "sched/common/config.hpp"
#include "sched/common/metrics.hpp"
#include "sched/common/status.hpp"
#include "sched/db/database.hpp"
#include "sched/lock/fenced.hpp"
#include "sched/protocol/fires_notice.hpp"
#include "sched/trigger/db_time.hpp"

namespace sched::trigger {

namespace impl {
class ScanStep;
class ScheduleCache;
}  // namespace impl

struct MasterConfig {
    Micros scan_interval = std::chrono::milliseconds(100);
    Micros scan_min_interval = std::chrono::milliseconds(50);
    Micros lookahead = std::chrono::seconds(2);
    int batch = 500;
    Micros misfire_threshold = std::chrono::seconds(5);
    int fire_all_cap = 100;
    int max_fires_per_job = 1000;
    Micros node_ttl = std::chrono::seconds(5);
    Micros executor_ttl = std::chrono::seconds(30);
    Micros retry_backoff_cap = std::chrono::minutes(5);
    Micros running_sweep = std::chrono::seconds(5);
    /// History retention (HistoryPurger): ended fires are kept this long, and at most the newest
    /// history_max_per_job fires of a job. There is no "keep forever": an unpruned job_fire
    /// grows by ~1 GB/day at 50 every-second jobs until the disk is full; 3650d is the longest.
    Micros history_retention = std::chrono::hours(24 * 30);
    int history_max_per_job = 10000;
    Micros purge_interval = std::chrono::seconds(10);
    int purge_batch = 1000;
    /// Alerts (Alerter).
    Micros alert_interval = std::chrono::seconds(2);
    int alert_batch = 500;
    Micros alert_lookback = std::chrono::minutes(10);
    Micros alert_settle = std::chrono::seconds(2);
    Micros alert_timeout = std::chrono::seconds(5);
    int alert_max_attempts = 8;
    Micros alert_backoff = std::chrono::seconds(5);
    Micros alert_backoff_max = std::chrono::minutes(10);
    std::string cluster_url;

    /// Throws ConfigError naming the key.
    static MasterConfig FromYaml(const ConfigNode& node);
};

struct ScanReport {
    int due_jobs = 0;
    int fires_created = 0;
    int backfill_fires = 0;       ///< fires of kind backfill created (step 1b)
    int backfills_completed = 0;  ///< backfills whose every time has an ended fire
    int orphans_assigned = 0;
    int lost = 0;
    int retries = 0;
    int followups = 0;
    int running_lost = 0;       ///< running fires whose executor's heartbeat expired
    int running_timed_out = 0;  ///< running fires past their timeout that no slave ended
    /// Scheduled times that got no fire of their own, by misfire policy name (each run of them
    /// has a ledger row: status skipped, reason misfire).
    std::map<std::string, std::int64_t> misfire_skipped;
    /// Scheduled times in an excluded period of their job's calendar (ledger reason calendar).
    std::int64_t calendar_skipped = 0;
    /// Jobs that completed by their bounds (end_at passed, max_runs reached) in this scan.
    int jobs_completed = 0;
    /// Workflow runs (step 4): created, skipped by the overlap policy, ended, timed out; step
    /// fires started and steps skipped.
    int workflow_runs_created = 0;
    int workflow_runs_overlapped = 0;
    int workflow_runs_ended = 0;
    int workflow_runs_timed_out = 0;
    int workflow_steps_started = 0;
    int workflow_steps_skipped = 0;
    /// New or newly assigned fires per slave node, with their due times, to notify after the
    /// commit.
    std::map<std::string, std::vector<protocol::NoticedFire>> assigned;
    /// The live slaves' addresses by node id (where to send the notifications).
    std::map<std::string, std::string> node_addresses;
    /// The earliest next_fire_time of any enabled job or workflow not paused after the scan.
    std::optional<std::int64_t> earliest_due_ms;
    std::int64_t now_ms = 0;
};

class Master {
  public:
    Master(std::shared_ptr<db::Database> db, lock::Fence& fence, const DbTime& time, MasterConfig config,
           MetricsRegistry& metrics);
    ~Master();

    /// One scan under `epoch` (see above). lock::IsLeaseLost(status) means stop master work.
    Result<ScanReport> Scan(std::int64_t epoch);

    /// How long to sleep after a scan: until the earliest due time minus the lookahead, within
    /// [scan-min-interval, scan-interval]; 0 after a scan that hit `batch`.
    Micros SleepAfter(const ScanReport& report) const;

    const MasterConfig& config() const { return config_; }

  private:
    std::shared_ptr<db::Database> db_;
    lock::Fence& fence_;
    const DbTime& time_;
    MasterConfig config_;
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
};

}  // namespace sched::trigger
