#include "scenarios.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>

#include "analysis.hpp"
#include "sched/common/testing/child_process.hpp"
#include "sched/common/testing/wait_for.hpp"
#include "sink.hpp"
#include "table_rows.hpp"

namespace sched::bench {

using namespace std::chrono_literals;
using nlohmann::json;

namespace {

std::string Fmt(double v, int digits = 1) {
    std::ostringstream s;
    s << std::fixed << std::setprecision(digits) << v;
    return s.str();
}

std::string FirstLine(const std::string& path, const std::string& prefix) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(prefix, 0) == 0) return line;
    }
    return "";
}

std::string LoadAvg() {
    std::ifstream in("/proc/loadavg");
    std::string a, b, c;
    in >> a >> b >> c;
    return a + " " + b + " " + c;
}

/// The machine's CPU time so far, from /proc/stat's "cpu" line, in ms: busy (user, nice, system,
/// irq, softirq), idle (idle, iowait) and stolen (the hypervisor ran another guest on the
/// vCPU). A window's delta says how busy the machine was and how much CPU it never got.
struct MachineCpu {
    double busy_ms = 0;
    double idle_ms = 0;
    double steal_ms = 0;
};

MachineCpu SampleMachineCpu() {
    std::ifstream in("/proc/stat");
    std::string label;
    double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    in >> label >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
    MachineCpu cpu;
    if (!in || label != "cpu") return cpu;
    const double ms_per_tick = 1000.0 / static_cast<double>(sysconf(_SC_CLK_TCK));
    cpu.busy_ms = (user + nice + system + irq + softirq) * ms_per_tick;
    cpu.idle_ms = (idle + iowait) * ms_per_tick;
    cpu.steal_ms = steal * ms_per_tick;
    return cpu;
}

/// The window's share of the machine's CPU time that was busy, and the ms stolen from it.
json MachineCpuDelta(const MachineCpu& a, const MachineCpu& b) {
    const double busy = b.busy_ms - a.busy_ms;
    const double total = busy + (b.idle_ms - a.idle_ms) + (b.steal_ms - a.steal_ms);
    return {{"busy_share", total > 0 ? std::stod(Fmt(busy / total, 3)) : 0.0},
            {"steal_ms", std::stod(Fmt(b.steal_ms - a.steal_ms, 0))}};
}

/// The CPU time stolen in each second of a window, sampled every 10 ms from a thread of its own
/// (/proc/stat counts it in ticks of 10 ms): a late second of a burst is read against it.
class StealBySecond {
  public:
    StealBySecond(std::int64_t from_ms, std::int64_t to_ms)
        : from_ms_(from_ms), seconds_(static_cast<std::size_t>((to_ms - from_ms + 999) / 1000), 0.0) {
        thread_ = std::jthread([this, to_ms](const std::stop_token& stop) {
            double last = SampleMachineCpu().steal_ms;
            while (!stop.stop_requested() && WallMs() < to_ms) {
                std::this_thread::sleep_for(10ms);
                const double now = SampleMachineCpu().steal_ms;
                const std::int64_t at = WallMs();
                if (at >= from_ms_ && at < to_ms) {
                    seconds_[static_cast<std::size_t>((at - from_ms_) / 1000)] += now - last;
                }
                last = now;
            }
        });
    }
    /// Ms stolen in each second of the window, in order (waits for the window's end).
    std::vector<double> Take() {
        thread_.join();
        return seconds_;
    }

  private:
    const std::int64_t from_ms_;
    std::vector<double> seconds_;
    std::jthread thread_;
};

/// The executor's start delay over a window (MeasuringSink::StartDelays): the runs started, their
/// mean delay, and the bucket bound within which 99 % of them started ("+Inf" past the last).
json StartDelayDelta(const MeasuringSink::StartDelay& a, const MeasuringSink::StartDelay& b) {
    const double count = b.count - a.count;
    json out = {{"runs", count},
                {"mean_ms", count > 0 ? std::stod(Fmt((b.sum_s - a.sum_s) * 1000.0 / count, 2)) : 0.0}};
    std::string p99 = "-";
    for (std::size_t i = 0; i < b.buckets.size() && i < a.buckets.size() && count > 0; ++i) {
        if (b.buckets[i].second - a.buckets[i].second >= 0.99 * count) {
            p99 = b.buckets[i].first;
            break;
        }
    }
    out["p99_within_s"] = p99;
    return out;
}

/// The master scan histogram (sched_master_scan_seconds) summed over every node's /metrics:
/// whoever was master during a window, the deltas are that window's scans.
struct ScanSample {
    double sum_s = 0;
    double count = 0;
    std::map<std::string, double> buckets;      ///< le -> cumulative count
    std::map<std::string, double> sum_by_node;  ///< node id -> its scans' seconds (all its shards)
    double fires_created = 0;                   ///< sched_master_fires_created_total
    double misfire_skipped = 0;                 ///< sched_master_misfire_skipped_total (all policies)
    bool ok = false;
};

ScanSample SampleScans(Cluster& cluster) {
    ScanSample s;
    for (auto& [index, node] : cluster.nodes()) {
        if (!node.process || !node.process->Running()) continue;
        auto r = HttpGet(node.port, "/metrics");
        if (!r || r->first != 200) continue;
        std::istringstream in(r->second);
        std::string line;
        while (std::getline(in, line)) {
            const auto value = [&] {
                return std::stod(line.substr(line.rfind(' ') + 1));
            };
            if (line.rfind("sched_master_scan_seconds_sum", 0) == 0) {
                s.sum_s += value();
                s.sum_by_node[node.node_id] += value();
            }
            if (line.rfind("sched_master_fires_created_total", 0) == 0) s.fires_created += value();
            if (line.rfind("sched_master_misfire_skipped_total", 0) == 0) s.misfire_skipped += value();
            if (line.rfind("sched_master_scan_seconds_count", 0) == 0) {
                s.count += value();
                s.ok = true;
            }
            if (line.rfind("sched_master_scan_seconds_bucket{le=\"", 0) == 0) {
                const auto from = line.find('"') + 1;
                s.buckets[line.substr(from, line.find('"', from) - from)] += value();
            }
        }
    }
    return s;
}

json ScanDelta(const ScanSample& a, const ScanSample& b, double seconds) {
    if (!a.ok || !b.ok || b.count <= a.count) return json(nullptr);
    const double n = b.count - a.count;
    json over = json::object();  // share of scans slower than each bound
    for (const auto& [le, c] : b.buckets) {
        if (le == "+Inf") continue;
        const double before = a.buckets.count(le) ? a.buckets.at(le) : 0;
        over[le] = std::stod(Fmt(1.0 - (c - before) / n, 3));
    }
    return {{"scans", n},
            {"scans_per_s", std::stod(Fmt(n / seconds, 2))},
            {"mean_ms", std::stod(Fmt((b.sum_s - a.sum_s) * 1000.0 / n, 3))},
            {"share_slower_than_s", over}};
}

void WaitUntilMs(std::int64_t t_ms, const std::string& what) {
    std::int64_t last_note = 0;
    while (true) {
        const std::int64_t now = WallMs();
        if (now >= t_ms) return;
        if (now - last_note >= 10000) {
            spdlog::info("{}: {} s to go", what, (t_ms - now + 999) / 1000);
            last_note = now;
        }
        SleepFor(std::chrono::milliseconds(std::min<std::int64_t>(t_ms - now, 500)));
    }
}

std::int64_t NextSecond(std::int64_t ms, std::int64_t ahead_ms) {
    return (ms + ahead_ms + 999) / 1000 * 1000;
}

// Jobs that together fire `rate` times per second.
std::vector<JobPlan> CreateLoad(Cluster& cluster, const std::string& tag, int rate, const std::string& schedule,
                                std::int64_t first) {
    JobBatch batch;
    batch.tag = tag;
    batch.count = rate;
    batch.first_ms = first;
    batch.period_ms = 1000;
    if (schedule == "spread") {
        batch.schedule_type = ScheduleType::kFixedRate;
        batch.schedule_expr = "1s";
        batch.stride_us = 1'000'000 / std::max(1, rate);
        batch.anchor_at_first = true;
    }
    const auto t0 = WallUs();
    auto plans = InsertJobs(cluster.db(), batch);
    spdlog::info("created {} jobs ({} schedule) in {:.0f} ms", rate, schedule, (WallUs() - t0) / 1000.0);
    return plans;
}

// Only the load's own jobs (by id range): a single UPDATE over a million idle jobs would outlast
// the session's read timeout.
void DisableJobs(Cluster& cluster, const std::vector<JobPlan>& plans) {
    if (plans.empty()) return;
    const long long lo = plans.front().job_id;
    const long long hi = plans.back().job_id;
    auto done = cluster.db().Run([&](soci::session& s) {
        s << "UPDATE job SET enabled = 0 WHERE id BETWEEN :lo AND :hi", soci::use(lo), soci::use(hi);
    });
    if (!done.ok()) spdlog::warn("disable jobs: {}", done.ToString());
}

void WaitForSink(Cluster& cluster, const MeasuringSink& sink) {
    const bool registered = testing::WaitFor(
        [&] {
            if (Interrupted()) throw InterruptedError();
            auto n = cluster.db().Run([](soci::session& s) {
                long long c = 0;
                s << "SELECT COUNT(*) FROM executor_instance WHERE app = 'bench'", soci::into(c);
                return c;
            });
            return n.ok() && *n > 0;
        },
        30s, 50ms);
    if (!registered) throw std::runtime_error("the sink " + sink.address() + " did not register within 30 s");
}

