// The scheduler-standalone binary as an operator runs it: real process, real HTTP on loopback.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <nlohmann/json.hpp>

#include "../support/scratch_dir.hpp"
#include "../support/silent_listener.hpp"
#include "sched/common/node_id.hpp"
#include "sched/common/testing/child_process.hpp"
#include "sched/common/testing/tiny_file_system.hpp"
#include "sched/common/testing/wait_for.hpp"
#include "sched/db/database.hpp"
#include "sched/protocol/testing/malformed_fires_notices.hpp"

namespace sched {
namespace {

using namespace std::chrono_literals;
using testing::ChildProcess;
using testing::SilentListener;
using testing::TinyFileSystem;

class StandaloneProcess : public ::testing::Test {
  protected:
    std::string WriteConfig(const std::string& yaml) { return scratch_.Write("standalone.yaml", yaml); }
    std::string DefaultConfig() {
        return WriteConfig("http:\n  listen: \"127.0.0.1:0\"\ndatabase:\n  url: \"sqlite://" +
                           (dir_ / "data/s.db").string() + "\"\nlog:\n  level: info\n");
    }

    // A config whose alerts go out within a round or two of 100 ms to receivers on loopback, on
    // SQLite at `db_path`; `alert_options` adds scheduler keys (each line "  key: value\n").
    std::string AlertingConfig(const std::filesystem::path& db_path, const std::string& alert_options) {
        return SqliteConfig(db_path, "scheduler:\n  alert-interval: 100ms\n  alert-settle: 0s\n" + alert_options +
                                         "  alert-addresses:\n    allow: [\"127.0.0.1\"]\n");
    }
    // A config on SQLite at `db_path` (busy-timeout 10 s) with `sections` (YAML lines) before
    // the log section.
    std::string SqliteConfig(const std::filesystem::path& db_path, const std::string& sections) {
        return WriteConfig("http:\n  listen: \"127.0.0.1:0\"\ndatabase:\n  url: \"sqlite://" + db_path.string() +
                           "?busy-timeout=10s\"\n" + sections + "log:\n  level: info\n");
    }

