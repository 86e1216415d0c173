#include "bench_cluster.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <spdlog/spdlog.h>

#include "sched/common/net.hpp"
#include "sched/common/node_id.hpp"
#include "sched/common/testing/wait_for.hpp"
#include "sched/db/migrator.hpp"
#include "sched/http/client.hpp"

namespace sched::bench {

using namespace std::chrono_literals;

namespace {

std::atomic<bool> g_interrupted{false};
std::optional<TlsFiles> g_tls;  // written once, before any node starts (ClusterOptions::tls)

void OnSignal(int) {
    g_interrupted = true;
}

std::string ReadFile(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void Check(const Status& s, const std::string& what) {
    if (!s.ok()) throw std::runtime_error(what + ": " + s.ToString());
}

}  // namespace

void InstallInterruptHandler() {
    struct sigaction sa {};
    sa.sa_handler = OnSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
}

bool Interrupted() {
    return g_interrupted.load();
}

void SleepFor(std::chrono::milliseconds d) {
    const auto until = std::chrono::steady_clock::now() + d;
    while (true) {
        if (Interrupted()) throw InterruptedError();
        const auto left = until - std::chrono::steady_clock::now();
        if (left <= std::chrono::steady_clock::duration::zero()) return;
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(left, 50ms));
    }
}

std::int64_t WallUs() {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

const TlsFiles* BenchTls() {
    return g_tls ? &*g_tls : nullptr;
}

namespace {

using HttpAnswer = std::optional<std::pair<int, std::string>>;

// A coroutine, not a lambda: a capturing lambda's closure would die before the frame resumes.
net::awaitable<void> GetInto(http::HttpClient* client, std::string url, Micros timeout, HttpAnswer* out) {
    // A named CallOptions: g++ 12 frees a braced temporary argument of a co_await twice.
    http::CallOptions call;
    call.timeout = timeout;
    auto r = co_await client->Get(std::move(url), std::move(call));
    if (r.ok()) out->emplace(r->status, std::move(r->body));
    client->CloseIdle();
}

// A GET over https on its own io_context: a new handshake per call, which the polls and
// samples that use it can afford (they are not on the fire path being measured).
HttpAnswer HttpsGet(int port, const std::string& target, std::chrono::milliseconds timeout) {
    net::io_context io;
    http::ClientOptions options;
    options.tls.ca_file = g_tls->ca;
    http::HttpClient client(io.get_executor(), options);
    HttpAnswer out;
    net::co_spawn(io,
                  GetInto(&client, "https://127.0.0.1:" + std::to_string(port) + target,
                          std::chrono::duration_cast<Micros>(timeout), &out),
                  net::detached);
    io.run();
    return out;
}

}  // namespace

std::optional<std::pair<int, std::string>> HttpGet(int port, const std::string& target,
                                                   std::chrono::milliseconds timeout) {
    if (g_tls) return HttpsGet(port, target, timeout);
    try {
        return testing::HttpCallAt("127.0.0.1", static_cast<unsigned short>(port), "GET", target, "", "", timeout);
    } catch (const std::exception&) {
        return std::nullopt;  // refused, reset or timed out: the caller polls again
    }
}

std::int64_t RssKib(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("VmRSS:", 0) == 0) return std::atoll(line.c_str() + 6);
    }
    return 0;
}