// A cluster started for a scenario and the bench's sink: the database, then `prepare` (idle jobs,
// checks of the database), then `nodes` nodes; the sink registered and a master elected.
struct SinkCluster {
    SinkCluster(const ClusterOptions& co, int nodes, const std::filesystem::path& spool,
                const std::function<void(Cluster&)>& prepare = nullptr)
        : cluster(co), sink(StartDatabaseAndNodes(cluster, nodes, prepare), co.token, spool) {
        WaitForSink(cluster, sink);
        cluster.WaitForMaster(30s);
    }

    Cluster cluster;
    MeasuringSink sink;

  private:
    static std::vector<std::string> StartDatabaseAndNodes(Cluster& cluster, int nodes,
                                                          const std::function<void(Cluster&)>& prepare) {
        cluster.StartDatabase();
        if (prepare) prepare(cluster);
        cluster.StartNodes(nodes);
        return cluster.WebEndpoints();
    }
};

json SdkStats(const MeasuringSink& sink) {
    const auto s = sink.Stats();
    return {{"accepted", s.accepted},
            {"duplicates", s.duplicates},
            {"refused_stale_epoch", s.refused_stale_epoch},
            {"refused_capacity", s.refused_capacity},
            {"results_delivered", s.results_delivered},
            {"results_spooled", s.results_spooled}};
}

std::string Dash(const Percentiles& p, double v) {
    return p.n == 0 ? "-" : Fmt(v);
}

// MariaDB's statement counters (SHOW GLOBAL STATUS Com_*), its row counters (Handler_*) and its
// fsyncs (Innodb_data_fsyncs: the redo log's and the data files'): with the deltas over a window,
// the statements the whole cluster ran per fire, the row versions it wrote per fire (each
// maintains job_fire's secondary indexes: MariaDB's work once statements are batched) and what
// its commits cost the disk.
std::map<std::string, double> StatementCounters(Cluster& cluster) {
    std::map<std::string, double> out;
    if (cluster.db().backend() != db::Backend::kMySql) return out;
    (void)cluster.db().Run([&](soci::session& s) {
        std::string name;
        std::string value;
        soci::statement st = (s.prepare << "SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_select', 'Com_insert', "
                                           "'Com_update', 'Com_commit', 'Com_begin', 'Questions', "
                                           "'Handler_write', 'Handler_update', 'Handler_delete', 'Handler_read_next', "
                                           "'Handler_read_rnd_next', 'Innodb_data_fsyncs')",
                              soci::into(name), soci::into(value));
        st.execute();
        while (st.fetch()) out[name] = std::atof(value.c_str());
    });
    return out;
}

json PerFire(const std::map<std::string, double>& a, const std::map<std::string, double>& b, std::size_t fires) {
    if (a.empty() || b.empty() || fires == 0) return json(nullptr);
    json out = json::object();
    for (const auto& [k, v] : b) {
        if (a.count(k)) out[k] = std::stod(Fmt((v - a.at(k)) / static_cast<double>(fires), 3));
    }
    return out;
}

// CPU time used so far by the run's processes: each node (by PID: a node restarted within a window
// counts only if it ran at both samples), the private MariaDB, and this process (the bench's SDK
// executors and the sink). The deltas per received fire show where a fire's CPU goes.
struct CpuSample {
    std::map<pid_t, double> nodes;
    std::map<pid_t, std::string> node_ids;
    std::optional<double> mariadb;
    std::optional<double> bench;
};

CpuSample SampleCpu(Cluster& cluster) {
    CpuSample out;
    for (auto& [i, node] : cluster.nodes()) {
        if (!node.process) continue;
        if (auto ms = CpuMs(node.process->pid())) {
            out.nodes[node.process->pid()] = *ms;
            out.node_ids[node.process->pid()] = node.node_id;
        }
    }
    for (const pid_t pid : cluster.MariaDbPids()) {
        if (auto ms = CpuMs(pid)) out.mariadb = out.mariadb.value_or(0) + *ms;
    }
    out.bench = CpuMs(getpid());
    return out;
}

// The CPU time (ms) the nodes spent between two samples: only nodes that ran at both count.
double NodesCpuMs(const CpuSample& a, const CpuSample& b) {
    double ms = 0;
    for (const auto& [pid, after] : b.nodes) {
        if (auto it = a.nodes.find(pid); it != a.nodes.end()) ms += after - it->second;
    }
    return ms;
}

// The private MariaDB's CPU between two samples in percent of one core over `seconds`; null
// without one.
json MariaDbCpuPercent(const CpuSample& a, const CpuSample& b, double seconds) {
    return a.mariadb && b.mariadb ? json(std::stod(Fmt((*b.mariadb - *a.mariadb) / (seconds * 10.0), 1)))
                                  : json(nullptr);
}

json CpuPerFire(const CpuSample& a, const CpuSample& b, std::size_t fires) {
    if (fires == 0) return json(nullptr);
    const auto per_fire = [&](double ms) {
        return std::stod(Fmt(ms / static_cast<double>(fires), 3));
    };
    const auto delta = [&](const std::optional<double>& x, const std::optional<double>& y) {
        return x && y ? json(per_fire(*y - *x)) : json(nullptr);
    };
    return {{"nodes", per_fire(NodesCpuMs(a, b))},
            {"mariadb", delta(a.mariadb, b.mariadb)},
            {"bench", delta(a.bench, b.bench)}};
}

// Each node's share of the window: its CPU (percent of one core) and the share of the window its
// masters spent in scans (every shard it led; with one shard only the master's is non-zero).
json PerNode(const CpuSample& cpu_a, const CpuSample& cpu_b, const ScanSample& scan_a, const ScanSample& scan_b,
             double seconds) {
    json out = json::object();
    for (const auto& [pid, ms] : cpu_b.nodes) {
        const auto before = cpu_a.nodes.find(pid);
        if (before == cpu_a.nodes.end()) continue;
        const std::string& id = cpu_b.node_ids.at(pid);
        json n = {{"cpu_percent", std::stod(Fmt((ms - before->second) / (seconds * 10.0), 1))}};
        const auto sa = scan_a.sum_by_node.find(id);
        const auto sb = scan_b.sum_by_node.find(id);
        n["scan_busy_share"] = sa != scan_a.sum_by_node.end() && sb != scan_b.sum_by_node.end()
                                   ? json(std::stod(Fmt((sb->second - sa->second) / seconds, 3)))
                                   : json(nullptr);
        out[id] = std::move(n);
    }
    return out;
}

// ---- precision / throughput ----

// The command's arguments without the binary's path, as docs/benchmarks.md quotes them.
std::string Arguments(const BenchOptions& o) {
    const auto space = o.command_line.find(' ');
    return space == std::string::npos ? "" : o.command_line.substr(space + 1);
}

std::string OrDash(const json& v, int digits) {
    return v.is_number() ? Fmt(v.get<double>(), digits) : std::string("-");
}

// The rate of a ladder after which it breaks: the highest passing rate below the lowest failing
// one (rates in any order); nullopt when none failed or the lowest failed.
std::optional<int> Knee(const std::vector<std::pair<int, bool>>& passed_by_rate) {
    std::optional<int> lowest_failed;
    for (const auto& [rate, passed] : passed_by_rate) {
        if (!passed && (!lowest_failed || rate < *lowest_failed)) lowest_failed = rate;
    }
    if (!lowest_failed) return std::nullopt;
    std::optional<int> knee;
    for (const auto& [rate, passed] : passed_by_rate) {
        if (passed && rate < *lowest_failed && (!knee || rate > *knee)) knee = rate;
    }
    return knee;
}

// The runs as the table docs/benchmarks.md opens with: one row per rate, the database's CPU and
// job_fire's rows changed per fire, the knee marked. On SQLite the database works inside the
// node, so the node's CPU stands for it and no row counter exists.
void PrintLadder(const BenchOptions& o, db::Backend backend, const json& runs) {
    const bool mariadb = backend == db::Backend::kMySql;
    std::vector<std::pair<int, bool>> passed_by_rate;
    for (const auto& r : runs) passed_by_rate.emplace_back(r["rate"].get<int>(), r["passed"].get<bool>());
    const auto knee = Knee(passed_by_rate);
    std::cout << "\n| database, nodes | schedule | fires/s | p50 ms | p99 ms | DB CPU ms/fire | job_fire rows "
                 "changed / fire | rows changed / fire (all tables) | missed / doubled | passes (p99 <= "
              << Fmt(o.max_p99_ms, 0) << " ms, none missed or doubled) | 1-min load at start |\n"
              << "|---|---|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& r : runs) {
        const int rate = r["rate"].get<int>();
        const auto& lag = r["window"]["lag_ms"];
        const auto& cpu = r["cpu_ms_per_received_fire"];
        const auto& rows = r["rows_changed_per_received_fire"];
        const json db_cpu = cpu.is_object() ? (mariadb ? cpu["mariadb"] : cpu["nodes"]) : json(nullptr);
        const std::string load = r["loadavg_start"].get<std::string>();
        std::cout << "| " << (mariadb ? "MariaDB" : "SQLite") << ", " << o.nodes << " | " << o.schedule << " | " << rate
                  << " | " << (lag["n"].get<std::size_t>() ? Fmt(lag["p50"].get<double>()) : "-") << " | "
                  << (lag["n"].get<std::size_t>() ? Fmt(lag["p99"].get<double>()) : "-") << " | "
                  << (mariadb ? "" : "(in the node) ") << OrDash(db_cpu, 3) << " | " << OrDash(FireRowsPerFire(rows), 2)
                  << " | " << OrDash(rows.is_object() ? rows["all"] : json(nullptr), 2) << " | "
                  << r["window"]["misses"].get<std::size_t>() << " / " << r["window"]["doubles"].get<std::size_t>()
                  << " | " << (r["passed"].get<bool>() ? "yes" : "no") << (knee && *knee == rate ? " (the knee)" : "")
                  << " | " << load.substr(0, load.find(' ')) << " |\n";
    }
    if (!knee) {
        const bool any_failed =
            std::any_of(passed_by_rate.begin(), passed_by_rate.end(), [](const auto& p) { return !p.second; });
        std::cout << (any_failed ? "the knee: below the lowest rate run\n" : "the knee: above every rate run\n");
    }
    std::cout << "command: `scheduler-bench " << Arguments(o) << "`" << std::endl;
}

