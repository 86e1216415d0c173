#include "bench_cluster.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <spdlog/spdlog.h>

#include "sched/common/node_id.hpp"
#include "sched/db/migrator.hpp"

namespace sched::bench {

using namespace std::chrono_literals;

namespace {

std::atomic<bool> g_interrupted{false};

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

std::optional<std::pair<int, std::string>> HttpGet(int port, const std::string& target,
                                                   std::chrono::milliseconds timeout) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return std::nullopt;
    timeval tv{};
    tv.tv_sec = static_cast<long>(timeout.count() / 1000);
    tv.tv_usec = static_cast<long>((timeout.count() % 1000) * 1000);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(fd);
        return std::nullopt;
    }
    const std::string request = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
        ::close(fd);
        return std::nullopt;
    }
    std::string response;
    char buf[16384];
    while (true) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        response.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    // "HTTP/1.1 200 OK\r\n...\r\n\r\nbody"
    if (response.size() < 12 || response.compare(0, 5, "HTTP/") != 0) return std::nullopt;
    const int status = std::atoi(response.c_str() + 9);
    const auto body_at = response.find("\r\n\r\n");
    std::string body = body_at == std::string::npos ? "" : response.substr(body_at + 4);
    if (response.find("Transfer-Encoding: chunked") != std::string::npos ||
        response.find("transfer-encoding: chunked") != std::string::npos) {
        std::string plain;
        std::size_t at = 0;
        while (at < body.size()) {
            const auto eol = body.find("\r\n", at);
            if (eol == std::string::npos) break;
            const std::size_t len = std::stoul(body.substr(at, eol - at), nullptr, 16);
            if (len == 0) break;
            plain += body.substr(eol + 2, len);
            at = eol + 2 + len + 2;
        }
        body = plain;
    }
    return std::make_pair(status, body);
}

std::int64_t RssKib(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("VmRSS:", 0) == 0) return std::atoll(line.c_str() + 6);
    }
    return 0;
}

// ---- ChildProcess ----

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::filesystem::path& log_prefix)
    : out_(log_prefix.string() + ".out"), err_(log_prefix.string() + ".err") {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setpgroup(&attr, 0);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const int rc = posix_spawn(&pid_, args[0], &actions, &attr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));
}

ChildProcess::~ChildProcess() {
    Stop(5s);
}

bool ChildProcess::running() {
    if (reaped_) return false;
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) reaped_ = true;
    return !reaped_;
}

void ChildProcess::Signal(int signo) {
    if (running()) ::kill(pid_, signo);
}

bool ChildProcess::WaitExit(std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (running()) {
        if (std::chrono::steady_clock::now() >= until) return false;
        std::this_thread::sleep_for(5ms);
    }
    return true;
}

void ChildProcess::Stop(std::chrono::milliseconds grace) {
    if (!running()) return;
    ::kill(pid_, SIGTERM);
    if (!WaitExit(grace)) {
        spdlog::warn("process {} did not stop within {} ms of SIGTERM: SIGKILL", pid_, grace.count());
        ::kill(pid_, SIGKILL);
        WaitExit(10s);
    }
}

std::string ChildProcess::StdoutText() const {
    return ReadFile(out_);
}

// ---- Cluster ----