    testing::ScratchDir scratch_{"sched-standalone-"};
    const std::filesystem::path& dir_ = scratch_.path();
};

// The node's SQLite file at `db_path`, opened by the test too (`options`: the URL's query);
// null, a failure recorded, when it cannot be opened.
std::shared_ptr<db::Database> OpenNodeDb(const std::filesystem::path& db_path,
                                         const std::string& options = "?busy-timeout=10s") {
    auto url = db::ParseDbUrl("sqlite://" + db_path.string() + options);
    if (!url.ok()) {
        ADD_FAILURE() << url.status().ToString();
        return nullptr;
    }
    auto db = db::Database::Open(*url);
    if (!db.ok()) {
        ADD_FAILURE() << db.status().ToString();
        return nullptr;
    }
    return *db;
}

std::int64_t NowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// A failed fire of `job_id` at `at_ms`, as an executor's result leaves it.
void InsertFailedFire(soci::session& s, std::int64_t job_id, std::int64_t at_ms) {
    s << "INSERT INTO job_fire (job_id, scheduled_time, kind, epoch, status, due_at, created_at, finished_at, "
         "result_code, result_message) VALUES (:j, :t, 'schedule', 1, 'failed', :t2, :t3, :t4, 1, 'boom')",
        soci::use(job_id), soci::use(at_ms), soci::use(at_ms), soci::use(at_ms), soci::use(at_ms);
}

struct AlertedJob {
    std::int64_t job_id = 0;
    std::int64_t rule_id = 0;
};

// A manual job `name` and the alert rule `rule` on its failures, to http://127.0.0.1:hook_port/hook
// signed with `secret`, created over the API of the node on `port`; zero ids (a failure
// recorded) when either is refused.
AlertedJob CreateAlertedJob(unsigned short port, const std::string& token, const std::string& name,
                            const std::string& rule, unsigned short hook_port, const std::string& secret) {
    AlertedJob out;
    const nlohmann::json job_body = {{"name", name}, {"app", "demo"}, {"handler", "echo"}, {"schedule_type", "manual"}};
    auto job = testing::HttpCall(port, "POST", "/api/v1/jobs", job_body.dump(), token);
    if (job.first != 201) {
        ADD_FAILURE() << "job " << name << ": " << job.first << " " << job.second;
        return out;
    }
    out.job_id = nlohmann::json::parse(job.second)["id"].get<std::int64_t>();
    const nlohmann::json rule_body = {{"name", rule},
                                      {"job_id", out.job_id},
                                      {"events", {"failed"}},
                                      {"url", "http://127.0.0.1:" + std::to_string(hook_port) + "/hook"},
                                      {"secret", secret}};
    auto created = testing::HttpCall(port, "POST", "/api/v1/alert-rules", rule_body.dump(), token);
    if (created.first != 201) {
        ADD_FAILURE() << "rule " << rule << ": " << created.first << " " << created.second;
        return out;
    }
    out.rule_id = nlohmann::json::parse(created.second)["id"].get<std::int64_t>();
    return out;
}

TEST_F(StandaloneProcess, ServesHealthReadinessAndMetricsThenStopsOnSigterm) {
    ChildProcess p({SCHED_STANDALONE_BIN, "--config", DefaultConfig()}, dir_.string());
    const auto port = ListeningPort(p, 20s);
    ASSERT_NE(port, 0) << p.stderr_text();
    // No token configured: one is generated and printed, never an open scheduler.
    auto token = p.WaitForStdoutLine("token (generated): ", 1s);
    ASSERT_TRUE(token) << p.stdout_text();
    EXPECT_EQ(token->size() - token->rfind(' ') - 1, 32u) << *token;

    auto [health_status, health_body] = testing::HttpGet(port, "/healthz");
    EXPECT_EQ(health_status, 200);
    EXPECT_EQ(health_body, "ok\n");
    EXPECT_EQ(testing::HttpGet(port, "/readyz").first, 200);
    auto [metrics_status, metrics] = testing::HttpGet(port, "/metrics");
    EXPECT_EQ(metrics_status, 200);
    EXPECT_NE(metrics.find("# TYPE sched_leader gauge\n"), std::string::npos) << metrics;
    EXPECT_NE(metrics.find("# TYPE sched_fire_lag_seconds histogram\n"), std::string::npos) << metrics;
    EXPECT_EQ(testing::HttpGet(port, "/nope").first, 404);
    EXPECT_TRUE(std::filesystem::exists(dir_ / "data/s.db"));

    p.Signal(SIGTERM);
    auto code = p.WaitForExit(10s);
    ASSERT_TRUE(code) << "did not stop within 10 s of SIGTERM";
    EXPECT_EQ(*code, 0) << p.stderr_text();
    EXPECT_NE(p.stderr_text().find("stopped"), std::string::npos) << p.stderr_text();
}

TEST_F(StandaloneProcess, RestartOnTheSameDatabaseAppliesNoMigrationTwice) {
    const auto config = DefaultConfig();
    for (int run = 0; run < 2; ++run) {
        ChildProcess p({SCHED_STANDALONE_BIN, "--config", config}, dir_.string());
        ASSERT_TRUE(p.WaitForStdoutLine("listening on", 20s)) << p.stderr_text();
        p.Signal(SIGINT);
        ASSERT_EQ(p.WaitForExit(10s), 0);
        const bool applied = p.stderr_text().find("applying migration") != std::string::npos;
        EXPECT_EQ(applied, run == 0) << "run " << run << ": " << p.stderr_text();
    }
}

TEST_F(StandaloneProcess, InvalidConfigExitsWithCode2AndOneLineNamingTheKey) {
    const std::pair<std::string, std::string> cases[] = {
        {"http:\n  listen: \"nowhere\"\n", "http.listen: expected host:port"},
        {"http:\n  lisen: \"127.0.0.1:0\"\n", "http.lisen: unknown key"},
        {"database:\n  url: \"oracle://x\"\n", "database.url: expected mysql://"},
        {"database:\n  connect-retry-for: \"soon\"\n", "database.connect-retry-for: expected a duration"},
        {"log:\n  level: chatty\n", "log.level: expected one of"},
    };
    for (const auto& [yaml, want] : cases) {
        ChildProcess p({SCHED_STANDALONE_BIN, "--config", WriteConfig(yaml)}, dir_.string());
        auto code = p.WaitForExit(10s);
        ASSERT_TRUE(code) << yaml;
        EXPECT_EQ(*code, 2) << yaml;
        const std::string& err = p.stderr_text();
        EXPECT_NE(err.find(want), std::string::npos) << yaml << " -> " << err;
        EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    }
}

TEST_F(StandaloneProcess, MissingConfigFileAndBadArgumentsExitWith2) {
    ChildProcess missing({SCHED_STANDALONE_BIN, "--config", (dir_ / "absent.yaml").string()}, dir_.string());
    EXPECT_EQ(missing.WaitForExit(10s), 2);
    EXPECT_NE(missing.stderr_text().find("cannot read config file"), std::string::npos);
    ChildProcess bad({SCHED_STANDALONE_BIN, "--frobnicate"}, dir_.string());
    EXPECT_EQ(bad.WaitForExit(10s), 2);
    EXPECT_NE(bad.stderr_text().find("unknown argument \"--frobnicate\""), std::string::npos);
}

TEST_F(StandaloneProcess, VersionAndHelp) {
    ChildProcess v({SCHED_STANDALONE_BIN, "--version"});
    EXPECT_EQ(v.WaitForExit(10s), 0);
    EXPECT_EQ(v.stdout_text().rfind("scheduler-standalone ", 0), 0u) << v.stdout_text();
    ChildProcess h({SCHED_STANDALONE_BIN, "--help"});
    EXPECT_EQ(h.WaitForExit(10s), 0);
    EXPECT_NE(h.stdout_text().find("--config FILE"), std::string::npos);
}

TEST_F(StandaloneProcess, UnreachableDatabaseIsRetriedWithLogsThenExitsNonZero) {
    ChildProcess p(
        {SCHED_STANDALONE_BIN, "--config",
         WriteConfig("http:\n  listen: \"127.0.0.1:0\"\ndatabase:\n  url: "
                     "\"mysql://nobody@127.0.0.1:1/none?connect-timeout=1s\"\n  connect-retry-for: 1500ms\n")},
        dir_.string());
    auto code = p.WaitForExit(30s);
    ASSERT_TRUE(code) << "hung instead of giving up";
    EXPECT_EQ(*code, 1);
    const std::string& err = p.stderr_text();
    EXPECT_NE(err.find("unreachable (attempt 1)"), std::string::npos) << err;
    EXPECT_NE(err.find("retrying in"), std::string::npos) << err;
    EXPECT_NE(err.find("cannot start: unavailable: database"), std::string::npos) << err;
    EXPECT_NE(err.find("unreachable after"), std::string::npos) << err;
    EXPECT_EQ(p.stdout_text().find("listening"), std::string::npos);
}

TEST_F(StandaloneProcess, SigtermWhileWaitingForTheDatabaseStopsPromptly) {
    ChildProcess p({SCHED_STANDALONE_BIN, "--config",
                    WriteConfig("http:\n  listen: \"127.0.0.1:0\"\n"
                                "database:\n  url: \"mysql://nobody@127.0.0.1:1/none?connect-timeout=1s\"\n"
                                "  connect-retry-for: 1h\n")},
                   dir_.string());
    // Wait until it is in the retry loop, then ask it to stop.
    ASSERT_TRUE(p.WaitForStderrLine("retrying in", 10s)) << p.stderr_text();
    p.Signal(SIGTERM);
    auto code = p.WaitForExit(10s);
    ASSERT_TRUE(code) << "ignored SIGTERM while retrying";
    EXPECT_EQ(*code, 0);
}

// --- hardening: private files, a full disk, readiness without a leader, strict internal bodies ---

int ModeOf(const std::filesystem::path& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 0777) : -1;
}

std::string TokenOf(ChildProcess& p) {
    auto line = p.WaitForStdoutLine("token (generated): ", 20s);
    return line ? line->substr(line->rfind(' ') + 1) : std::string();
}

// Polls every 50ms (over HTTP: the process under test should not feel the polling).
bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
    return testing::WaitFor(done, timeout, 50ms);
}

