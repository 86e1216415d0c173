// scheduler-bench: starts a trigger cluster and a measuring sink executor, loads the cluster
// and measures it (scenarios.hpp). Wiring and argument parsing only.

#include <iostream>
#include <sstream>
#include <string>

#include <spdlog/spdlog.h>

#include "scenarios.hpp"
#include "sched/common/logging.hpp"
#include "sched/common/node_id.hpp"
#include "sched/db/db_url.hpp"

namespace {

constexpr const char* kUsage = R"(usage: scheduler-bench SCENARIO [options]

Scenarios:
  precision    R fires/s for S seconds after a warm-up: lag p50/p90/p99/max, misses, doubles
  throughput   precision over rising --rate steps until p99 > --max-p99-ms, a miss or a double
  failover     load running; kill -9 the master --kills times, then SIGTERM it --kills times
  footprint    one node: start-up to /readyz and RSS with --jobs idle jobs (default 0,10000,100000)
  scale        master scan time with --jobs idle jobs (default 10000,100000,1000000) + --rate load
  fixedcost    MariaDB statements, commits and CPU per second with --jobs idle jobs (default 1000)
               and no load, then with each --rate (default 100) of spread load
  topofhour    --jobs N (default 10000) jobs all due at one second, created in 1,000-row INSERTs, armed,
               then --quiet-seconds of quiet, then the burst: delivered, missed, doubled, lag p50/p99/max,
               time until the last fire arrived, DB CPU, statements and rows changed per fire
               (--db sqlite --nodes 1 runs scheduler-standalone)
  registered   --jobs N[,N...] (default 100000) hourly jobs not due in the window plus --rate
               every-second jobs (default 10): node RSS, start to /readyz, master scan cost over
               --seconds (default 60), GET /api/v1/jobs first and deep page; --db sqlite runs one
               scheduler-standalone, mariadb one scheduler-trigger and one scheduler-web
  retention    --rate every-second jobs (default 50) for --seconds with history-retention --retention:
               fire rows, stored logs, table size and RSS over time; --check fails an unbounded table

Options:
  --nodes N          trigger nodes (default 3)
  --shards K         scheduler.shards of every node (default 1); result.json then gives each node's
                     CPU and the share of the window its masters spent scanning (per_node)
  --rate R[,R...]    fires per second, one job per fire/s (default 100; throughput 1000,2000,5000,10000)
  --seconds S        measured seconds per rate (default 60)
  --warmup S         seconds before the measurement starts (default 5)
  --schedule cron|spread   cron: every job at '* * * * * ?' (a burst each second);
                     spread: fixed-rate 1s, start times spread evenly over the second (default cron)
  --kills K          failover events per signal (default 3)
  --pause S          seconds between failover events (default 15)
  --jobs N[,N...]    idle job counts (footprint, scale)
  --quiet-seconds S  topofhour: seconds between arming the jobs and their fire time (default 60)
  --retention S      retention: the nodes' history-retention in seconds (default 30)
  --max-p99-ms MS    throughput: a step passes with p99 lag at or below this (default 100)
  --lease-watch S    precision, throughput: seconds the lease is still watched after each window;
                     epoch changes during and after the window are reported apart (default 5)
  --db mariadb|galera|sqlite   a private MariaDB from scripts/mariadb.sh (default), a private
                     three-node Galera cluster from scripts/galera.sh (node i on Galera node
                     (i-1)%3+1, database.topology: galera; DB CPU is the three servers'), or SQLite
  --db-url URL       an existing MySQL/MariaDB server (admin URL); a fresh database is created and dropped
  --trigger-bin PATH scheduler-trigger binary (default: the one built beside this bench)
  --standalone-bin PATH, --web-bin PATH   likewise for registered
  --node-log-level L log level of the nodes (default warn)
  --node-yaml TEXT   extra YAML appended to every node's config
  --tls              every hop over TLS: nodes serve HTTPS and call each other and the sink over
                     https, the sink serves HTTPS and calls the nodes over https (a CA and certificate
                     from scripts/tls-certs.sh in DIR/run/tls); compare with the same run without it
  --out DIR          output directory (default bench-results/SCENARIO-<time>)
  --no-table-stats   precision, throughput, topofhour: leave MariaDB's per-table statistics off (the
                     rows changed per fire by table are then not measured; on, they cost MariaDB
                     up to 4 % of its CPU per fire)
  --check            exit 1 unless every run had arrivals and no miss or double (for tests)

Every process the bench starts is stopped by its PID at the end, also on error or Ctrl-C.
Output: DIR/result.json, raw per-fire CSVs, gnuplot scripts and PNG plots; a markdown table on stdout
(precision and throughput end with the ladder: per rate p50/p99 lag, DB CPU and job_fire rows changed
per fire, the knee marked).
)";