Cluster::Cluster(ClusterOptions options) : options_(std::move(options)) {
    // The run directory is the cluster's own: a reused one would mix an old SQLite file, old
    // logs or an old MariaDB data directory into this run.
    std::filesystem::remove_all(options_.run_dir);
    std::filesystem::create_directories(options_.run_dir);
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
        if (admin.empty()) {
            mariadb_dir_ = options_.run_dir / "mariadb";
            const std::string cmd =
                "'" + (options_.source_dir / "scripts/mariadb.sh").string() + "' start '" + mariadb_dir_.string() + "'";
            mariadb_started_ = true;  // stop even a half-started server
            if (std::system(cmd.c_str()) != 0) throw std::runtime_error("scripts/mariadb.sh start failed");
            admin = ReadFile(mariadb_dir_ / "url");
            while (!admin.empty() && (admin.back() == '\n' || admin.back() == ' ')) admin.pop_back();
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

Node& Cluster::StartNode(int index) {
    Node& node = nodes_[index];
    if (node.process && node.process->running()) throw std::logic_error("node " + std::to_string(index) + " runs");
    node.index = index;
    // A restarted node listens on its old port: the sink's web endpoints (the nodes' executor
    // API) stay valid across restarts, as they would behind a fixed address in production.
    const int previous_port = node.port;
    for (int attempt = 0; attempt < 2; ++attempt) {
        const int listen_port = attempt == 0 ? previous_port : 0;
        ++node.generation;
        node.node_id = "bench-n" + std::to_string(index) + "-g" + std::to_string(node.generation);
        const auto config = options_.run_dir / (node.node_id + ".yaml");
        std::ofstream(config) << "node-id: \"" << node.node_id << "\"\ntoken: \"" << options_.token << "\"\n"
                              << "http:\n  listen: \"127.0.0.1:" << listen_port << "\"\n  access-log: errors\n"
                              << "database:\n  url: \"" << url_.ToString() << "\"\n"
                              << "log:\n  level: " << options_.node_log_level << "\n"
                              << options_.extra_node_yaml;
        node.spawned_us = WallUs();
        node.ready_us = 0;
        node.port = 0;
        node.process = std::make_unique<ChildProcess>(
            std::vector<std::string>{options_.trigger_bin.string(), "--config", config.string()},
            options_.run_dir / node.node_id);
        // The port is printed once the node listens; /readyz answers 200 from then on while the
        // DB is reachable. Both are polled tightly so start-up time is measured to ~1 ms.
        const auto deadline = std::chrono::steady_clock::now() + 60s;
        bool exited = false;
        while (node.ready_us == 0) {
            if (Interrupted()) throw InterruptedError();
            if (!node.process->running()) {
                exited = true;
                break;
            }
            if (std::chrono::steady_clock::now() > deadline) {
                throw std::runtime_error(node.node_id + " not ready in 60 s");
            }
            if (node.port == 0) {
                const std::string out = node.process->StdoutText();
                const std::string needle = "listening on http://127.0.0.1:";
                const auto at = out.find(needle);
                if (at != std::string::npos && out.find('\n', at) != std::string::npos) {
                    node.port = std::atoi(out.c_str() + at + needle.size());
                }
            }
            if (node.port != 0) {
                auto r = HttpGet(node.port, "/readyz", 500ms);
                if (r && r->first == 200) {
                    node.ready_us = WallUs();
                    break;
                }
            }
            std::this_thread::sleep_for(1ms);
        }
        if (!exited) break;
        if (listen_port == 0) {
            throw std::runtime_error("node " + node.node_id + " exited during start-up; see " +
                                     node.process->stderr_path().string());
        }
        spdlog::warn("node {} could not start on its old port {}; trying a free port", node.node_id, listen_port);
    }
    spdlog::info("node {} (pid {}) ready on port {} after {:.1f} ms", node.node_id, node.process->pid(), node.port,
                 (node.ready_us - node.spawned_us) / 1000.0);
    return node;
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
    for (const auto& [i, n] : nodes_) out.push_back("http://127.0.0.1:" + std::to_string(n.port));
    return out;
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
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
        auto l = CurrentLease();
        if (!l.owner.empty()) return l;
        SleepFor(20ms);
    }
    throw std::runtime_error("no master elected within " + std::to_string(timeout.count()) + " ms");
}

void Cluster::StopAll() {
    for (auto& [i, n] : nodes_) {
        if (n.process) n.process->Stop();
    }
    nodes_.clear();
    if (!created_database_.empty() && db_ && !options_.db_url.empty()) {
        const std::string drop = "DROP DATABASE " + created_database_;
        (void)db_->Run([&](soci::session& s) { s << drop; });
        created_database_.clear();
    }
    db_.reset();
    if (mariadb_started_) {
        mariadb_started_ = false;
        const std::string cmd =
            "'" + (options_.source_dir / "scripts/mariadb.sh").string() + "' stop '" + mariadb_dir_.string() + "'";
        if (std::system(cmd.c_str()) != 0) {
            spdlog::error("scripts/mariadb.sh stop {} failed", mariadb_dir_.string());
        } else {
            // A private server's data (~150 MB per run) is of no use once it stopped.
            std::error_code ec;
            std::filesystem::remove_all(mariadb_dir_ / "data", ec);
        }
    }
}

std::vector<JobPlan> InsertJobs(db::Database& db, const JobBatch& batch) {
    std::vector<JobPlan> plans;
    plans.reserve(static_cast<std::size_t>(batch.count));
    const std::int64_t now = WallMs();
    constexpr int kRowsPerInsert = 1000;
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
        auto done = db.InTransaction(db::TxMode::kWrite, [&](soci::session& s) { s << sql; });
        Check(done, "insert jobs");
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
