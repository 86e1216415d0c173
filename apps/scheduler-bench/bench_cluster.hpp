#pragma once

/// The processes a benchmark run starts: a private MariaDB (scripts/mariadb.sh) or an existing
/// server (--db-url) or a SQLite file, and N scheduler-trigger nodes, each with its own config
/// in the run directory, listening on a free loopback port. Every process started here is
/// stopped by its PID in the destructor, also when a scenario throws or Ctrl-C interrupts it.
/// The processes are the test toolbox's (sched::common_testing: ChildProcess, PrivateMariaDb).
///
/// The run directory is emptied first (it belongs to the cluster). Not thread-safe: one
/// scenario thread drives a cluster.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sched/common/job_vocabulary.hpp"
#include "sched/common/testing/child_process.hpp"
#include "sched/common/testing/private_galera.hpp"
#include "sched/common/testing/private_mariadb.hpp"
#include "sched/db/database.hpp"

namespace sched::bench {

/// Set by SIGINT/SIGTERM; long waits check it and throw Interrupted.
void InstallInterruptHandler();
bool Interrupted();
struct InterruptedError : std::runtime_error {
    InterruptedError() : std::runtime_error("interrupted") {}
};
/// Sleeps, waking every 50 ms to check for an interrupt (throws InterruptedError).
void SleepFor(std::chrono::milliseconds d);

std::int64_t WallUs();
inline std::int64_t WallMs() {
    return WallUs() / 1000;
}

/// One GET over loopback (the toolbox's HttpCallAt; with BenchTls(), https verified against
/// its CA). nullopt when the connection fails or no answer comes within `timeout`.
std::optional<std::pair<int, std::string>> HttpGet(int port, const std::string& target,
                                                   std::chrono::milliseconds timeout = std::chrono::seconds(2));

/// VmRSS of a process in KiB (0 when unreadable).
std::int64_t RssKib(pid_t pid);

/// CPU time (user + system, all threads) a process has used so far, in milliseconds;
/// nullopt when unreadable (the process is gone).
std::optional<double> CpuMs(pid_t pid);

struct ClusterOptions {
    std::string db = "mariadb";  ///< mariadb (private server), galera (private three-node cluster) or sqlite
    std::string db_url;          ///< an existing MySQL/MariaDB server (admin URL); a fresh database is made in it
    std::filesystem::path trigger_bin;
    std::filesystem::path standalone_bin;  ///< started instead of scheduler-trigger when `standalone`
    std::filesystem::path web_bin;         ///< StartWeb's binary
    bool standalone = false;               ///< nodes are scheduler-standalone (trigger + REST API in one process)
    std::filesystem::path source_dir;      ///< for scripts/mariadb.sh
    std::filesystem::path run_dir;
    std::string token = "bench-token";
    std::string node_log_level = "warn";
    std::string extra_node_yaml;  ///< appended to every node's config
    int shards = 1;               ///< scheduler.shards of every node
    /// --tls: every hop over TLS. The cluster makes a CA and a certificate for 127.0.0.1 with
    /// scripts/tls-certs.sh in <run dir>/tls; every node serves HTTPS with it and calls its peers
    /// and the sink over https (peer-scheme: https), the sink serves HTTPS and calls the nodes
    /// over https, and the bench's own GETs (/readyz, /metrics) verify against the CA.
    bool tls = false;
};

/// The certificate files of a --tls run (BenchTls()), PEM paths.
struct TlsFiles {
    std::string ca;
    std::string cert;
    std::string key;
};

/// The run's TLS files once a Cluster with ClusterOptions::tls made them; null otherwise. The
/// sink (MeasuringSink) and HttpGet read it, so every scenario runs over TLS with --tls
/// without passing it around. Set once per process, before any node starts.
const TlsFiles* BenchTls();

struct Node {
    int index = 0;
    int generation = 0;
    std::string node_id;
    int port = 0;
    /// stdout in <run dir>/<node id>.out, stderr in .err; its own process group, so a Ctrl-C
    /// reaches only the bench, which then stops it by PID.
    std::unique_ptr<testing::ChildProcess> process;
    std::int64_t spawned_us = 0;
    std::int64_t ready_us = 0;  ///< first /readyz 200
};

/// The lease row: who is master at which epoch.
struct Lease {
    std::string owner;  ///< "" while nobody holds it
    std::int64_t epoch = 0;
};

class Cluster {
  public:
    explicit Cluster(ClusterOptions options);
    ~Cluster();
    Cluster(const Cluster&) = delete;
    Cluster& operator=(const Cluster&) = delete;

