#pragma once

/// The benchmark scenarios (docs/benchmarks.md gives each result with its command):
///
/// - precision: N nodes + the measuring sink, R fires/s for S seconds after a warm-up, per rate;
/// - throughput: precision over rising rates until p99 lag > 100 ms or a miss or double;
/// - failover: load running, the master killed (SIGKILL, then SIGTERM) K times each, the victim
///   restarted under a new node id each time;
/// - footprint: one node's start-up-to-ready time and RSS with 0 / 10k / 100k idle jobs;
/// - scale: the master's scan time with 10k / 100k / 1M idle jobs plus a light load;
/// - fixedcost: the database statements, commits and CPU per second of N nodes with idle jobs only,
///   then under each --rate of spread load (the cost a cluster pays whatever it fires);
/// - topofhour: N jobs due at the same second (created, armed, a quiet period, then the burst):
///   delivered, missed, doubled, lag percentiles, when the last fire arrived, DB cost per fire;
/// - registered: N hourly jobs not due in the window plus a few every-second jobs, on one
///   standalone (SQLite) or one trigger node + one web node (MariaDB): RSS, start to /readyz,
///   master scan cost, GET /api/v1/jobs first and deep page times;
/// - retention: R every-second jobs for S seconds with a short history retention: fire rows,
///   stored logs, table size and RSS sampled over time; bounded = the rows never exceed what the
///   retention keeps (plus open fires and a purge round) once the first fires are past it.
///
/// Each writes `result.json` (and raw `fires*.csv`, plots) to the output directory and prints a
/// markdown table. Throws std::runtime_error on setup failures; InterruptedError on Ctrl-C.

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_cluster.hpp"

namespace sched::bench {

struct BenchOptions {
    std::string scenario;
    ClusterOptions cluster;
    std::filesystem::path out_dir;
    int nodes = 3;
    std::vector<int> rates = {100};
    int seconds = 60;
    int warmup = 5;
    std::string schedule = "cron";  ///< cron: every job at the second; spread: fixed-rate 1s, evenly offset
    int kills = 3;
    int pause = 15;
    std::vector<int> job_counts;
    int quiet_seconds = 60;   ///< topofhour: from the jobs being armed to their fire time
    int retention = 30;       ///< retention: the nodes' history-retention in seconds
    double max_p99_ms = 100;  ///< throughput: the step fails above this
    /// precision/throughput: seconds the lease is still watched after each window, so that a
    /// master lost just after the window (the load still draining) is reported, apart from the
    /// changes during the window.
    int lease_watch = 5;
    /// precision, throughput, topofhour: MariaDB's per-table statistics on for the run (rows
    /// changed per fire by table; they cost MariaDB up to 4 % of its CPU per fire).
    bool table_stats = true;
    bool check = false;  ///< exit 1 unless every run had arrivals, no miss and no double
    std::string command_line;
};

/// Runs `options.scenario`; returns the result document (also written to out_dir/result.json).
/// `ok` is set false when `check` finds a miss, a double or no arrivals.
nlohmann::json RunScenario(const BenchOptions& options, bool& ok);

/// nproc, RAM, CPU model, load average.
nlohmann::json MachineInfo();

}  // namespace sched::bench