struct RateRun {
    json doc;
    WindowStats stats;
};

RateRun MeasureRate(const BenchOptions& o, Cluster& cluster, MeasuringSink& sink, TableStatistics& table_stats,
                    int rate, int seconds, int index) {
    const std::string tag = "r" + std::to_string(rate) + "x" + std::to_string(index);
    const std::int64_t first = NextSecond(WallMs(), 3000);
    auto plans = CreateLoad(cluster, tag, rate, o.schedule, first);
    const std::int64_t from = first + o.warmup * 1000LL;
    const std::int64_t to = from + seconds * 1000LL;
    WaitUntilMs(from, "warm-up at " + std::to_string(rate) + "/s");
    const std::string load_start = LoadAvg();
    const auto scan_a = SampleScans(cluster);
    const auto lease_a = cluster.CurrentLease();
    const auto statements_a = StatementCounters(cluster);
    const auto rows_a = table_stats.Sample();
    const auto cpu_a = SampleCpu(cluster);
    const auto machine_a = SampleMachineCpu();
    const auto delay_a = sink.StartDelays();
    StealBySecond steal(from, to);
    WaitUntilMs(to, "measuring " + std::to_string(rate) + "/s");
    const auto machine_b = SampleMachineCpu();
    const auto delay_b = sink.StartDelays();
    json machine_cpu = MachineCpuDelta(machine_a, machine_b);
    machine_cpu["steal_ms_by_second"] = steal.Take();
    const auto cpu_b = SampleCpu(cluster);
    const auto scan_b = SampleScans(cluster);
    const auto lease_b = cluster.CurrentLease();
    const auto statements_b = StatementCounters(cluster);
    const auto rows_b = table_stats.Sample();
    json rss = json::object();  // MiB of each node at the end of the window, under load
    for (auto& [i, node] : cluster.nodes()) {
        if (node.process) rss[node.node_id] = std::stod(Fmt(RssKib(node.process->pid()) / 1024.0, 1));
    }
    const std::string load_end = LoadAvg();
    DisableJobs(cluster, plans);
    // A master can lose its lease seconds after the window, while the window's fires drain (a
    // self-demotion 4-5 s after the window was seen): the lease is read again after lease_watch.
    const std::int64_t watch_until = to + o.lease_watch * 1000LL;
    WaitUntilMs(watch_until, "watching the lease");
    const auto lease_c = cluster.CurrentLease();
    WaitUntilMs(to + 3000, "draining");  // fires of the window still in flight
    const auto arrivals = sink.Snapshot();
    const auto fires = ReadFires(cluster.db(), first, to);
    RateRun run;
    run.stats = Analyse(plans, arrivals, fires, from, to);
    std::vector<Arrival> mine;
    for (const auto& a : arrivals) {
        if (a.scheduled_ms >= first && a.scheduled_ms < to) mine.push_back(a);
    }
    const auto stem = o.out_dir / ("lag-" + std::to_string(rate));
    WriteCsv(stem.string() + ".csv", mine, fires);
    const bool plotted = PlotLag(stem,
                                 std::to_string(rate) + " fires/s, " + std::to_string(o.nodes) +
                                     " nodes: lag of each fire (arrival - scheduled)",
                                 mine, first, {{static_cast<double>(from - first) / 1000.0, "window"}});
    run.doc = {{"rate", rate},
               {"jobs", rate},
               {"schedule", o.schedule},
               {"nodes", o.nodes},
               {"seconds", seconds},
               {"warmup_s", o.warmup},
               {"window", run.stats.Json()},
               {"master_scans", ScanDelta(scan_a, scan_b, seconds)},
               {"lease_epoch_start", lease_a.epoch},
               {"node_rss_mib", rss},
               {"db_statements_per_received_fire", PerFire(statements_a, statements_b, run.stats.received)},
               {"rows_changed_per_received_fire", TableRowsPerFire(rows_a, rows_b, run.stats.received)},
               {"cpu_ms_per_received_fire", CpuPerFire(cpu_a, cpu_b, run.stats.received)},
               {"shards", o.cluster.shards},
               {"per_node", PerNode(cpu_a, cpu_b, scan_a, scan_b, seconds)},
               {"machine_cpu", machine_cpu},
               {"executor_start_delay", StartDelayDelta(delay_a, delay_b)},
               {"lease_epoch_end", lease_b.epoch},
               {"lease_watch_s", o.lease_watch},
               {"lease_epoch_after_watch", lease_c.epoch},
               {"loadavg_start", load_start},
               {"loadavg_end", load_end},
               {"csv", stem.string() + ".csv"},
               {"plot", plotted ? json(stem.string() + ".png") : json(nullptr)}};
    spdlog::info(
        "{} fires/s: p50 {} ms, p99 {} ms, max {} ms, misses {}, lost {}, doubles {}; machine busy {}, {} ms "
        "of CPU stolen",
        rate, Fmt(run.stats.lag_ms.p50), Fmt(run.stats.lag_ms.p99), Fmt(run.stats.lag_ms.max), run.stats.misses,
        run.stats.lost, run.stats.doubles, run.doc["machine_cpu"]["busy_share"].dump(),
        run.doc["machine_cpu"]["steal_ms"].dump());
    return run;
}

json PrecisionLike(const BenchOptions& o, bool stepping, bool& ok) {
    SinkCluster started(o.cluster, o.nodes, o.out_dir / "spool");
    auto& cluster = started.cluster;
    auto& sink = started.sink;
    TableStatistics table_stats(cluster.db(), o.table_stats);
    json runs = json::array();
    std::cout << "\n| rate (fires/s) | nodes | schedule | expected | received | p50 ms | p90 ms | p99 ms | max ms | "
                 "misses | lost | doubles | claimed - due p99 ms | delivery p99 ms | master scan mean ms | lease epoch "
                 "changes "
                 "in window | lease epoch changes "
              << o.lease_watch << " s after |\n"
              << "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    std::optional<int> best;
    int index = 0;
    for (int rate : o.rates) {
        auto run = MeasureRate(o, cluster, sink, table_stats, rate, o.seconds, index++);
        const auto& w = run.stats;
        const auto& scans = run.doc["master_scans"];
        std::cout << "| " << rate << " | " << o.nodes << " | " << o.schedule << " | " << w.expected << " | "
                  << w.received << " | " << Dash(w.lag_ms, w.lag_ms.p50) << " | " << Dash(w.lag_ms, w.lag_ms.p90)
                  << " | " << Dash(w.lag_ms, w.lag_ms.p99) << " | " << Dash(w.lag_ms, w.lag_ms.max) << " | " << w.misses
                  << " | " << w.lost << " | " << w.doubles << " | " << Dash(w.claim_ms, w.claim_ms.p99) << " | "
                  << Dash(w.delivery_ms, w.delivery_ms.p99) << " | "
                  << (scans.is_null() ? std::string("-") : Fmt(scans["mean_ms"].get<double>(), 2)) << " | "
                  << run.doc["lease_epoch_end"].get<std::int64_t>() - run.doc["lease_epoch_start"].get<std::int64_t>()
                  << " | "
                  << run.doc["lease_epoch_after_watch"].get<std::int64_t>() -
                         run.doc["lease_epoch_end"].get<std::int64_t>()
                  << " |" << std::endl;
        const bool clean = w.received > 0 && w.misses == 0 && w.doubles == 0;
        if (o.check && !clean) ok = false;
        // On MariaDB every window measures its rows per table: a ladder without them is broken.
        if (o.check && o.table_stats && cluster.db().backend() == db::Backend::kMySql &&
            !run.doc["rows_changed_per_received_fire"].is_object()) {
            spdlog::error("{} fires/s: no per-table row counts", rate);
            ok = false;
        }
        run.doc["passed"] = clean && w.lag_ms.p99 <= o.max_p99_ms;
        runs.push_back(run.doc);
        if (stepping) {
            if (!run.doc["passed"].get<bool>()) break;
            best = rate;
        }
        SleepFor(2s);
    }
    PrintLadder(o, cluster.db().backend(), runs);
    json doc = {{"runs", runs}, {"sdk", SdkStats(sink)}};
    if (stepping) doc["highest_passing_rate"] = best ? json(*best) : json(nullptr);
    return doc;
}

// ---- failover ----