    /// Starts the database (or creates a fresh database in --db-url's server) and migrates it.
    void StartDatabase();
    db::Database& db() { return *db_; }
    const db::DbUrl& url() const { return url_; }

    /// Starts node `index` (a new generation and node id if it ran before) and waits for /readyz.
    Node& StartNode(int index);
    void StartNodes(int n);
    /// Starts a scheduler-web on a free port over the cluster's database and waits for /readyz;
    /// its start-up time is ready_us - spawned_us like a node's. Stopped by StopAll.
    Node& StartWeb(int index);
    std::map<int, Node>& webs() { return webs_; }
    Node& node(int index) { return nodes_.at(index); }
    std::map<int, Node>& nodes() { return nodes_; }
    /// Node index owning `node_id`, or -1.
    int IndexOf(const std::string& node_id) const;
    std::vector<std::string> WebEndpoints() const;

    Lease CurrentLease();
    /// Waits until some node holds the lease.
    Lease WaitForMaster(std::chrono::milliseconds timeout);

    /// The private MariaDB's PID (its pid file); nullopt for SQLite or --db-url.
    /// The database servers' PIDs (one MariaDB, or three Galera nodes); none for SQLite or --db-url.
    std::vector<pid_t> MariaDbPids() const;
    /// The database URL node `index` connects to.
    db::DbUrl NodeDbUrl(int index) const;

    /// Stops every node (SIGTERM, then SIGKILL) and the database; idempotent.
    void StopAll();

  private:
    void MakeCertificates();
    /// Spawns `binary` with `config` for `node` (output in <run dir>/<node id>.out/.err) and polls
    /// until it printed its port and /readyz answers 200. Returns false when the process exited
    /// during start-up; throws when it is neither ready nor gone within 60 s.
    bool SpawnAndWait(Node& node, const std::filesystem::path& binary, const std::filesystem::path& config);

    ClusterOptions options_;
    db::DbUrl url_;
    std::shared_ptr<db::Database> db_;
    std::unique_ptr<testing::PrivateMariaDb> mariadb_;  ///< in <run dir>/mariadb; its logs stay
    std::unique_ptr<testing::PrivateGalera> galera_;    ///< --db galera: in <run dir>/galera
    std::string created_database_;                      ///< dropped at the end when made in --db-url's server
    std::map<int, Node> nodes_;
    std::map<int, Node> webs_;
};

/// Jobs the bench creates: `count` jobs of app "bench", handler "sink", inserted with
/// multi-row INSERTs of up to 1000 rows.
struct JobBatch {
    std::string tag;  ///< names are bench-<tag>-<i>
    int count = 0;
    ScheduleType schedule_type = ScheduleType::kCron;
    std::string schedule_expr = "* * * * * ?";
    std::int64_t first_ms = 0;   ///< next_fire_time of job 0
    std::int64_t stride_us = 0;  ///< job i starts at first_ms + i * stride_us / 1000
    std::int64_t period_ms = 1000;
    bool anchor_at_first = false;     ///< append "@<first ms>" to the expression (fixed-rate anchor)
    bool read_back = true;            ///< false: return no plans (for big idle batches)
    int rows_per_transaction = 1000;  ///< rows inserted per commit, in INSERTs of up to 1000 rows each
};

/// A job as the analysis expects it to fire: first_ms + k * period_ms.
struct JobPlan {
    std::int64_t job_id = 0;
    std::int64_t first_ms = 0;
    std::int64_t period_ms = 0;
};

/// Inserts the batch; returns the plans in id order. Throws std::runtime_error on DB errors.
std::vector<JobPlan> InsertJobs(db::Database& db, const JobBatch& batch);

}  // namespace sched::bench