TEST_F(StandaloneProcess, TheDataDirectoryAndTheDatabaseFilesArePrivate) {
    const mode_t old_umask = ::umask(022);  // the usual default: 0755 directories, 0644 files
    ChildProcess p({SCHED_STANDALONE_BIN, "--config", DefaultConfig()}, dir_.string());
    ::umask(old_umask);
    ASSERT_TRUE(p.WaitForStdoutLine("listening on", 20s)) << p.stderr_text();
    EXPECT_EQ(ModeOf(dir_ / "data"), 0700);
    for (const char* name : {"s.db", "s.db-wal", "s.db-shm"}) {
        ASSERT_TRUE(std::filesystem::exists(dir_ / "data" / name)) << name;
        EXPECT_EQ(ModeOf(dir_ / "data" / name), 0600) << name;
    }
    p.Signal(SIGTERM);
    EXPECT_EQ(p.WaitForExit(10s), 0);
}

TEST_F(StandaloneProcess, AFullDiskAnswers503UnavailableAndTheApiRecoversWhenSpaceReturns) {
    TinyFileSystem fs(dir_ / "data", "8m");
    if (!fs.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (" << fs.error() << "): a full disk needs root";
    ChildProcess p({SCHED_STANDALONE_BIN, "--config", DefaultConfig()}, dir_.string());
    const std::string token = TokenOf(p);
    ASSERT_FALSE(token.empty()) << p.stderr_text();
    const auto port = ListeningPort(p, 20s);
    ASSERT_NE(port, 0) << p.stderr_text();
    const std::string params(60000, 'p');
    int n = 0;
    const auto create = [&] {
        const std::string body = R"({"name": "job-)" + std::to_string(++n) +
                                 R"(", "app": "demo", "handler": "echo", "schedule_type": "manual",)"
                                 R"( "schedule_expr": "", "params": ")" +
                                 params + R"("})";
        return testing::HttpCall(port, "POST", "/api/v1/jobs", body, token);
    };
    auto first = create();
    ASSERT_EQ(first.first, 201) << first.second;

    ASSERT_TRUE(fs.Fill());
    std::pair<int, std::string> refused{0, ""};
    for (int i = 0; i < 300; ++i) {
        refused = create();
        if (refused.first != 201) break;
    }
    EXPECT_EQ(refused.first, 503) << refused.second;
    EXPECT_NE(refused.second.find("\"code\":\"unavailable\""), std::string::npos) << refused.second;
    EXPECT_NE(refused.second.find("disk is full"), std::string::npos) << refused.second;

    fs.Free();
    std::pair<int, std::string> again{0, ""};
    EXPECT_TRUE(WaitFor(
        [&] {
            again = create();
            return again.first == 201;
        },
        15s))
        << again.first << " " << again.second;
    p.Signal(SIGTERM);
    EXPECT_EQ(p.WaitForExit(15s), 0) << p.stderr_text();
}