json Failover(const BenchOptions& o, bool& ok) {
    SinkCluster started(o.cluster, o.nodes, o.out_dir / "spool");
    auto& cluster = started.cluster;
    auto& sink = started.sink;
    const int rate = o.rates.front();
    const std::int64_t first = NextSecond(WallMs(), 3000);
    auto plans = CreateLoad(cluster, "failover", rate, o.schedule, first);
    const std::int64_t from = first + o.warmup * 1000LL;
    WaitUntilMs(from, "warm-up");

    struct Event {
        std::string signal;
        int victim = 0;
        std::string victim_id;
        std::int64_t old_epoch = 0;
        std::int64_t new_epoch = 0;
        std::string new_master;
        std::int64_t kill_us = 0;
        std::int64_t takeover_us = 0;
        std::int64_t restarted_us = 0;
    };
    std::vector<Event> events;
    for (int signo : {SIGKILL, SIGTERM}) {
        for (int k = 0; k < o.kills; ++k) {
            const auto lease = cluster.WaitForMaster(30s);
            const int victim = cluster.IndexOf(lease.owner);
            if (victim < 0) throw std::runtime_error("master " + lease.owner + " is not a node of this bench");
            Event e;
            e.signal = signo == SIGKILL ? "SIGKILL" : "SIGTERM";
            e.victim = victim;
            e.victim_id = lease.owner;
            e.old_epoch = lease.epoch;
            e.kill_us = WallUs();
            cluster.node(victim).process->Signal(signo);
            spdlog::info("{} to master {} (epoch {})", e.signal, e.victim_id, e.old_epoch);
            const auto until = std::chrono::steady_clock::now() + 30s;
            while (true) {
                const auto l = cluster.CurrentLease();
                if (!l.owner.empty() && l.owner != e.victim_id) {
                    e.takeover_us = WallUs();
                    e.new_epoch = l.epoch;
                    e.new_master = l.owner;
                    break;
                }
                if (std::chrono::steady_clock::now() > until) throw std::runtime_error("no new master within 30 s");
                SleepFor(5ms);
            }
            spdlog::info("new master {} at epoch {} after {:.0f} ms", e.new_master, e.new_epoch,
                         (e.takeover_us - e.kill_us) / 1000.0);
            if (!cluster.node(victim).process->WaitForExit(20s)) cluster.node(victim).process->Signal(SIGKILL);
            cluster.node(victim).process->WaitForExit(5s);
            cluster.StartNode(victim);
            e.restarted_us = WallUs();
            events.push_back(e);
            SleepFor(std::chrono::seconds(o.pause));
        }
    }
    const std::int64_t to = WallMs() / 1000 * 1000 - 2000;
    DisableJobs(cluster, plans);
    SleepFor(3s);
    const auto arrivals = sink.Snapshot();
    const auto fires = ReadFires(cluster.db(), first, to);
    const auto overall = Analyse(plans, arrivals, fires, from, to);

    std::cout << "\n| # | signal | old epoch -> new | lease taken over after (ms) | first dispatch at new epoch "
                 "after (ms) | max lag of fires scheduled -2 s..+8 s (ms) | misses | lost | doubles |\n"
              << "|---|---|---|---|---|---|---|---|---|\n";
    json event_docs = json::array();
    std::vector<PlotEvent> marks;
    int n = 0;
    for (const auto& e : events) {
        std::optional<std::int64_t> first_new;
        for (const auto& a : arrivals) {
            if (a.epoch >= e.new_epoch && a.arrival_us >= e.kill_us && (!first_new || a.arrival_us < *first_new)) {
                first_new = a.arrival_us;
            }
        }
        const std::int64_t kill_ms = e.kill_us / 1000;
        const auto around = Analyse(plans, arrivals, fires, kill_ms - 2000, kill_ms + 8000);
        const double gap = first_new ? (*first_new - e.kill_us) / 1000.0 : -1;
        event_docs.push_back({{"signal", e.signal},
                              {"victim", e.victim_id},
                              {"new_master", e.new_master},
                              {"old_epoch", e.old_epoch},
                              {"new_epoch", e.new_epoch},
                              {"kill_ms", kill_ms},
                              {"takeover_ms", (e.takeover_us - e.kill_us) / 1000.0},
                              {"first_new_epoch_dispatch_ms", first_new ? json(gap) : json(nullptr)},
                              {"around", around.Json()}});
        marks.push_back({static_cast<double>(kill_ms - first) / 1000.0, e.signal == "SIGKILL" ? "kill -9" : "TERM"});
        std::cout << "| " << ++n << " | " << e.signal << " | " << e.old_epoch << " -> " << e.new_epoch << " | "
                  << Fmt((e.takeover_us - e.kill_us) / 1000.0, 0) << " | " << (first_new ? Fmt(gap, 0) : "-") << " | "
                  << Fmt(around.lag_ms.max, 0) << " | " << around.misses << " | " << around.lost << " | "
                  << around.doubles << " |" << std::endl;
    }
    std::vector<Arrival> mine;
    for (const auto& a : arrivals) {
        if (a.scheduled_ms >= first && a.scheduled_ms < to) mine.push_back(a);
    }
    const auto stem = o.out_dir / "failover";
    WriteCsv(stem.string() + ".csv", mine, fires);
    const bool plotted = PlotLag(stem,
                                 std::to_string(rate) + " fires/s on " + std::to_string(o.nodes) +
                                     " nodes: lag with the master killed (kill -9, then SIGTERM)",
                                 mine, first, marks);
    std::cout << "\nwhole run: expected " << overall.expected << ", received " << overall.received << ", misses "
              << overall.misses << ", lost " << overall.lost << ", doubles " << overall.doubles << ", p99 lag "
              << Fmt(overall.lag_ms.p99) << " ms, max " << Fmt(overall.lag_ms.max) << " ms" << std::endl;
    if (o.check && (overall.received == 0 || overall.misses > 0 || overall.doubles > 0)) ok = false;
    return {{"rate", rate},
            {"nodes", o.nodes},
            {"kills_per_signal", o.kills},
            {"pause_s", o.pause},
            {"events", event_docs},
            {"overall", overall.Json()},
            {"sdk", SdkStats(sink)},
            {"csv", stem.string() + ".csv"},
            {"plot", plotted ? json(stem.string() + ".png") : json(nullptr)}};
}

// ---- footprint and scale ----

// The cluster options of a scenario whose run works in its own folder `name` of the output folder.
ClusterOptions InRunDir(const BenchOptions& o, const std::string& name) {
    auto co = o.cluster;
    co.run_dir = o.out_dir / name;
    return co;
}

void InsertIdleJobs(Cluster& cluster, int count) {
    if (count <= 0) return;
    JobBatch idle;
    idle.tag = "idle";
    idle.count = count;
    idle.schedule_expr = "0 0 0 * * ?";
    idle.first_ms = NextSecond(WallMs(), 86'400'000);  // not due for a day
    idle.read_back = false;
    const auto t0 = WallUs();
    InsertJobs(cluster.db(), idle);
    spdlog::info("inserted {} idle jobs in {:.1f} s", count, (WallUs() - t0) / 1e6);
}

json Footprint(const BenchOptions& o) {
    std::vector<int> counts = o.job_counts.empty() ? std::vector<int>{0, 10000, 100000} : o.job_counts;
    std::cout << "\n| jobs in table | start to /readyz (ms) | RSS after 5 s (MiB) | RSS after 15 s (MiB) |\n"
              << "|---|---|---|---|\n";
    json rows = json::array();
    for (int count : counts) {
        const auto co = InRunDir(o, "footprint-" + std::to_string(count));
        Cluster cluster(co);
        cluster.StartDatabase();
        InsertIdleJobs(cluster, count);
        auto& node = cluster.StartNode(1);
        cluster.WaitForMaster(30s);
        SleepFor(5s);
        const double rss5 = static_cast<double>(RssKib(node.process->pid())) / 1024.0;
        SleepFor(10s);
        const double rss15 = static_cast<double>(RssKib(node.process->pid())) / 1024.0;
        const double ready_ms = (node.ready_us - node.spawned_us) / 1000.0;
        rows.push_back({{"jobs", count}, {"ready_ms", ready_ms}, {"rss_mib_5s", rss5}, {"rss_mib_15s", rss15}});
        std::cout << "| " << count << " | " << Fmt(ready_ms) << " | " << Fmt(rss5) << " | " << Fmt(rss15) << " |"
                  << std::endl;
    }
    return {{"rows", rows}};
}

json Explain(Cluster& cluster, const std::string& sql) {
    if (cluster.db().backend() != db::Backend::kMySql) return json(nullptr);
    auto rows = cluster.db().Run([&](soci::session& s) {
        json out = json::array();
        const std::string q = "EXPLAIN " + sql;
        soci::rowset<soci::row> rs = s.prepare << q;
        for (const auto& r : rs) {
            json row = json::object();
            for (std::size_t i = 0; i < r.size(); ++i) {
                const auto& p = r.get_properties(i);
                if (r.get_indicator(i) == soci::i_null) {
                    row[p.get_name()] = nullptr;
                } else if (p.get_data_type() == soci::dt_string) {
                    row[p.get_name()] = r.get<std::string>(i);
                } else if (p.get_data_type() == soci::dt_long_long) {
                    row[p.get_name()] = r.get<long long>(i);
                } else if (p.get_data_type() == soci::dt_integer) {
                    row[p.get_name()] = r.get<int>(i);
                } else if (p.get_data_type() == soci::dt_unsigned_long_long) {
                    row[p.get_name()] = r.get<unsigned long long>(i);
                } else if (p.get_data_type() == soci::dt_double) {
                    row[p.get_name()] = r.get<double>(i);
                }
            }
            out.push_back(row);
        }
        return out;
    });
    return rows.ok() ? *rows : json(rows.status().ToString());
}

