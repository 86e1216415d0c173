// scheduler-standalone: the whole scheduler in one process on an embedded SQLite file: a trigger
// node (master + slave) whose port also serves the web module (REST API, web UI, and the SDK's
// registry and callback routes). Wiring only.

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <sys/stat.h>

#include <spdlog/spdlog.h>

#include "sched/common/announce.hpp"
#include "sched/common/app_main.hpp"
#include "sched/common/config.hpp"
#include "sched/common/crypto.hpp"
#include "sched/common/log_fields.hpp"
#include "sched/cron/schedule.hpp"
#include "sched/http/server.hpp"
#include "sched/http/url.hpp"
#include "sched/store/job.hpp"
#include "sched/store/token.hpp"
#include "sched/trigger/node.hpp"
#include "sched/web/auth.hpp"
#include "sched/web/web_api.hpp"

namespace {

constexpr const char* kUsage = R"(usage: scheduler-standalone [--config FILE] [--check-config] [--demo]

Runs the scheduler in one process on an embedded SQLite database: it schedules and dispatches
jobs and serves the web UI (/), the REST API (/api/v1, see /api/v1/openapi.json), the SDK's
registry and callback API, /healthz, /readyz, /metrics and /status.

  --config FILE   YAML configuration (default: config/standalone.yaml)
  --check-config  validate the configuration (with the environment), print "config ok" and exit
                  0, or print the error naming the key and exit 2; the database is not touched
  --demo          create the demo job "hello" (app demo, handler echo, every 10 s) if absent,
                  and an executor token for the demo client in executor-token next to the
                  SQLite file (data/executor-token, mode 0600) unless the one there is valid
  --help          print this help and exit
  --version       print the version and exit

Environment: SCHED_TOKEN (the API token; generated and printed when neither it nor `token` is
set), SCHED_DB_PASSWORD. Files it creates are private (umask 077: the data directory 0700, the
SQLite file and its -wal/-shm 0600).
Exit codes: 0 stopped cleanly, 1 runtime failure, 2 bad arguments or configuration.
)";

// The quick start's demo job: visible proof that the system fires.
sched::Status EnsureDemoJob(sched::db::Database& db) {
    sched::store::JobRepository jobs(db);
    auto existing = jobs.List({.app = "demo", .name_contains = "hello"});
    if (!existing.ok()) return existing.status();
    for (const auto& j : *existing) {
        if (j.name == "hello") return sched::Status::Ok();
    }
    auto schedule = sched::cron::Schedule::Make(sched::ScheduleType::kCron, "*/10 * * * * ?", "UTC");
    if (!schedule.ok()) return schedule.status();
    auto now = db.NowUs();
    if (!now.ok()) return now.status();
    sched::model::Job job;
    job.name = "hello";
    job.app = "demo";
    job.handler = "echo";
    job.params = R"({"greeting":"hello from the scheduler"})";
    job.schedule_type = sched::ScheduleType::kCron;
    job.schedule_expr = "*/10 * * * * ?";
    job.description = "demo job created by scheduler-standalone --demo";
    job.next_fire_time = schedule->NextFireTime(*now / 1000);
    auto created = jobs.Create(job);
    if (!created.ok() && created.status().code() != sched::Code::kAlreadyExists) return created.status();
    spdlog::info("demo job \"hello\" created: every 10 s, app demo, handler echo");
    return sched::Status::Ok();
}

// The demo client's credential: an executor token (never the cluster token), kept in a file
// only this user can read. A still-valid token in the file is kept; otherwise a new one is
// created. The file is rewritten either way (atomically), so scripts/run.sh can wait for it.
sched::Status EnsureDemoExecutorToken(sched::db::Database& db, const std::filesystem::path& file) {
    std::string secret;
    if (std::ifstream in(file); in) std::getline(in, secret);
    sched::store::TokenRepository tokens(db);
    if (secret.empty() || !tokens.FindActive(sched::crypto::Sha256Hex(secret)).ok()) {
        secret = "sched_" + sched::crypto::RandomHex(32);
        auto created =
            tokens.Create("demo-executor", sched::store::Role::kExecutor, sched::crypto::Sha256Hex(secret), {"demo"});
        if (!created.ok()) return created.status();
        spdlog::info("demo executor token created (token {}), written to {}", created->id, file.string());
    }
    std::error_code ec;
    std::filesystem::create_directories(file.parent_path().empty() ? "." : file.parent_path(), ec);
    const std::string tmp = file.string() + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return sched::Unavailable("cannot write " + tmp + ": " + std::strerror(errno));
    const std::string line = secret + "\n";
    const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    ::close(fd);
    if (!written || std::rename(tmp.c_str(), file.c_str()) != 0) {
        return sched::Unavailable("cannot write " + file.string() + ": " + std::strerror(errno));
    }
    return sched::Status::Ok();
}