// GET /readyz within `timeout`: {0, ""} when nothing answered in time (a node whose I/O threads
// wait on a locked database may not answer for a while: this poll must not hang with it).
std::pair<int, std::string> ReadyzWithin(unsigned short port, std::chrono::milliseconds timeout) {
    try {
        return testing::HttpCallAt("127.0.0.1", port, "GET", "/readyz", "", "", timeout);
    } catch (const std::exception&) {
        return {0, ""};
    }
}

// Polls GET /readyz (each call within 2 s) for at most 10 s until it answers `status`; `last`
// is the last answer.
bool WaitForReadyz(unsigned short port, int status, std::pair<int, std::string>& last) {
    return WaitFor(
        [&] {
            last = ReadyzWithin(port, 2s);
            return last.first == status;
        },
        10s);
}

TEST_F(StandaloneProcess, ReadyzIsNotReadyWhileNoNodeLeadsAndReadyOnceOneDoes) {
    // The node's lease statements give up after margin / 2 on a locked database; its heartbeat
    // (busy-timeout 10 s) only waits. So the database stays "reachable" and only leadership stops.
    const auto db_path = dir_ / "data/s.db";
    const auto config = SqliteConfig(db_path, "election:\n  tick: 200ms\n  ttl: 1s\n  margin: 300ms\n");
    ChildProcess p({SCHED_STANDALONE_BIN, "--config", config}, dir_.string());
    const auto port = ListeningPort(p, 20s);
    ASSERT_NE(port, 0) << p.stderr_text();
    std::pair<int, std::string> ready{0, ""};
    ASSERT_TRUE(WaitForReadyz(port, 200, ready)) << ready.second;
    EXPECT_EQ(ready.second, "ready\n");

    const auto db = OpenNodeDb(db_path, "");
    ASSERT_TRUE(db);
    auto session = db->Acquire();
    ASSERT_TRUE(session.ok());
    **session << "BEGIN IMMEDIATE";  // holds the write lock: nobody can renew or take the lease
    const auto locked_at = std::chrono::steady_clock::now();
    std::pair<int, std::string> not_ready{0, ""};
    const bool went_unready = WaitForReadyz(port, 503, not_ready);
    const auto unready_after = std::chrono::steady_clock::now() - locked_at;
    **session << "COMMIT";
    ASSERT_TRUE(went_unready) << "/readyz stayed " << not_ready.first << " " << not_ready.second;
    EXPECT_NE(not_ready.second.find("no node has led the cluster"), std::string::npos) << not_ready.second;
    // Not before ttl + tick (1.2 s) has passed without a leader; the lease was last renewed at
    // most a tick before the lock.
    EXPECT_GE(unready_after, 900ms);

    EXPECT_TRUE(WaitForReadyz(port, 200, ready)) << ready.second;
    p.Signal(SIGTERM);
    EXPECT_EQ(p.WaitForExit(15s), 0) << p.stderr_text();
}