json Scale(const BenchOptions& o) {
    std::vector<int> counts = o.job_counts.empty() ? std::vector<int>{10000, 100000, 1000000} : o.job_counts;
    const int rate = o.rates.front();
    std::cout << "\n| idle jobs | + active jobs | master scans/s | mean scan (ms) | p99 lag (ms) | misses | doubles |\n"
              << "|---|---|---|---|---|---|---|\n";
    json rows = json::array();
    for (int count : counts) {
        const auto co = InRunDir(o, "scale-" + std::to_string(count));
        SinkCluster started(co, o.nodes, co.run_dir / "spool", [&](Cluster& c) { InsertIdleJobs(c, count); });
        auto& cluster = started.cluster;
        auto& sink = started.sink;
        const std::int64_t first = NextSecond(WallMs(), 3000);
        auto plans = CreateLoad(cluster, "active", rate, o.schedule, first);
        const std::int64_t from = first + o.warmup * 1000LL;
        const std::int64_t to = from + o.seconds * 1000LL;
        WaitUntilMs(from, "warm-up");
        const auto a = SampleScans(cluster);
        WaitUntilMs(to, "measuring scans with " + std::to_string(count) + " idle jobs");
        const auto b = SampleScans(cluster);
        DisableJobs(cluster, plans);
        SleepFor(3s);
        const auto w = Analyse(plans, sink.Snapshot(), ReadFires(cluster.db(), first, to), from, to);
        const auto scans = ScanDelta(a, b, o.seconds);
        json explain = {
            {"select_due",
             Explain(cluster, "SELECT id FROM job WHERE enabled = 1 AND next_fire_time <= " +
                                  std::to_string(WallMs() + 2000) + " ORDER BY next_fire_time, id LIMIT 500")},
            {"earliest_due", Explain(cluster, "SELECT MIN(next_fire_time) FROM job WHERE enabled = 1")},
            {"orphans", Explain(cluster,
                                "SELECT id FROM job_fire WHERE status IN ('pending') AND (assigned_node IS NULL OR "
                                "assigned_node NOT IN ('a', 'b', 'c')) ORDER BY due_at, id LIMIT 500")},
            {"followups", Explain(cluster, "SELECT id FROM job_fire WHERE followup = 1 ORDER BY id LIMIT 500")}};
        rows.push_back({{"idle_jobs", count},
                        {"active_jobs", rate},
                        {"master_scans", scans},
                        {"window", w.Json()},
                        {"explain", explain}});
        std::cout << "| " << count << " | " << rate << " | "
                  << (scans.is_null() ? std::string("-") : Fmt(scans["scans_per_s"].get<double>(), 1)) << " | "
                  << (scans.is_null() ? std::string("-") : Fmt(scans["mean_ms"].get<double>(), 2)) << " | "
                  << Fmt(w.lag_ms.p99) << " | " << w.misses << " | " << w.doubles << " |" << std::endl;
    }
    return {{"rows", rows}};
}

// ---- fixed cost ----

// What the cluster costs the database when it has little or nothing to do: statements, commits and
// CPU per second with only idle jobs (not due for a day), then with each --rate of spread load.
// A row per load; the statements are MariaDB's `Questions` (every statement the nodes sent).
json FixedCost(const BenchOptions& o) {
    const int idle_jobs = o.job_counts.empty() ? 1000 : o.job_counts.front();
    const auto co = InRunDir(o, "fixedcost");
    SinkCluster started(co, o.nodes, co.run_dir / "spool", [&](Cluster& c) {
        if (c.db().backend() != db::Backend::kMySql) throw std::invalid_argument("fixedcost: needs MariaDB");
        InsertIdleJobs(c, idle_jobs);
    });
    auto& cluster = started.cluster;  // its sink executes the load's fires
    std::cout << "\n| nodes | idle jobs | fires/s | statements/s | selects/s | updates/s | inserts/s | commits/s | "
                 "MariaDB CPU % | nodes CPU % | load at start |\n"
              << "|---|---|---|---|---|---|---|---|---|---|---|\n";
    json rows = json::array();
    std::vector<int> loads = {0};
    loads.insert(loads.end(), o.rates.begin(), o.rates.end());
    for (const int rate : loads) {
        std::vector<JobPlan> plans;
        std::int64_t from = NextSecond(WallMs(), 1000) + o.warmup * 1000LL;
        if (rate > 0) {
            const std::int64_t first = NextSecond(WallMs(), 3000);
            plans = CreateLoad(cluster, "load" + std::to_string(rate), rate, "spread", first);
            from = first + o.warmup * 1000LL;
        }
        const std::int64_t to = from + o.seconds * 1000LL;
        WaitUntilMs(from, "warm-up at " + std::to_string(rate) + "/s");
        const std::string load_start = LoadAvg();
        const auto counters_a = StatementCounters(cluster);
        const auto cpu_a = SampleCpu(cluster);
        WaitUntilMs(to, "measuring the fixed cost at " + std::to_string(rate) + "/s");
        const auto cpu_b = SampleCpu(cluster);
        const auto counters_b = StatementCounters(cluster);
        DisableJobs(cluster, plans);
        const double seconds = static_cast<double>(o.seconds);
        json per_s = json::object();
        for (const auto& [k, v] : counters_b) {
            if (counters_a.count(k)) per_s[k] = std::stod(Fmt((v - counters_a.at(k)) / seconds, 1));
        }
        double nodes_ms = 0;
        for (const auto& [pid, ms] : cpu_b.nodes) {
            if (auto it = cpu_a.nodes.find(pid); it != cpu_a.nodes.end()) nodes_ms += ms - it->second;
        }
        const double nodes_percent = nodes_ms / (seconds * 10.0);
        const json mariadb_percent = cpu_a.mariadb && cpu_b.mariadb
                                         ? json(std::stod(Fmt((*cpu_b.mariadb - *cpu_a.mariadb) / (seconds * 10.0), 1)))
                                         : json(nullptr);
        const auto at = [&per_s](const char* key) {
            return per_s.contains(key) ? Fmt(per_s[key].get<double>(), 1) : std::string("-");
        };
        rows.push_back({{"nodes", o.nodes},
                        {"idle_jobs", idle_jobs},
                        {"fires_per_s", rate},
                        {"per_second", per_s},
                        {"mariadb_cpu_percent", mariadb_percent},
                        {"nodes_cpu_percent", std::stod(Fmt(nodes_percent, 1))},
                        {"loadavg_start", load_start}});
        std::cout << "| " << o.nodes << " | " << idle_jobs << " | " << rate << " | " << at("Questions") << " | "
                  << at("Com_select") << " | " << at("Com_update") << " | " << at("Com_insert") << " | "
                  << at("Com_commit") << " | " << (mariadb_percent.is_null() ? "-" : Fmt(mariadb_percent.get<double>()))
                  << " | " << Fmt(nodes_percent) << " | " << load_start << " |" << std::endl;
        if (rate > 0) SleepFor(3s);  // the load's last fires end before the next row
    }
    return {{"rows", rows}};
}

// ---- top of the hour ----

// `count` jobs tagged `tag` on the cron `expr`, hourly from `first_ms`, inserted in multi-row
// INSERTs of 1,000 rows, 10,000 rows per transaction (what `create_method` reports); their plans
// (none without `read_back`) and how long the insert took.
struct InsertedJobs {
    std::vector<JobPlan> plans;
    double seconds = 0;
};
InsertedJobs InsertHourlyJobs(Cluster& cluster, const std::string& tag, int count, const std::string& expr,
                              std::int64_t first_ms, bool read_back) {
    JobBatch batch;
    batch.tag = tag;
    batch.count = count;
    batch.schedule_expr = expr;
    batch.first_ms = first_ms;
    batch.period_ms = 3'600'000;
    batch.read_back = read_back;
    batch.rows_per_transaction = 10000;
    const auto start_us = WallUs();
    InsertedJobs out;
    out.plans = InsertJobs(cluster.db(), batch);
    out.seconds = static_cast<double>(WallUs() - start_us) / 1e6;
    return out;
}

// Points the jobs of `plans` (contiguous ids) at one fire time, in chunks of 10,000 ids so that
// no statement holds the job table long while the master scans it.
void ArmJobs(Cluster& cluster, const std::vector<JobPlan>& plans, const std::string& expr, std::int64_t at_ms) {
    if (plans.empty()) return;
    constexpr long long kChunk = 10000;
    const long long lo = plans.front().job_id;
    const long long hi = plans.back().job_id;
    const long long at = at_ms;
    for (long long from = lo; from <= hi; from += kChunk) {
        const long long to = std::min(hi, from + kChunk - 1);
        auto done = cluster.db().InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
            s << "UPDATE job SET schedule_expr = :e, next_fire_time = :t WHERE id BETWEEN :lo AND :hi", soci::use(expr),
                soci::use(at), soci::use(from), soci::use(to);
        });
        if (!done.ok()) throw std::runtime_error("arm jobs: " + done.ToString());
    }
}

// The sum of MariaDB's row counters (inserted, updated and deleted row versions) over a window
// per fire: what the burst cost in rows, whatever number of statements carried them.
json RowsChangedPerFire(const std::map<std::string, double>& a, const std::map<std::string, double>& b,
                        std::size_t fires) {
    if (a.empty() || b.empty() || fires == 0) return json(nullptr);
    double rows = 0;
    for (const char* key : {"Handler_write", "Handler_update", "Handler_delete"}) {
        if (a.count(key) && b.count(key)) rows += b.at(key) - a.at(key);
    }
    return std::stod(Fmt(rows / static_cast<double>(fires), 2));
}