// Beside the SQLite file (data/scheduler.db -> data/executor-token); "data/" for MySQL.
std::filesystem::path DemoTokenFile(const sched::db::DbUrl& url) {
    if (url.backend == sched::db::Backend::kSqlite) {
        return std::filesystem::path(url.path).parent_path() / "executor-token";
    }
    return "data/executor-token";
}

}  // namespace

int main(int argc, char** argv) {
    const sched::AppSpec spec{.name = "scheduler-standalone",
                              .version = SCHED_VERSION,
                              .usage = kUsage,
                              .default_config = "config/standalone.yaml",
                              .flags = {"--demo"}};
    const sched::ParsedArgs parsed = sched::ParseAppArgs(spec, argc, argv);
    if (parsed.exit_code) return *parsed.exit_code;
    sched::trigger::NodeConfig config;
    sched::web::LockApiOptions locks;
    sched::web::OidcOptions oidc;
    const auto loaded = sched::LoadAppConfig(spec, parsed.args, [&](const sched::ConfigNode& root) {
        locks = sched::web::LockApiOptions::FromYaml(root.Child("locks"));
        oidc = sched::web::OidcOptions::FromYaml(root.Child("oidc"));
        config = sched::trigger::NodeConfig::FromYaml(root, {.db_url = "sqlite://data/scheduler.db",
                                                             .listen = "127.0.0.1:8080",
                                                             .require_token = false,
                                                             .service_name = "scheduler-standalone"});
    });
    if (loaded) return *loaded;
    // Everything this process creates (the data directory, the SQLite file and its -wal/-shm,
    // anything added later) holds the schedule and secrets: private to its user by default.
    ::umask(077);
    sched::SetupLogging(config.log);
    bool generated_token = false;
    if (config.token.empty()) {
        // A scheduler without a token would accept anyone's calls: make one rather than run open.
        config.token = sched::web::NewSecret(16);
        generated_token = true;
    }

    sched::StopSignals signals;  // before any other thread starts
    signals.OnHangup([] { sched::http::ReloadAllTls(); });

    // The web module serves the SDK's routes (with executor tokens as well as the cluster
    // token) when `executor-api` is on.
    sched::web::WebOptions web;
    web.token = config.token;
    web.executor_api = config.executor_api;
    web.executor_ttl = config.slave.executor_ttl;
    web.node_ttl = config.scheduler.node_ttl;
    web.locks = locks;
    web.oidc = oidc;
    web.alert_addresses = config.scheduler.alert_addresses;
    web.http_client_tls = config.http_client_tls;
    sched::trigger::TriggerNode node(config);
    sched::SetProcessLogField("node", node.node_id());  // on every log line (log_fields.hpp)
    web.wake_masters = [&node] {
        node.WakeMasters();
    };  // the node's own masters, in process
    web.results_applied = [&node](const std::vector<std::int64_t>& fire_ids) {
        node.ResultsApplied(fire_ids);
    };
    sched::web::AddWebRoutes(
        node.router(), web, [&node] { return node.database(); }, node.db_pool(), &node.metrics());
    spdlog::info("scheduler-standalone {} starting as {} with database {}", SCHED_VERSION, node.node_id(),
                 config.database.url.Redacted());
    sched::Status started = node.Start([&] { return signals.stop_requested(); });
    if (!started.ok()) return sched::StartFailureExitCode(started);
    if (parsed.args.Has("--demo")) {
        if (sched::Status s = EnsureDemoJob(*node.database()); !s.ok()) {
            spdlog::error("cannot create the demo job: {}", s.ToString());
        }
        const auto token_file = DemoTokenFile(config.database.url);
        if (sched::Status s = EnsureDemoExecutorToken(*node.database(), token_file); !s.ok()) {
            spdlog::error("cannot create the demo executor token: {}", s.ToString());
        }
    }
    if (generated_token) sched::Announce("scheduler-standalone token (generated): " + config.token);
    sched::AnnounceListening(
        "scheduler-standalone", config.http.tls.enabled(),
        sched::http::HostPort{sched::http::HostPort::Parse(config.http.listen)->host, node.port()}.ToString());
    return sched::ServeUntilStopped(signals, "scheduler-standalone", [&] { node.Stop(); });
}