TEST_F(StandaloneProcess, InternalRoutesTakeExactlyTheirFieldsAndNameTheBadOne) {
    ChildProcess p({SCHED_STANDALONE_BIN, "--config", DefaultConfig()}, dir_.string());
    const std::string token = TokenOf(p);
    ASSERT_FALSE(token.empty()) << p.stderr_text();
    const auto port = ListeningPort(p, 20s);
    ASSERT_NE(port, 0) << p.stderr_text();
    const auto field_of = [](const std::string& body) {
        const auto at = body.find("\"field\":\"");
        if (at == std::string::npos) return std::string("<none>");
        const auto from = at + 9;
        return body.substr(from, body.find('"', from) - from);
    };
    for (const auto& [body, field] : protocol::testing::kMalformedFiresNotices) {
        auto [status, answer] = testing::HttpCall(port, "POST", "/internal/v1/fires", std::string(body), token);
        EXPECT_EQ(status, 400) << body << " -> " << answer;
        EXPECT_EQ(field_of(answer), field) << body << " -> " << answer;
    }
    EXPECT_EQ(testing::HttpCall(port, "POST", "/internal/v1/fires", R"({"epoch": 1, "fire_ids": []})", token).first,
              202);
    const std::pair<std::string, std::string> nudges[] = {
        {R"({"now": true})", "now"},
        {"[]", "body"},
        {"nudge", "body"},
    };
    for (const auto& [body, field] : nudges) {
        auto [status, answer] = testing::HttpCall(port, "POST", "/internal/v1/election/nudge", body, token);
        EXPECT_EQ(status, 400) << body << " -> " << answer;
        EXPECT_EQ(field_of(answer), field) << body << " -> " << answer;
    }
    EXPECT_EQ(testing::HttpCall(port, "POST", "/internal/v1/election/nudge", "", token).first, 200);
    EXPECT_EQ(testing::HttpCall(port, "POST", "/internal/v1/election/nudge", "{}", token).first, 200);
    // The masters' wake: the same body rules; the standalone leads its one shard.
    for (const auto& [body, field] : nudges) {
        auto [status, answer] = testing::HttpCall(port, "POST", "/internal/v1/master/wake", body, token);
        EXPECT_EQ(status, 400) << body << " -> " << answer;
        EXPECT_EQ(field_of(answer), field) << body << " -> " << answer;
    }
    EXPECT_EQ(testing::HttpCall(port, "POST", "/internal/v1/master/wake", "", "not-the-token").first, 401);
    const auto [woke, woken] = testing::HttpCall(port, "POST", "/internal/v1/master/wake", "{}", token);
    EXPECT_EQ(woke, 202) << woken;
    // Ended runs from another node: strict like the fires notice; no record waits for these ids.
    const std::pair<std::string, std::string> ended_bodies[] = {
        {R"({"fire_ids": [1], "epoch": 2})", "epoch"},
        {R"({"fire_ids": ["1"]})", "fire_ids"},
        {"", "body"},
    };
    for (const auto& [body, field] : ended_bodies) {
        auto [status, answer] = testing::HttpCall(port, "POST", "/internal/v1/runs/ended", body, token);
        EXPECT_EQ(status, 400) << body << " -> " << answer;
        EXPECT_EQ(field_of(answer), field) << body << " -> " << answer;
    }
    EXPECT_EQ(testing::HttpCall(port, "POST", "/internal/v1/runs/ended", R"({"fire_ids": [1]})", "not-the-token").first,
              401);
    const auto [ended, withdrawn] =
        testing::HttpCall(port, "POST", "/internal/v1/runs/ended", R"({"fire_ids": [123456789]})", token);
    EXPECT_EQ(ended, 202) << withdrawn;
    EXPECT_EQ(withdrawn, R"({"withdrawn":0})");
    p.Signal(SIGTERM);
    EXPECT_EQ(p.WaitForExit(15s), 0) << p.stderr_text();
}