json TopOfHour(const BenchOptions& o, bool& ok) {
    const int jobs = o.job_counts.empty() ? 10000 : o.job_counts.front();
    SinkCluster started(o.cluster, o.nodes, o.out_dir / "spool");
    auto& cluster = started.cluster;
    auto& sink = started.sink;
    TableStatistics table_stats(cluster.db(), o.table_stats);

    // Created parked (due in a day), then armed: the fire time is chosen once creation is over,
    // so the quiet period before the burst does not depend on how long creation took.
    auto created = InsertHourlyJobs(cluster, "hour", jobs, "0 0 0 * * ?", NextSecond(WallMs(), 86'400'000),
                                    /*read_back=*/true);
    auto& plans = created.plans;
    const double create_s = created.seconds;
    const auto arm_us = WallUs();
    const std::int64_t fire_ms = NextSecond(WallMs(), o.quiet_seconds * 1000LL);
    // That second of every hour (UTC, the jobs' time zone): the job fires once in the run.
    const std::string expr =
        std::to_string(fire_ms / 1000 % 60) + " " + std::to_string(fire_ms / 60000 % 60) + " * * * ?";
    ArmJobs(cluster, plans, expr, fire_ms);
    for (auto& p : plans) p.first_ms = fire_ms;
    const double arm_s = static_cast<double>(WallUs() - arm_us) / 1e6;
    spdlog::info("created {} jobs in {:.1f} s, armed them at '{}' in {:.1f} s", jobs, create_s, expr, arm_s);

    // The quiet period ends 4 s before the fire time: the master creates fires `lookahead` (3 s)
    // ahead, and that planning is the burst's cost.
    const std::int64_t quiet_from = WallMs();
    const auto quiet_cpu = SampleCpu(cluster);
    const auto quiet_statements = StatementCounters(cluster);
    WaitUntilMs(fire_ms - 4000, "quiet before the burst");
    const double quiet_s = static_cast<double>(WallMs() - quiet_from) / 1000.0;
    const std::string load_start = LoadAvg();
    const auto cpu_a = SampleCpu(cluster);
    const auto statements_a = StatementCounters(cluster);
    const auto table_rows_a = table_stats.Sample();
    const auto scan_a = SampleScans(cluster);
    json quiet = nullptr;
    if (quiet_s >= 1.0) {
        quiet = {
            {"seconds", std::stod(Fmt(quiet_s, 1))},
            {"nodes_cpu_percent", std::stod(Fmt(NodesCpuMs(quiet_cpu, cpu_a) / (quiet_s * 10.0), 1))},
            {"mariadb_cpu_percent", MariaDbCpuPercent(quiet_cpu, cpu_a, quiet_s)},
            {"statements_per_s",
             quiet_statements.count("Questions") && statements_a.count("Questions")
                 ? json(std::stod(Fmt((statements_a.at("Questions") - quiet_statements.at("Questions")) / quiet_s, 1)))
                 : json(nullptr)}};
    }

    // Until every fire arrived (and 2 s more for doubles), or nothing arrived for 30 s after the
    // fire time, at most 10 minutes.
    // A timeline second by second (from 3 s before the fire time) shows which phase took the
    // time and which process spent the CPU: the master creating fires, the slaves sending them.
    const auto expected = static_cast<std::size_t>(jobs);
    std::size_t seen = sink.Count();
    std::int64_t last_progress = fire_ms;
    std::int64_t last_note = 0;
    json timeline = json::array();
    auto tick_cpu = cpu_a;
    auto tick_scan = scan_a;
    std::size_t tick_arrived = seen;
    std::int64_t next_tick = fire_ms - 2000;
    while (true) {
        SleepFor(100ms);
        const std::size_t n = sink.Count();
        const std::int64_t now = WallMs();
        if (now >= next_tick) {
            const auto cpu_now = SampleCpu(cluster);
            const auto scan_now = SampleScans(cluster);
            const double nodes_ms = NodesCpuMs(tick_cpu, cpu_now);
            const double db_ms = cpu_now.mariadb && tick_cpu.mariadb ? *cpu_now.mariadb - *tick_cpu.mariadb : 0;
            timeline.push_back({{"t_s", std::stod(Fmt(static_cast<double>(now - fire_ms) / 1000.0, 1))},
                                {"arrived", n - tick_arrived},
                                {"fires_created", scan_now.fires_created - tick_scan.fires_created},
                                {"misfire_skipped", scan_now.misfire_skipped - tick_scan.misfire_skipped},
                                {"master_scans", scan_now.count - tick_scan.count},
                                {"master_scan_s", std::stod(Fmt(scan_now.sum_s - tick_scan.sum_s, 3))},
                                {"nodes_cpu_ms", std::stod(Fmt(nodes_ms, 0))},
                                {"db_cpu_ms", std::stod(Fmt(db_ms, 0))}});
            tick_cpu = cpu_now;
            tick_scan = scan_now;
            tick_arrived = n;
            next_tick += 1000;
        }
        if (n != seen) {
            seen = n;
            last_progress = std::max(now, fire_ms);
        }
        if (n >= expected && now >= fire_ms + 2000) break;
        if (now >= fire_ms && now - last_progress > 30'000) break;
        if (now > fire_ms + 600'000) break;
        if (now - last_note >= 5000) {
            spdlog::info("burst: {} of {} arrived", n, expected);
            last_note = now;
        }
    }
    // The results and fire ends are written after the arrivals: their cost belongs to the burst.
    SleepFor(3s);
    const auto cpu_b = SampleCpu(cluster);
    const auto statements_b = StatementCounters(cluster);
    const auto table_rows_b = table_stats.Sample();
    const auto scan_b = SampleScans(cluster);
    const std::string load_end = LoadAvg();
    const auto arrivals = sink.Snapshot();
    const auto fires = ReadFires(cluster.db(), fire_ms, fire_ms + 1000);
    const auto w = Analyse(plans, arrivals, fires, fire_ms, fire_ms + 1000);

    // When the fires arrived, by second after the fire time (doubles included).
    double last_arrival_s = 0;
    std::map<std::int64_t, std::size_t> by_second;
    std::vector<Arrival> mine;
    for (const auto& a : arrivals) {
        if (a.scheduled_ms != fire_ms) continue;
        mine.push_back(a);
        const double after_s = (static_cast<double>(a.arrival_us) / 1000.0 - static_cast<double>(fire_ms)) / 1000.0;
        last_arrival_s = std::max(last_arrival_s, after_s);
        ++by_second[static_cast<std::int64_t>(std::floor(after_s))];
    }
    // A job whose fire time passed `misfire-threshold` before it was planned fires by its misfire
    // policy (fire-once-now by default): a `skipped` row for the fire time and one fire at a
    // later scheduled time. Those runs arrived, late; they count as misses of the fire time.
    const std::int64_t lo_job = plans.empty() ? 0 : plans.front().job_id;
    const std::int64_t hi_job = plans.empty() ? -1 : plans.back().job_id;
    std::set<std::int64_t> jobs_run;
    std::size_t misfire_runs = 0;
    double last_misfire_run_s = 0;
    for (const auto& a : arrivals) {
        if (a.job_id < lo_job || a.job_id > hi_job || a.scheduled_ms < fire_ms) continue;
        jobs_run.insert(a.job_id);
        if (a.scheduled_ms == fire_ms) continue;
        ++misfire_runs;
        last_misfire_run_s = std::max(
            last_misfire_run_s, (static_cast<double>(a.arrival_us) / 1000.0 - static_cast<double>(fire_ms)) / 1000.0);
    }
    json arrived_by_second = json::object();
    for (const auto& [s, n] : by_second) arrived_by_second[std::to_string(s)] = n;
    WriteCsv(o.out_dir / "topofhour.csv", mine, fires);

    // Per run delivered (on time or by the misfire policy): the window paid for both.
    const std::size_t runs = w.received + misfire_runs;
    const auto cpu = CpuPerFire(cpu_a, cpu_b, runs);
    const auto rows = RowsChangedPerFire(statements_a, statements_b, runs);
    const auto table_rows = TableRowsPerFire(table_rows_a, table_rows_b, runs);
    const auto statements = PerFire(statements_a, statements_b, runs);
    const double window_s = static_cast<double>(WallMs() - (fire_ms - 3000)) / 1000.0;
    const auto scans = ScanDelta(scan_a, scan_b, window_s);
    const std::string database = (cluster.db().backend() == db::Backend::kMySql ? "MariaDB" : "SQLite");
    std::cout
        << "\n| database, nodes | jobs due at one second | delivered | missed / doubled | p50 ms | p99 ms | "
           "max ms | last fire arrived after | DB CPU ms/run | nodes CPU ms/run | rows changed / run | "
           "job_fire rows changed / run | statements / run | 1-min load at start | command: `scheduler-bench ...` |\n"
        << "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
        << "| " << database << ", " << o.nodes << " | " << jobs << " | " << w.received << " | " << w.misses
        << (w.lost ? " (+" + std::to_string(w.lost) + " lost)" : "") << " / " << w.doubles << " | "
        << Dash(w.lag_ms, w.lag_ms.p50) << " | " << Dash(w.lag_ms, w.lag_ms.p99) << " | "
        << Dash(w.lag_ms, w.lag_ms.max) << " | " << Fmt(last_arrival_s, 3) << " s | "
        << OrDash(cpu.is_null() ? json(nullptr) : cpu["mariadb"], 3) << " | "
        << OrDash(cpu.is_null() ? json(nullptr) : cpu["nodes"], 3) << " | " << OrDash(rows, 2) << " | "
        << OrDash(FireRowsPerFire(table_rows), 2) << " | "
        << OrDash(statements.is_object() && statements.contains("Questions") ? statements["Questions"] : json(nullptr),
                  2)
        << " | " << load_start << " | `" << Arguments(o) << "` |" << std::endl;
    if (!w.misses_by_status.empty()) {
        std::cout << "missed by fire status:";
        for (const auto& [status, n] : w.misses_by_status) std::cout << " " << status << " " << n;
        std::cout << "; runs at a later scheduled time (misfire policy): " << misfire_runs << ", the last "
                  << Fmt(last_misfire_run_s, 1) << " s after the fire time; jobs that ran at all: " << jobs_run.size()
                  << " of " << jobs << std::endl;
    }
    if (o.check && (w.received == 0 || w.misses > 0 || w.doubles > 0)) ok = false;
    return {{"jobs", jobs},
            {"nodes", o.nodes},
            {"create_s", std::stod(Fmt(create_s, 2))},
            {"create_method", "multi-row INSERTs of 1,000 rows, 10,000 rows per transaction (the bench's SQL)"},
            {"arm_s", std::stod(Fmt(arm_s, 2))},
            {"cron", expr},
            {"fire_ms", fire_ms},
            {"quiet", quiet},
            {"window", w.Json()},
            {"last_arrival_after_s", std::stod(Fmt(last_arrival_s, 3))},
            {"misfire_runs", misfire_runs},
            {"last_misfire_run_after_s", std::stod(Fmt(last_misfire_run_s, 3))},
            {"jobs_run_at_all", jobs_run.size()},
            {"arrived_by_second", arrived_by_second},
            {"timeline", timeline},
            {"cpu_ms_per_run", cpu},
            {"rows_changed_per_run", rows},
            {"table_rows_changed_per_run", table_rows},
            {"db_statements_per_run", statements},
            {"master_scans", scans},
            {"sdk", SdkStats(sink)},
            {"loadavg_start", load_start},
            {"loadavg_end", load_end}};
}

// ---- registered jobs ----

struct ListTiming {
    int status = 0;
    std::size_t items = 0;
    std::string next_cursor;
    Percentiles ms;
};

// `repeat` GETs of `target` in a row on fresh connections, as a browser's first visit makes them.
ListTiming TimeList(int port, const std::string& token, const std::string& target, int repeat) {
    ListTiming t;
    std::vector<double> ms;
    for (int i = 0; i < repeat; ++i) {
        const auto start = WallUs();
        std::pair<int, std::string> r;
        try {
            r = testing::HttpCallAt("127.0.0.1", static_cast<unsigned short>(port), "GET", target, "", token, 60s);
        } catch (const std::exception& e) {
            spdlog::warn("GET {}: {}", target, e.what());
            t.status = 0;
            return t;
        }
        ms.push_back(static_cast<double>(WallUs() - start) / 1000.0);
        t.status = r.first;
        if (r.first != 200) {
            spdlog::warn("GET {}: {} {}", target, r.first, r.second.substr(0, 200));
            return t;
        }
        const auto body = json::parse(r.second, nullptr, false);
        t.items = body.is_object() && body.contains("items") ? body["items"].size() : 0;
        t.next_cursor = body.is_object() && body.contains("next_cursor") && body["next_cursor"].is_string()
                            ? body["next_cursor"].get<std::string>()
                            : "";
    }
    t.ms = Summarise(std::move(ms));
    return t;
}

json ListJson(const ListTiming& t) {
    return {{"status", t.status}, {"items", t.items}, {"next_cursor", t.next_cursor}, {"ms", t.ms.Json()}};
}

json Registered(const BenchOptions& o, bool& ok) {
    const std::vector<int> counts = o.job_counts.empty() ? std::vector<int>{100000} : o.job_counts;
    const int rate = o.rates.front();
    const bool standalone = o.cluster.standalone;
    std::cout << "\n| database, processes | registered jobs | created in | start to /readyz | RSS after ready | RSS "
                 "after the window | master scans/s, mean ms | scan busy | node CPU | DB CPU | every-second jobs: p99 "
                 "lag, missed / doubled | GET /api/v1/jobs first page (median / max) | deep page (median / max) | "
                 "1-min load at start | command: `scheduler-bench ...` |\n"
              << "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    json rows = json::array();
    for (const int count : counts) {
        const auto co = InRunDir(o, "registered-" + std::to_string(count));
        Cluster cluster(co);
        cluster.StartDatabase();
        // Hourly at a minute half an hour away: none is due while the run lasts.
        const std::int64_t now = WallMs();
        const std::int64_t minute = (now / 60000 + 30) % 60;
        std::int64_t first = now / 3'600'000 * 3'600'000 + minute * 60000;
        if (first <= now) first += 3'600'000;
        const double create_s = InsertHourlyJobs(cluster, "hourly", count, "0 " + std::to_string(minute) + " * * * ?",
                                                 first, /*read_back=*/false)
                                    .seconds;
        spdlog::info("created {} hourly jobs in {:.1f} s", count, create_s);

        Node& node = cluster.StartNode(1);
        const double ready_ms = static_cast<double>(node.ready_us - node.spawned_us) / 1000.0;
        const double rss_ready = static_cast<double>(RssKib(node.process->pid())) / 1024.0;
        int api_port = node.port;
        json web_doc = nullptr;
        if (!standalone) {
            Node& web = cluster.StartWeb(1);
            api_port = web.port;
            web_doc = {{"ready_ms", static_cast<double>(web.ready_us - web.spawned_us) / 1000.0}};
        }
        cluster.WaitForMaster(30s);
        MeasuringSink sink(cluster.WebEndpoints(), o.cluster.token, co.run_dir / "spool");
        WaitForSink(cluster, sink);
        const std::int64_t active_first = NextSecond(WallMs(), 3000);
        const auto plans = CreateLoad(cluster, "active", rate, "cron", active_first);
        const std::int64_t from = active_first + o.warmup * 1000LL;
        const std::int64_t to = from + o.seconds * 1000LL;
        WaitUntilMs(from, "warm-up");
        const std::string load_start = LoadAvg();
        const auto scan_a = SampleScans(cluster);
        const auto cpu_a = SampleCpu(cluster);
        const auto statements_a = StatementCounters(cluster);
        WaitUntilMs(to, "measuring " + std::to_string(count) + " registered jobs");
        const auto cpu_b = SampleCpu(cluster);
        const auto scan_b = SampleScans(cluster);
        const auto statements_b = StatementCounters(cluster);
        const double rss_end = static_cast<double>(RssKib(node.process->pid())) / 1024.0;
        if (!web_doc.is_null()) {
            web_doc["rss_mib"] = std::stod(Fmt(RssKib(cluster.webs().at(1).process->pid()) / 1024.0, 1));
        }

        // The UI's first page, then a page deep in the table through the cursor.
        const auto first_page = TimeList(api_port, o.cluster.token, "/api/v1/jobs", 5);
        auto max_id = cluster.db().Run([](soci::session& s) {
            long long id = 0;
            s << "SELECT MAX(id) FROM job", soci::into(id);
            return id;
        });
        const long long deep_cursor = max_id.ok() ? std::max(0LL, *max_id - rate - 1000) : 0;
        const auto deep_page =
            TimeList(api_port, o.cluster.token, "/api/v1/jobs?cursor=" + std::to_string(deep_cursor), 5);
        if (!web_doc.is_null()) {
            web_doc["rss_mib_after_lists"] = std::stod(Fmt(RssKib(cluster.webs().at(1).process->pid()) / 1024.0, 1));
        }

        SleepFor(2s);  // the window's last fires arrive
        const auto w = Analyse(plans, sink.Snapshot(), ReadFires(cluster.db(), active_first, to), from, to);
        const double seconds = static_cast<double>(o.seconds);
        const auto scans = ScanDelta(scan_a, scan_b, seconds);
        const json busy =
            scan_a.ok && scan_b.ok ? json(std::stod(Fmt((scan_b.sum_s - scan_a.sum_s) / seconds, 4))) : json(nullptr);
        const double node_percent = NodesCpuMs(cpu_a, cpu_b) / (seconds * 10.0);
        const json db_percent = MariaDbCpuPercent(cpu_a, cpu_b, seconds);
        // Statements and index/table rows read per second: a statement that walks the job table
        // shows as rows read in the order of the job count.
        json per_second = json::object();
        for (const auto& [k, v] : statements_b) {
            if (statements_a.count(k)) per_second[k] = std::stod(Fmt((v - statements_a.at(k)) / seconds, 1));
        }
        rows.push_back({{"jobs", count},
                        {"create_s", std::stod(Fmt(create_s, 2))},
                        {"create_method", "multi-row INSERTs of 1,000 rows, 10,000 rows per transaction"},
                        {"ready_ms", ready_ms},
                        {"rss_mib_ready", std::stod(Fmt(rss_ready, 1))},
                        {"rss_mib_end", std::stod(Fmt(rss_end, 1))},
                        {"master_scans", scans},
                        {"scan_busy_share", busy},
                        {"node_cpu_percent", std::stod(Fmt(node_percent, 1))},
                        {"mariadb_cpu_percent", db_percent},
                        {"mariadb_per_second", per_second},
                        {"active_jobs", rate},
                        {"window", w.Json()},
                        {"list_first_page", ListJson(first_page)},
                        {"list_deep_page", ListJson(deep_page)},
                        {"deep_cursor", deep_cursor},
                        {"web", web_doc},
                        {"loadavg_start", load_start}});
        const auto page = [](const ListTiming& t) {
            if (t.status != 200) return "HTTP " + std::to_string(t.status);
            return Fmt(t.ms.p50) + " / " + Fmt(t.ms.max) + " ms (" + std::to_string(t.items) + " jobs)";
        };
        std::cout << "| " << (standalone ? "SQLite, standalone" : "MariaDB, trigger + web") << " | " << count << " | "
                  << Fmt(create_s, 1) << " s | " << Fmt(ready_ms) << " ms | " << Fmt(rss_ready) << " MiB | "
                  << Fmt(rss_end) << " MiB | "
                  << (scans.is_null()
                          ? std::string("-")
                          : Fmt(scans["scans_per_s"].get<double>(), 1) + ", " + Fmt(scans["mean_ms"].get<double>(), 2))
                  << " | " << (busy.is_null() ? std::string("-") : Fmt(busy.get<double>() * 100.0, 2) + " %") << " | "
                  << Fmt(node_percent) << " % | "
                  << (db_percent.is_null() ? std::string("(in the node)") : Fmt(db_percent.get<double>()) + " %")
                  << " | " << Dash(w.lag_ms, w.lag_ms.p99) << " ms, " << w.misses << " / " << w.doubles << " | "
                  << page(first_page) << " | " << page(deep_page) << " | " << load_start << " | `" << Arguments(o)
                  << "` |" << std::endl;
        const bool sane = first_page.status == 200 && deep_page.status == 200 && first_page.items > 0 &&
                          deep_page.items > 0 && w.received > 0 && w.misses == 0 && w.doubles == 0 && rss_ready > 0 &&
                          ready_ms > 0;
        if (o.check && !sane) ok = false;
    }
    return {{"rows", rows}};
}

}  // namespace

// ---- retention ----

// Rows and bytes of the fire history, and the nodes' memory, while the load runs.
struct HistorySample {
    double t_s = 0;
    long long fires = 0;
    long long ended = 0;
    long long logs = 0;
    double table_mib = 0;  ///< MariaDB: data + index of job_fire and job_fire_log; SQLite: file + WAL
    double rss_mib = 0;    ///< summed over the nodes
};

HistorySample SampleHistory(Cluster& cluster, std::int64_t t0_ms) {
    HistorySample h;
    h.t_s = static_cast<double>(WallMs() - t0_ms) / 1000.0;
    auto counted = cluster.db().Run([&](soci::session& s) {
        s << "SELECT COUNT(*) FROM job_fire", soci::into(h.fires);
        s << "SELECT COUNT(*) FROM job_fire WHERE status IN ('succeeded', 'failed', 'timeout', 'killed', 'lost', "
             "'skipped')",
            soci::into(h.ended);
        s << "SELECT COUNT(*) FROM job_fire_log", soci::into(h.logs);
        if (s.get_backend_name() == "mysql") {
            // InnoDB's statistics lag the rows by up to a few seconds; they show the trend.
            long long bytes = 0;
            s << "SELECT COALESCE(SUM(data_length + index_length), 0) FROM information_schema.TABLES "
                 "WHERE table_schema = DATABASE() AND table_name IN ('job_fire', 'job_fire_log')",
                soci::into(bytes);
            h.table_mib = static_cast<double>(bytes) / 1048576.0;
        }
    });
    if (!counted.ok()) spdlog::warn("history sample: {}", counted.ToString());
    if (cluster.url().backend == db::Backend::kSqlite) {
        std::error_code ec;
        double bytes = 0;
        for (const char* suffix : {"", "-wal"}) {
            const auto size = std::filesystem::file_size(cluster.url().path + suffix, ec);
            if (!ec) bytes += static_cast<double>(size);
        }
        h.table_mib = bytes / 1048576.0;
    }
    for (auto& [index, node] : cluster.nodes()) {
        if (node.process) h.rss_mib += static_cast<double>(RssKib(node.process->pid())) / 1024.0;
    }
    return h;
}

json Retention(const BenchOptions& o, bool& ok) {
    const int rate = o.rates.front();
    const int purge_s = 2;
    auto co = o.cluster;
    co.extra_node_yaml = "scheduler:\n  history-retention: " + std::to_string(o.retention) +
                         "s\n  purge-interval: " + std::to_string(purge_s) + "s\n" + co.extra_node_yaml;
    Cluster cluster(co);
    cluster.StartDatabase();
    cluster.StartNodes(o.nodes);
    MeasuringSink sink(cluster.WebEndpoints(), o.cluster.token, o.out_dir / "spool");
    WaitForSink(cluster, sink);
    cluster.WaitForMaster(30s);
    const std::int64_t t0 = WallMs();
    const auto plans = CreateLoad(cluster, "retention", rate, o.schedule, NextSecond(t0, 1000));
    // Fires ended within the retention, those still open, and a purge round of slack: what a
    // bounded table holds at most once the first fires are older than the retention.
    const long long bound = static_cast<long long>(rate) * (o.retention + 2 * purge_s + 10);
    const double settle_s = o.retention + 2.0 * purge_s + 5.0;
    std::cout
        << "\n| t (s) | fire rows | ended | stored logs | table MiB | nodes RSS MiB |\n|---|---|---|---|---|---|\n";
    json samples = json::array();
    long long peak_after_settle = 0;
    double rss_first = 0, rss_last = 0;
    for (;;) {
        const auto h = SampleHistory(cluster, t0);
        samples.push_back({{"t_s", h.t_s},
                           {"fires", h.fires},
                           {"ended", h.ended},
                           {"logs", h.logs},
                           {"table_mib", h.table_mib},
                           {"rss_mib", h.rss_mib}});
        std::cout << "| " << Fmt(h.t_s, 0) << " | " << h.fires << " | " << h.ended << " | " << h.logs << " | "
                  << Fmt(h.table_mib, 2) << " | " << Fmt(h.rss_mib, 1) << " |" << std::endl;
        if (h.t_s >= settle_s) {
            peak_after_settle = std::max(peak_after_settle, h.fires);
            if (rss_first == 0) rss_first = h.rss_mib;
            rss_last = h.rss_mib;
        }
        if (h.t_s >= o.seconds) break;
        SleepFor(std::chrono::seconds(std::max(1, std::min(10, o.seconds / 12))));
    }
    DisableJobs(cluster, plans);
    const bool bounded = peak_after_settle > 0 && peak_after_settle <= bound;
    if (o.check && !bounded) ok = false;
    std::cout << "\nrows after " << Fmt(settle_s, 0) << " s peaked at " << peak_after_settle << " (bound " << bound
              << "): " << (bounded ? "bounded" : "NOT bounded") << std::endl;
    return {{"rate", rate},
            {"retention_s", o.retention},
            {"purge_interval_s", purge_s},
            {"seconds", o.seconds},
            {"settle_s", settle_s},
            {"bound_rows", bound},
            {"peak_rows_after_settle", peak_after_settle},
            {"rss_mib_after_settle", rss_first},
            {"rss_mib_end", rss_last},
            {"bounded", bounded},
            {"samples", samples}};
}

json MachineInfo() {
    std::string model = FirstLine("/proc/cpuinfo", "model name");
    if (auto at = model.find(": "); at != std::string::npos) model = model.substr(at + 2);
    std::string mem = FirstLine("/proc/meminfo", "MemTotal:");
    const double mem_gib = mem.empty() ? 0 : std::atof(mem.c_str() + 9) / 1024.0 / 1024.0;
    return {{"nproc", std::thread::hardware_concurrency()},
            {"mem_gib", std::stod(Fmt(mem_gib, 1))},
            {"cpu", model},
            {"loadavg", LoadAvg()}};
}

json RunScenario(const BenchOptions& o, bool& ok) {
    ok = true;
    // A reused --out starts clean: an old SQLite file or spool would mix runs.
    std::filesystem::remove_all(o.out_dir / "spool");
    std::filesystem::create_directories(o.out_dir);
    json doc = {{"scenario", o.scenario},
                {"command", o.command_line},
                {"started_ms", WallMs()},
                {"machine", MachineInfo()},
                {"db", o.cluster.db_url.empty() ? o.cluster.db : "external"}};
    json result;
    if (o.scenario == "precision") {
        result = PrecisionLike(o, false, ok);
    } else if (o.scenario == "throughput") {
        result = PrecisionLike(o, true, ok);
    } else if (o.scenario == "failover") {
        result = Failover(o, ok);
    } else if (o.scenario == "footprint") {
        result = Footprint(o);
    } else if (o.scenario == "scale") {
        result = Scale(o);
    } else if (o.scenario == "retention") {
        result = Retention(o, ok);
    } else if (o.scenario == "fixedcost") {
        result = FixedCost(o);
    } else if (o.scenario == "topofhour") {
        result = TopOfHour(o, ok);
    } else if (o.scenario == "registered") {
        result = Registered(o, ok);
    } else {
        throw std::invalid_argument("unknown scenario \"" + o.scenario + "\"");
    }
    doc["result"] = result;
    doc["finished_ms"] = WallMs();
    doc["loadavg_end"] = LoadAvg();
    std::ofstream(o.out_dir / "result.json") << doc.dump(2) << "\n";
    std::cout << "\nresult: " << (o.out_dir / "result.json").string() << std::endl;
    return doc;
}

}  // namespace sched::bench