std::vector<int> ParseInts(const std::string& key, const std::string& text) {
    std::vector<int> out;
    std::stringstream ss(text);
    std::string part;
    while (std::getline(ss, part, ',')) {
        try {
            std::size_t used = 0;
            const long v = std::stol(part, &used);
            if (used != part.size() || v < 0 || v > 100'000'000) throw std::invalid_argument(part);
            out.push_back(static_cast<int>(v));
        } catch (const std::exception&) {
            throw std::invalid_argument(key + ": expected a non-negative integer (or a comma list), got \"" + text +
                                        "\"");
        }
    }
    if (out.empty()) throw std::invalid_argument(key + ": empty");
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    using sched::bench::BenchOptions;
    if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
        std::cout << kUsage;
        return argc < 2 ? 2 : 0;
    }
    BenchOptions o;
    o.scenario = argv[1];
    o.cluster.trigger_bin = SCHED_TRIGGER_BIN;
    o.cluster.standalone_bin = SCHED_STANDALONE_BIN;
    o.cluster.web_bin = SCHED_WEB_BIN;
    o.cluster.source_dir = SCHED_SOURCE_DIR;
    bool rates_given = false;
    std::string out;
    // The command goes into result.json and the printed tables: --db-url's password does not.
    for (int i = 0; i < argc; ++i) {
        std::string arg = argv[i];
        if (i > 0 && std::string(argv[i - 1]) == "--db-url") {
            auto url = sched::db::ParseDbUrl(arg);
            arg = url.ok() ? url->Redacted() : "(unparsable URL)";
        }
        o.command_line += (i ? " " : "") + arg;
    }
    try {
        for (int i = 2; i < argc; ++i) {
            const std::string arg = argv[i];
            auto value = [&]() -> std::string {
                if (i + 1 >= argc) throw std::invalid_argument(arg + ": needs a value");
                return argv[++i];
            };
            if (arg == "--nodes") {
                o.nodes = ParseInts(arg, value()).front();
                if (o.nodes < 1) throw std::invalid_argument("--nodes: at least 1");
            } else if (arg == "--rate") {
                o.rates = ParseInts(arg, value());
                rates_given = true;
            } else if (arg == "--seconds") {
                o.seconds = ParseInts(arg, value()).front();
            } else if (arg == "--warmup") {
                o.warmup = ParseInts(arg, value()).front();
            } else if (arg == "--schedule") {
                o.schedule = value();
                if (o.schedule != "cron" && o.schedule != "spread") {
                    throw std::invalid_argument("--schedule: expected cron or spread, got \"" + o.schedule + "\"");
                }
            } else if (arg == "--kills") {
                o.kills = ParseInts(arg, value()).front();
            } else if (arg == "--pause") {
                o.pause = ParseInts(arg, value()).front();
            } else if (arg == "--jobs") {
                o.job_counts = ParseInts(arg, value());
            } else if (arg == "--quiet-seconds") {
                o.quiet_seconds = ParseInts(arg, value()).front();
                if (o.quiet_seconds < 1 || o.quiet_seconds > 3600) {
                    throw std::invalid_argument("--quiet-seconds: 1 to 3600 seconds");
                }
            } else if (arg == "--retention") {
                o.retention = ParseInts(arg, value()).front();
                if (o.retention < 1) throw std::invalid_argument("--retention: at least 1 second");
            } else if (arg == "--max-p99-ms") {
                o.max_p99_ms = ParseInts(arg, value()).front();
            } else if (arg == "--lease-watch") {
                o.lease_watch = ParseInts(arg, value()).front();
                if (o.lease_watch < 0 || o.lease_watch > 600) {
                    throw std::invalid_argument("--lease-watch: 0 to 600 seconds");
                }
            } else if (arg == "--shards") {
                o.cluster.shards = ParseInts(arg, value()).front();
                if (o.cluster.shards < 1 || o.cluster.shards > 64) throw std::invalid_argument("--shards: 1..64");
            } else if (arg == "--db") {
                o.cluster.db = value();
                if (o.cluster.db != "mariadb" && o.cluster.db != "galera" && o.cluster.db != "sqlite") {
                    throw std::invalid_argument("--db: expected mariadb, galera or sqlite, got \"" + o.cluster.db +
                                                "\"");
                }
            } else if (arg == "--db-url") {
                o.cluster.db_url = value();
            } else if (arg == "--trigger-bin") {
                o.cluster.trigger_bin = value();
            } else if (arg == "--standalone-bin") {
                o.cluster.standalone_bin = value();
            } else if (arg == "--web-bin") {
                o.cluster.web_bin = value();
            } else if (arg == "--node-log-level") {
                o.cluster.node_log_level = value();
            } else if (arg == "--node-yaml") {
                o.cluster.extra_node_yaml = value() + "\n";
            } else if (arg == "--out") {
                out = value();
            } else if (arg == "--tls") {
                o.cluster.tls = true;
            } else if (arg == "--no-table-stats") {
                o.table_stats = false;
            } else if (arg == "--check") {
                o.check = true;
            } else {
                throw std::invalid_argument("unknown argument \"" + arg + "\" (see --help)");
            }
        }
    } catch (const std::invalid_argument& e) {
        std::cerr << "scheduler-bench: " << e.what() << "\n";
        return 2;
    }
    if (o.scenario == "throughput" && !rates_given) o.rates = {1000, 2000, 5000, 10000};
    if (o.scenario == "retention" && !rates_given) o.rates = {50};
    if (o.scenario == "registered" && !rates_given) o.rates = {10};
    if (o.scenario == "registered" && o.cluster.tls) {
        std::cerr << "scheduler-bench: --tls: registered times its job list calls over plain HTTP; run it without\n";
        return 2;
    }
    if (o.scenario == "topofhour" && o.job_counts.size() > 1) {
        std::cerr << "scheduler-bench: --jobs: topofhour takes one job count\n";
        return 2;
    }
    if ((o.scenario == "topofhour" || o.scenario == "registered") && !o.job_counts.empty() &&
        o.job_counts.front() < 1) {
        std::cerr << "scheduler-bench: --jobs: at least 1 job\n";
        return 2;
    }
    for (int rate : o.rates) {
        if (rate < 1) {
            std::cerr << "scheduler-bench: --rate: at least 1 fire per second\n";
            return 2;
        }
    }
    if (o.cluster.shards > 1 && o.cluster.extra_node_yaml.find("scheduler:") != std::string::npos) {
        std::cerr << "scheduler-bench: --shards: --node-yaml has a scheduler: section; put shards: in it instead\n";
        return 2;
    }
    if (o.scenario == "failover" && o.nodes < 2) {
        std::cerr << "scheduler-bench: --nodes: failover needs at least 2 nodes\n";
        return 2;
    }
    if (out.empty()) out = "bench-results/" + o.scenario + "-" + std::to_string(sched::bench::WallMs() / 1000);
    o.out_dir = std::filesystem::absolute(out);
    o.cluster.run_dir = o.out_dir / "run";
    if (!std::filesystem::exists(o.cluster.trigger_bin)) {
        std::cerr << "scheduler-bench: --trigger-bin: " << o.cluster.trigger_bin << " does not exist\n";
        return 2;
    }
    // On SQLite, registered and a one-node topofhour run what a SQLite deployment runs: the standalone.
    if (o.scenario == "registered" || (o.scenario == "topofhour" && o.nodes == 1)) {
        const bool sqlite = o.cluster.db == "sqlite" && o.cluster.db_url.empty();
        o.cluster.standalone = sqlite;
        const auto& needed = sqlite ? o.cluster.standalone_bin : o.cluster.web_bin;
        if (!std::filesystem::exists(needed)) {
            std::cerr << "scheduler-bench: " << (sqlite ? "--standalone-bin: " : "--web-bin: ") << needed
                      << " does not exist\n";
            return 2;
        }
    }

    sched::LogConfig log;
    sched::SetupLogging(log);
    sched::bench::InstallInterruptHandler();
    try {
        bool ok = true;
        sched::bench::RunScenario(o, ok);
        return ok ? 0 : 1;
    } catch (const sched::bench::InterruptedError&) {
        std::cerr << "scheduler-bench: interrupted; every process it started has been stopped\n";
        return 130;
    } catch (const std::invalid_argument& e) {
        std::cerr << "scheduler-bench: " << e.what() << "\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "scheduler-bench: " << e.what() << "\n";
        return 1;
    }
}