TEST_F(StandaloneProcess, TheMasterPurgesEndedFiresPastTheirRetentionInBatches) {
    // Short retention and interval: 2,500 ended fires a minute old go within seconds, in batches
    // of 1,000; a pending fire just as old and a recent ended one stay.
    const auto db_path = dir_ / "data/s.db";
    const auto config =
        SqliteConfig(db_path, "scheduler:\n  history-retention: 30s\n  purge-interval: 200ms\n  purge-batch: 1000\n");
    ChildProcess p({SCHED_STANDALONE_BIN, "--config", config}, dir_.string());
    ASSERT_TRUE(p.WaitForStdoutLine("listening on http://127.0.0.1:", 20s)) << p.stderr_text();

    const auto db = OpenNodeDb(db_path);
    ASSERT_TRUE(db);
    const auto now_ms = NowMs();
    const auto inserted = db->InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
        std::int64_t t = now_ms - 60000;
        const std::int64_t recent = now_ms;
        soci::statement st = (s.prepare << "INSERT INTO job_fire (job_id, scheduled_time, kind, epoch, status, due_at, "
                                           "created_at, finished_at) VALUES (999, :t, 'schedule', 1, 'succeeded', :t2, "
                                           ":t3, :t4)",
                              soci::use(t), soci::use(t), soci::use(t), soci::use(t));
        for (int i = 0; i < 2500; ++i, ++t) st.execute(true);
        s << "INSERT INTO job_fire (job_id, scheduled_time, kind, epoch, status, due_at, created_at) VALUES "
             "(999, :t, 'schedule', 1, 'pending', :t2, :t3)",
            soci::use(t), soci::use(t), soci::use(t);
        s << "INSERT INTO job_fire (job_id, scheduled_time, kind, epoch, status, due_at, created_at, finished_at) "
             "VALUES (999, :t, 'schedule', 1, 'succeeded', :t2, :t3, :t4)",
            soci::use(recent), soci::use(recent), soci::use(recent), soci::use(recent);
    });
    ASSERT_TRUE(inserted.ok()) << inserted.ToString();
    const auto count = [&] {
        std::int64_t n = -1;
        (void)db->Run([&](soci::session& s) { s << "SELECT COUNT(*) FROM job_fire", soci::into(n); });
        return n;
    };
    std::int64_t left = count();
    EXPECT_TRUE(WaitFor(
        [&] {
            left = count();
            return left == 2;
        },
        15s))
        << left << " fires left; " << p.stderr_text();
    p.Signal(SIGTERM);
    EXPECT_EQ(p.WaitForExit(15s), 0) << p.stderr_text();
    // The whole backlog committed at once, so one round took it, logging one line (stderr is
    // complete only after the exit).
    EXPECT_NE(p.stderr_text().find("master history purge: 2500 fires deleted (2500 by age, 0 beyond the per-job cap), "
                                   "0 audit entries and 0 alert deliveries by age, in 3 batches"),
              std::string::npos)
        << p.stderr_text();
}

// A one-shot webhook receiver on a fixed loopback port: accepts one connection, reads one
// request (headers and a Content-Length body, bounded), answers 200 and keeps what it got.
class WebhookListener {
  public:
    explicit WebhookListener(unsigned short port) {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        const int one = 1;
        ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(port);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd_, 4) != 0) {
            throw std::runtime_error(std::string("webhook listener: ") + std::strerror(errno));
        }
        thread_ = std::thread([this] { Serve(); });
    }
    ~WebhookListener() {
        ::shutdown(fd_, SHUT_RDWR);
        thread_.join();
        ::close(fd_);
    }
    std::optional<std::string> request() {
        std::lock_guard lock(mu_);
        return request_;
    }

  private:
    void Serve() {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 25000) <= 0) return;
        const int conn = ::accept(fd_, nullptr, nullptr);
        if (conn < 0) return;
        timeval tv{5, 0};
        ::setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        std::string in;
        char buf[4096];
        while (in.size() < (1 << 20)) {
            const auto head_end = in.find("\r\n\r\n");
            if (head_end != std::string::npos) {
                const auto cl = in.find("Content-Length: ");
                const std::size_t length = cl == std::string::npos ? 0 : std::stoul(in.substr(cl + 16));
                if (in.size() >= head_end + 4 + length) break;
            }
            const auto n = ::recv(conn, buf, sizeof buf, 0);
            if (n <= 0) break;
            in.append(buf, static_cast<std::size_t>(n));
        }
        const std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
        (void)::send(conn, answer.data(), answer.size(), MSG_NOSIGNAL);
        ::close(conn);
        std::lock_guard lock(mu_);
        request_ = in;
    }

    int fd_ = -1;
    std::thread thread_;
    std::mutex mu_;
    std::optional<std::string> request_;
};

unsigned short FreeLoopbackPort() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    ::close(fd);
    return ntohs(addr.sin_port);
}

std::string HeaderOf(const std::string& request, const std::string& name) {
    const auto at = request.find("\r\n" + name + ": ");
    if (at == std::string::npos) return "";
    const auto from = at + name.size() + 4;
    return request.substr(from, request.find("\r\n", from) - from);
}