std::optional<double> CpuMs(pid_t pid) {
    // /proc/PID/stat: "pid (comm) state ..."; utime and stime are the 14th and 15th fields,
    // counted after the comm's closing parenthesis (a comm may hold spaces).
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat;
    if (!std::getline(in, stat)) return std::nullopt;
    const auto close = stat.rfind(')');
    if (close == std::string::npos) return std::nullopt;
    std::istringstream fields(stat.substr(close + 1));
    std::string field;
    double ticks = 0;
    for (int i = 3; i <= 15 && fields >> field; ++i) {
        if (i >= 14) ticks += std::atof(field.c_str());
    }
    return ticks * 1000.0 / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// ---- Cluster ----

Cluster::Cluster(ClusterOptions options) : options_(std::move(options)) {
    // The run directory is the cluster's own: a reused one would mix an old SQLite file, old
    // logs or an old MariaDB data directory into this run.
    std::filesystem::remove_all(options_.run_dir);
    std::filesystem::create_directories(options_.run_dir);
    if (options_.tls) MakeCertificates();
}

void Cluster::MakeCertificates() {
    // As an operator makes them (scripts/tls-certs.sh): one certificate for 127.0.0.1 and
    // localhost serves every node and the sink, each trusting the CA.
    const auto dir = options_.run_dir / "tls";
    std::string output;
    const int code = testing::RunCommand(
        {"/bin/bash", (options_.source_dir / "scripts/tls-certs.sh").string(), dir.string(), "bench"}, &output);
    if (code != 0) throw std::runtime_error("scripts/tls-certs.sh failed: " + output);
    g_tls = TlsFiles{
        .ca = (dir / "ca.crt").string(), .cert = (dir / "bench.crt").string(), .key = (dir / "bench.key").string()};
    spdlog::info("TLS on every hop: certificates in {}", dir.string());
}

Cluster::~Cluster() {
    try {
        StopAll();
    } catch (const std::exception& e) {
        spdlog::error("cleanup: {}", e.what());
    }
}

void Cluster::StartDatabase() {
    if (options_.db == "sqlite" && options_.db_url.empty()) {
        url_ = *db::ParseDbUrl("sqlite://" + (options_.run_dir / "bench.db").string());
    } else {
        std::string admin = options_.db_url;
        if (admin.empty() && options_.db == "galera") {
            std::string why;
            galera_ = testing::PrivateGalera::Start((options_.source_dir / "scripts/galera.sh").string(), &why,
                                                    options_.run_dir / "galera");
            if (!galera_) throw std::runtime_error(why);
            spdlog::info("private Galera cluster in {}", (options_.run_dir / "galera").string());
            admin = galera_->url(1);
        } else if (admin.empty()) {
            // A private server's data (~150 MB per run) is of no use once it stopped; its logs
            // stay in the run directory. A half-started server is stopped before Start returns.
            testing::PrivateMariaDbOptions mariadb;
            mariadb.dir = options_.run_dir / "mariadb";
            mariadb.keep = testing::PrivateMariaDbOptions::Keep::kLogs;
            std::string why;
            mariadb_ =
                testing::PrivateMariaDb::Start((options_.source_dir / "scripts/mariadb.sh").string(), mariadb, &why);
            if (!mariadb_) throw std::runtime_error(why);
            spdlog::info("private MariaDB in {}", mariadb_->dir().string());
            admin = mariadb_->url();
        }
        auto parsed = db::ParseDbUrl(admin);
        if (!parsed.ok()) throw std::runtime_error("--db-url: " + parsed.status().ToString());
        if (parsed->backend == db::Backend::kSqlite) {
            url_ = *parsed;
        } else {
            auto admin_db = db::Database::Open(*parsed);
            Check(admin_db.status(), "connect " + parsed->Redacted());
            created_database_ = "bench_" + RandomHex(8);
            const std::string create = "CREATE DATABASE " + created_database_;
            Check((*admin_db)->Run([&](soci::session& s) { s << create; }), "create database");
            url_ = *parsed;
            url_.database = created_database_;
            url_.pool = 16;
        }
    }
    auto opened = db::Database::Open(url_);
    Check(opened.status(), "open " + url_.Redacted());
    db_ = *opened;
    auto migrated = db::Migrator(*db_).Migrate();
    Check(migrated.status(), "migrate");
    spdlog::info("database {}", url_.Redacted());
}

bool Cluster::SpawnAndWait(Node& node, const std::filesystem::path& binary, const std::filesystem::path& config) {
    node.spawned_us = WallUs();
    node.ready_us = 0;
    node.port = 0;
    const auto log_prefix = (options_.run_dir / node.node_id).string();
    const auto out_path = log_prefix + ".out";
    node.process = std::make_unique<testing::ChildProcess>(
        std::vector<std::string>{binary.string(), "--config", config.string()},
        testing::SpawnOptions{
            .output = testing::OutputFile{.path = out_path, .stderr_path = log_prefix + ".err", .truncate = true},
            .own_process_group = true});
    // The port is printed once the process listens; /readyz answers 200 from then on while the
    // DB is reachable. Both are polled tightly so start-up time is measured to ~1 ms.
    bool exited = false;
    const bool settled = testing::WaitFor(
        [&] {
            if (Interrupted()) throw InterruptedError();
            if (!node.process->Running()) {
                exited = true;
                return true;
            }
            if (node.port == 0) {
                const std::string out = ReadFile(out_path);
                const std::string needle = std::string("listening on ") + (g_tls ? "https" : "http") + "://127.0.0.1:";
                const auto at = out.find(needle);
                if (at != std::string::npos && out.find('\n', at) != std::string::npos) {
                    node.port = std::atoi(out.c_str() + at + needle.size());
                }
            }
            if (node.port != 0) {
                auto r = HttpGet(node.port, "/readyz", 500ms);
                if (r && r->first == 200) {
                    node.ready_us = WallUs();
                    return true;
                }
            }
            return false;
        },
        60s, 1ms);
    if (!settled) throw std::runtime_error(node.node_id + " not ready in 60 s");
    return !exited;
}

Node& Cluster::StartNode(int index) {
    Node& node = nodes_[index];
    if (node.process && node.process->Running()) throw std::logic_error("node " + std::to_string(index) + " runs");
    node.index = index;
    // A restarted node listens on its old port: the sink's web endpoints (the nodes' executor
    // API) stay valid across restarts, as they would behind a fixed address in production.
    const int previous_port = node.port;
    const auto& binary = options_.standalone ? options_.standalone_bin : options_.trigger_bin;
    for (int attempt = 0; attempt < 2; ++attempt) {
        const int listen_port = attempt == 0 ? previous_port : 0;
        ++node.generation;
        node.node_id = "bench-n" + std::to_string(index) + "-g" + std::to_string(node.generation);
        const auto config = options_.run_dir / (node.node_id + ".yaml");
        std::ofstream(config)
            << "node-id: \"" << node.node_id << "\"\ntoken: \"" << options_.token << "\"\n"
            << "http:\n  listen: \"127.0.0.1:" << listen_port << "\"\n  access-log: errors\n"
            << (g_tls ? "  tls:\n    cert-file: \"" + g_tls->cert + "\"\n    key-file: \"" + g_tls->key +
                            "\"\nhttp-client:\n  tls:\n    ca-file: \"" + g_tls->ca + "\"\n    peer-scheme: https\n"
                      : "")
            << "database:\n  url: \"" << NodeDbUrl(index).ToString() << "\"\n"
            << (galera_ ? "  topology: galera\n" : "") << "log:\n  level: " << options_.node_log_level << "\n"
            << (options_.shards > 1 ? "scheduler:\n  shards: " + std::to_string(options_.shards) + "\n" : "")
            << options_.extra_node_yaml;
        if (SpawnAndWait(node, binary, config)) break;
        if (listen_port == 0) {
            throw std::runtime_error("node " + node.node_id + " exited during start-up; see " +
                                     (options_.run_dir / node.node_id).string() + ".err");
        }
        spdlog::warn("node {} could not start on its old port {}; trying a free port", node.node_id, listen_port);
    }
    spdlog::info("node {} (pid {}) ready on port {} after {:.1f} ms", node.node_id, node.process->pid(), node.port,
                 (node.ready_us - node.spawned_us) / 1000.0);
    return node;
}

Node& Cluster::StartWeb(int index) {
    Node& web = webs_[index];
    if (web.process && web.process->Running()) throw std::logic_error("web " + std::to_string(index) + " runs");
    web.index = index;
    ++web.generation;
    web.node_id = "bench-web" + std::to_string(index) + "-g" + std::to_string(web.generation);
    const auto config = options_.run_dir / (web.node_id + ".yaml");
    std::ofstream(config) << "token: \"" << options_.token << "\"\n"
                          << "http:\n  listen: \"127.0.0.1:0\"\n  access-log: errors\n"
                          << (g_tls ? "  tls:\n    cert-file: \"" + g_tls->cert + "\"\n    key-file: \"" + g_tls->key +
                                          "\"\nhttp-client:\n  tls:\n    ca-file: \"" + g_tls->ca + "\"\n"
                                    : "")
                          << "database:\n  url: \"" << NodeDbUrl(index).ToString() << "\"\n"
                          << (galera_ ? "  topology: galera\n" : "") << "log:\n  level: " << options_.node_log_level
                          << "\n";
    if (!SpawnAndWait(web, options_.web_bin, config)) {
        throw std::runtime_error("web " + web.node_id + " exited during start-up; see " +
                                 (options_.run_dir / web.node_id).string() + ".err");
    }
    spdlog::info("web {} (pid {}) ready on port {} after {:.1f} ms", web.node_id, web.process->pid(), web.port,
                 (web.ready_us - web.spawned_us) / 1000.0);
    return web;
}

void Cluster::StartNodes(int n) {
    for (int i = 1; i <= n; ++i) StartNode(i);
}

int Cluster::IndexOf(const std::string& node_id) const {
    for (const auto& [i, n] : nodes_) {
        if (n.node_id == node_id) return i;
    }
    return -1;
}

std::vector<std::string> Cluster::WebEndpoints() const {
    std::vector<std::string> out;
    const std::string scheme = g_tls ? "https" : "http";
    for (const auto& [i, n] : nodes_) out.push_back(scheme + "://127.0.0.1:" + std::to_string(n.port));
    return out;
}

std::vector<pid_t> Cluster::MariaDbPids() const {
    if (galera_) return galera_->Pids();
    if (!mariadb_) return {};
    const std::string pid = ReadFile(mariadb_->dir() / "mariadbd.pid");
    const long value = std::atol(pid.c_str());
    return value > 0 ? std::vector<pid_t>{static_cast<pid_t>(value)} : std::vector<pid_t>{};
}

// On Galera, node i writes through Galera node (i - 1) % 3 + 1: the nodes spread over the
// database nodes, as a deployment would.
db::DbUrl Cluster::NodeDbUrl(int index) const {
    if (!galera_) return url_;
    db::DbUrl url = url_;
    url.port = db::ParseDbUrl(galera_->url((index - 1) % 3 + 1))->port;
    return url;
}

Lease Cluster::CurrentLease() {
    auto lease = db_->Run([](soci::session& s) {
        Lease l;
        soci::indicator ind = soci::i_null;
        s << "SELECT owner, epoch FROM scheduler_lock WHERE namespace = 'master'", soci::into(l.owner, ind),
            soci::into(l.epoch);
        if (ind != soci::i_ok) l.owner.clear();
        return l;
    });
    return lease.ok() ? *lease : Lease{};
}

Lease Cluster::WaitForMaster(std::chrono::milliseconds timeout) {
    Lease l;
    const bool elected = testing::WaitFor(
        [&] {
            if (Interrupted()) throw InterruptedError();
            l = CurrentLease();
            return !l.owner.empty();
        },
        timeout, 20ms);
    if (!elected) throw std::runtime_error("no master elected within " + std::to_string(timeout.count()) + " ms");
    return l;
}

void Cluster::StopAll() {
    for (auto& [i, w] : webs_) {
        if (w.process && w.process->Running()) w.process->Stop(15s);
    }
    webs_.clear();
    for (auto& [i, n] : nodes_) {
        if (!n.process || !n.process->Running()) continue;
        const auto code = n.process->Stop(15s);
        if (code == 128 + SIGKILL) {
            spdlog::warn("node {} (pid {}) did not stop within 15 s of SIGTERM: SIGKILL", n.node_id, n.process->pid());
        }
    }
    nodes_.clear();
    if (!created_database_.empty() && db_ && !options_.db_url.empty()) {
        const std::string drop = "DROP DATABASE " + created_database_;
        (void)db_->Run([&](soci::session& s) { s << drop; });
        created_database_.clear();
    }
    db_.reset();
    galera_.reset();  // stopped by PIDs, its directory removed
    if (mariadb_) {
        std::string output;
        if (!mariadb_->Stop(&output)) {
            spdlog::error("scripts/mariadb.sh stop {} failed: {}", mariadb_->dir().string(), output);
        }
        mariadb_.reset();  // removes the data dir once the server stopped
    }
}

std::vector<JobPlan> InsertJobs(db::Database& db, const JobBatch& batch) {
    std::vector<JobPlan> plans;
    plans.reserve(static_cast<std::size_t>(batch.count));
    const std::int64_t now = WallMs();
    constexpr int kRowsPerInsert = 1000;
    std::vector<std::string> pending;  // INSERTs of the transaction being built
    for (int from = 0; from < batch.count; from += kRowsPerInsert) {
        const int to = std::min(batch.count, from + kRowsPerInsert);
        std::string sql =
            "INSERT INTO job (name, app, handler, params, schedule_type, schedule_expr, next_fire_time, created_at, "
            "updated_at) VALUES ";
        sql.reserve(static_cast<std::size_t>(to - from) * 120);
        for (int i = from; i < to; ++i) {
            const std::int64_t first = batch.first_ms + static_cast<std::int64_t>(i) * batch.stride_us / 1000;
            if (i != from) sql += ',';
            // fixed-rate anchors at the epoch unless the expression names an anchor: "1s@<first ms>".
            const std::string expr =
                batch.anchor_at_first ? batch.schedule_expr + "@" + std::to_string(first) : batch.schedule_expr;
            sql += "('bench-" + batch.tag + "-" + std::to_string(i) + "','bench','sink','','" +
                   std::string(ScheduleTypeName(batch.schedule_type)) + "','" + expr + "'," + std::to_string(first) +
                   "," + std::to_string(now) + "," + std::to_string(now) + ")";
        }
        pending.push_back(std::move(sql));
        if (static_cast<int>(pending.size()) * kRowsPerInsert >= batch.rows_per_transaction || to == batch.count) {
            auto done = db.InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
                for (const auto& insert : pending) s << insert;
            });
            Check(done, "insert jobs");
            pending.clear();
        }
    }
    if (!batch.read_back) return plans;
    // Ids are assigned in insertion order, so the i-th row of this tag by id is job i.
    const std::string pattern = "bench-" + batch.tag + "-%";
    auto rows = db.Run([&](soci::session& s) {
        std::vector<JobPlan> p;
        long long id = 0;
        long long first = 0;
        soci::statement st = (s.prepare << "SELECT id, next_fire_time FROM job WHERE name LIKE :p ORDER BY id",
                              soci::use(pattern), soci::into(id), soci::into(first));
        st.execute();
        while (st.fetch()) p.push_back({id, first, batch.period_ms});
        return p;
    });
    Check(rows.status(), "read job ids");
    if (rows->size() != static_cast<std::size_t>(batch.count)) {
        throw std::runtime_error("inserted " + std::to_string(batch.count) + " jobs, read back " +
                                 std::to_string(rows->size()));
    }
    return *rows;
}

}  // namespace sched::bench
