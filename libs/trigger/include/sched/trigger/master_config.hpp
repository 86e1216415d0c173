#pragma once

/// The master's settings (YAML section `scheduler`; every key, with its default, is listed in
/// master.hpp) and what one scan did (ScanReport). Apart from Master so that the scan's steps
/// (src/scan) can read them without depending on the master that runs them.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sched/common/config.hpp"
#include "sched/common/duration.hpp"
#include "sched/http/address_policy.hpp"
#include "sched/protocol/fires_notice.hpp"
#include "sched/trigger/fire_trace.hpp"

namespace sched::trigger {

struct MasterConfig {
    /// The shards the job space is split into (store::JobShard), each with its own lease: 1 ..
    /// store::kMaxShards. The same on every node of a cluster (checked at start-up).
    int shards = 1;
    Micros scan_interval = std::chrono::milliseconds(100);
    Micros scan_min_interval = std::chrono::milliseconds(50);
    /// While scans find nothing to do, the longest between two full scans; in between, one
    /// statement per scan-interval asks whether work is waiting (Master::Quiet). 0: every wake-up
    /// is a full scan.
    Micros scan_idle_interval = std::chrono::seconds(2);
    /// Between those full scans, while nothing is due and nothing wakes the master, the longest
    /// between two probes. Writers of work wake it at once (POST /internal/v1/master/wake: the
    /// web module's writes, results and slave ends that leave a follow-up), due times and a
    /// slave's heartbeat running out are known from the last probe, so the probe is only the
    /// fallback for a lost wake. At most scan-idle-interval; scan-interval or less probes every
    /// scan-interval, as before wakes existed.
    Micros probe_interval = std::chrono::seconds(1);
    Micros lookahead = std::chrono::seconds(3);
    /// How far the planned window may shrink before the next scan plans again: each scan plans
    /// every fire due within `lookahead`, and between scans that only planned, the probe asks
    /// for jobs due within `lookahead - lookahead-refill`. So under a steady load a full scan runs
    /// about once per refill instead of once per scan-min-interval, and every fire is still
    /// planned at least `lookahead - lookahead-refill` ahead (2 s by default, as long as a fire
    /// was planned ahead when the master planned on every scan with a 2 s lookahead: a new master
    /// after a kill -9 finds as much planned). 0 .. lookahead.
    Micros lookahead_refill = std::chrono::seconds(1);
    /// Bursts: when more than `batch` jobs are due at one same time beyond the lookahead (a top
    /// of the hour), they are planned ahead of it by as long as planning them takes at
    /// `burst-plan-rate` jobs a second, at most `burst-lookahead` ahead (0: off), a batch per
    /// scan, scan after scan. What is left of the burst (`batch` jobs or fewer) is planned as
    /// usual.
    Micros burst_lookahead = std::chrono::seconds(60);
    int burst_plan_rate = 5000;
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
    Micros alert_timeout = std::chrono::seconds(5);  ///< one webhook call, from connecting to the answer's end
    Micros alert_connect_timeout = std::chrono::seconds(2);
    Micros alert_first_byte_timeout = std::chrono::seconds(3);  ///< from the request sent to the answer's header
    std::size_t alert_body_limit = std::size_t{64} * 1024;      ///< answer body bytes read; more fails the attempt
    int alert_concurrency = 64;                                 ///< webhook calls in flight, all receivers
    int alert_receiver_concurrency = 4;                         ///< webhook calls in flight to one host:port
    /// Which webhook addresses deliveries may connect to (`alert-addresses: {allow, deny}`).
    http::AddressPolicy alert_addresses;
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
    /// Whether every step ran. A scan that a probe prompted (Master::Quiet) runs only the steps
    /// the probe found work for, and those whose work it cannot see (the due jobs, the
    /// self-timed running sweep).
    bool full = true;
    /// The spans of the fires this scan planned and ended (with FireTracer on), pushed by
    /// Master::Scan only after the commit: a scan rolled back exports none.
    std::vector<PendingFireSpan> spans;
};

}  // namespace sched::trigger