TEST_F(StandaloneProcess, AFailedFireDeliversASignedWebhookRetriedUntilTheReceiverIsUp) {
    const std::string token = "alerts-test-token-0123456789abcd";
    const std::string secret = "webhook-secret-0123456789";
    const auto db_path = dir_ / "data/s.db";
    const auto config = AlertingConfig(db_path,
                                       "  alert-backoff: 200ms\n  alert-backoff-max: 400ms\n  alert-timeout: 1s\n"
                                       "  cluster-url: \"http://sched.example\"\n");
    ChildProcess p({SCHED_STANDALONE_BIN, "--config", config}, dir_.string(), {"SCHED_TOKEN=" + token});
    const auto port = ListeningPort(p, 20s);
    ASSERT_NE(port, 0) << p.stderr_text();

    const unsigned short hook_port = FreeLoopbackPort();  // nobody listens there yet
    const auto alerted = CreateAlertedJob(port, token, "nightly", "pager", hook_port, secret);
    ASSERT_NE(alerted.rule_id, 0);
    const auto job_id = alerted.job_id;

    // The job's run failed (as an executor's result leaves it).
    const auto db = OpenNodeDb(db_path);
    ASSERT_TRUE(db);
    const std::int64_t now_ms = NowMs();
    std::int64_t fire_id = 0;
    const auto inserted = db->Run([&](soci::session& s) {
        InsertFailedFire(s, job_id, now_ms);
        long long id = 0;
        s.get_last_insert_id("job_fire", id);
        fire_id = id;
    });
    ASSERT_TRUE(inserted.ok()) << inserted.ToString();

    // The receiver is down: the delivery is retried.
    nlohmann::json delivery;
    const auto first_delivery = [&] {
        auto r = testing::HttpCall(port, "GET", "/api/v1/alert-deliveries", "", token);
        if (r.first != 200) return false;
        auto items = nlohmann::json::parse(r.second)["items"];
        if (items.empty()) return false;
        delivery = items[0];
        return true;
    };
    ASSERT_TRUE(WaitFor([&] { return first_delivery() && delivery["attempts"].get<int>() >= 2; }, 10s))
        << delivery.dump() << p.stderr_text();
    EXPECT_EQ(delivery["status"], "pending");
    EXPECT_NE(delivery["last_error"].get<std::string>().find("unavailable"), std::string::npos) << delivery.dump();

    // Up now: it arrives, signed.
    WebhookListener listener(hook_port);
    ASSERT_TRUE(WaitFor([&] { return listener.request().has_value(); }, 15s)) << p.stderr_text();
    const std::string request = *listener.request();
    EXPECT_EQ(request.rfind("POST /hook HTTP/1.1\r\n", 0), 0u) << request;
    const auto body_at = request.find("\r\n\r\n");
    ASSERT_NE(body_at, std::string::npos);
    const std::string body = request.substr(body_at + 4);
    const std::string timestamp = HeaderOf(request, "X-Sched-Timestamp");
    const std::string signature = HeaderOf(request, "X-Sched-Signature");
    const std::string material = timestamp + "." + body;
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
         reinterpret_cast<const unsigned char*>(material.data()), material.size(), mac, &mac_len);
    std::string hex;
    for (unsigned int i = 0; i < mac_len; ++i) {
        static constexpr char kDigits[] = "0123456789abcdef";
        hex += kDigits[mac[i] >> 4];
        hex += kDigits[mac[i] & 0xF];
    }
    EXPECT_EQ(signature, "sha256=" + hex) << request;
    EXPECT_NEAR(std::stoll(timestamp), now_ms / 1000, 60);
    EXPECT_EQ(HeaderOf(request, "X-Sched-Delivery"), std::to_string(delivery["id"].get<std::int64_t>()));
    const auto payload = nlohmann::json::parse(body);
    EXPECT_EQ(payload["event"], "failed");
    EXPECT_EQ(payload["fire_id"], fire_id);
    EXPECT_EQ(payload["job_name"], "nightly");
    EXPECT_EQ(payload["result_message"], "boom");
    EXPECT_EQ(payload["cluster_url"], "http://sched.example");

    ASSERT_TRUE(WaitFor([&] { return first_delivery() && delivery["status"] == "delivered"; }, 5s)) << delivery.dump();
    EXPECT_GT(delivery["attempts"].get<int>(), 1);
    EXPECT_FALSE(delivery["delivered_at_ms"].is_null());
    auto metrics = testing::HttpGet(port, "/metrics").second;
    EXPECT_NE(metrics.find("sched_alert_deliveries_total{result=\"delivered\"} 1"), std::string::npos) << metrics;

    p.Signal(SIGTERM);
    EXPECT_EQ(p.WaitForExit(15s), 0) << p.stderr_text();
}

// Twenty alerts to a receiver that never answers, then one to a healthy receiver: the healthy
// one arrives within a few alert rounds (delivered one by one, it would wait out every slow
// call first: 20 x 500 ms here), and each slow delivery ends `failed` after its attempts, each
// bounded.
TEST_F(StandaloneProcess, ASilentWebhookReceiverDelaysOnlyItsOwnDeliveries) {
    const std::string token = "alerts-test-token-0123456789abcd";
    const auto db_path = dir_ / "data/s.db";
    const auto config =
        AlertingConfig(db_path,
                       "  alert-backoff: 100ms\n  alert-backoff-max: 200ms\n  alert-timeout: 1s\n"
                       "  alert-first-byte-timeout: 500ms\n  alert-max-attempts: 2\n  alert-receiver-concurrency: 2\n");
    ChildProcess p({SCHED_STANDALONE_BIN, "--config", config}, dir_.string(), {"SCHED_TOKEN=" + token});
    const auto port = ListeningPort(p, 20s);
    ASSERT_NE(port, 0) << p.stderr_text();

    SilentListener silent;
    const unsigned short healthy_port = FreeLoopbackPort();
    WebhookListener healthy(healthy_port);
    std::map<std::string, std::int64_t> job_ids;
    std::map<std::string, std::int64_t> rule_ids;
    for (const auto& [name, hook_port] : {std::pair<std::string, unsigned short>{"slow", silent.port()},
                                          std::pair<std::string, unsigned short>{"fast", healthy_port}}) {
        const auto alerted =
            CreateAlertedJob(port, token, name, name + "-pager", hook_port, "webhook-secret-0123456789");
        ASSERT_NE(alerted.rule_id, 0);
        job_ids[name] = alerted.job_id;
        rule_ids[name] = alerted.rule_id;
    }

    // Twenty failed fires of the slow job, then one of the fast job (as executors' results
    // leave them), in one transaction: one alert round sees them all, the slow ones first.
    const auto db = OpenNodeDb(db_path);
    ASSERT_TRUE(db);
    const std::int64_t now_ms = NowMs();
    const auto inserted = db->InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
        for (int i = 0; i < 21; ++i) InsertFailedFire(s, i < 20 ? job_ids["slow"] : job_ids["fast"], now_ms - 21 + i);
    });
    ASSERT_TRUE(inserted.ok()) << inserted.ToString();
    const auto inserted_at = std::chrono::steady_clock::now();

    ASSERT_TRUE(WaitFor([&] { return healthy.request().has_value(); }, 20s)) << p.stderr_text();
    const auto waited = std::chrono::steady_clock::now() - inserted_at;
    EXPECT_LT(waited, 4s) << "the healthy receiver's alert waited "
                          << std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()
                          << " ms behind the silent receiver's";

    nlohmann::json slow;
    std::string poll_error;
    const auto all_slow_failed = [&] {
        std::pair<int, std::string> r;
        try {
            r = testing::HttpCall(port, "GET",
                                  "/api/v1/alert-deliveries?rule_id=" + std::to_string(rule_ids["slow"]) + "&limit=100",
                                  "", token);
        } catch (const std::exception& e) {
            poll_error = e.what();
            return false;
        }
        if (r.first != 200) return false;
        slow = nlohmann::json::parse(r.second)["items"];
        if (slow.size() != 20) return false;
        for (const auto& d : slow) {
            if (d["status"] != "failed") return false;
        }
        return true;
    };
    if (!WaitFor(all_slow_failed, 40s)) {
        // Whether the node still runs, and everything it logged (read to its end if it exited).
        const bool running = p.Running();
        const std::optional<int> code = running ? std::nullopt : p.WaitForExit(1s);
        FAIL() << slow.dump() << "\nlast poll error: " << poll_error << "\nnode "
               << (running ? std::string("running") : "exited with " + std::to_string(code.value_or(-1)))
               << " (128 + the signal when killed), stderr:\n"
               << p.stderr_text();
    }
    for (const auto& d : slow) {
        EXPECT_EQ(d["attempts"].get<int>(), 2) << d.dump();
        EXPECT_NE(d["last_error"].get<std::string>().find(std::to_string(silent.port())), std::string::npos)
            << d.dump();
    }

    p.Signal(SIGTERM);
    EXPECT_EQ(p.WaitForExit(15s), 0) << p.stderr_text();
}

}  // namespace
}  // namespace sched
