// TLS on every hop with real processes on MariaDB: three scheduler-trigger nodes, a
// scheduler-web node and a demo-client, each serving HTTPS with a certificate made by the
// `openssl` command for this run, and each client verifying its peers against that CA.

#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "sched/common/node_id.hpp"
#include "sched/common/testing/child_process.hpp"
#include "sched/common/testing/wait_for.hpp"
#include "sched/db/migrator.hpp"
#include "sched/db/testing/test_database.hpp"
#include "sched/http/testing/test_server.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/job.hpp"
#include "sched/store/registry.hpp"

namespace sched {
namespace {

using namespace std::chrono_literals;
using testing::ChildProcess;

std::int64_t NowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
    return testing::WaitFor(done, timeout, 50ms);
}

// Runs `command` through the shell in `dir`; fails the test with the command when it fails.
void Run(const std::filesystem::path& dir, const std::string& command) {
    const std::string full = "cd '" + dir.string() + "' && " + command + " >>openssl.log 2>&1";
    ASSERT_EQ(std::system(full.c_str()), 0) << full;
}

// A CA (`<name>-ca.crt`) and, when `leaf`, a certificate for 127.0.0.1 and localhost signed by
// it (`<name>.crt`, `<name>.key`), usable by servers and clients alike.
void MakePki(const std::filesystem::path& dir, const std::string& name, bool leaf) {
    const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes";
    Run(dir, "openssl req -x509 " + ec + " -keyout " + name + "-ca.key -out " + name +
                 "-ca.crt -days 2 -subj '/CN=" + name + " test CA'");
    if (!leaf) return;
    std::ofstream(dir / (name + ".ext")) << "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                            "basicConstraints=CA:FALSE\n"
                                            "keyUsage=critical,digitalSignature\n"
                                            "extendedKeyUsage=serverAuth,clientAuth\n";
    Run(dir, "openssl req " + ec + " -keyout " + name + ".key -out " + name + ".csr -subj '/CN=localhost'");
    Run(dir, "openssl x509 -req -in " + name + ".csr -CA " + name + "-ca.crt -CAkey " + name +
                 "-ca.key -CAcreateserial -days 2 -out " + name + ".crt -extfile " + name + ".ext");
}

class TlsProcessTest : public db::testing::DbTest {
  protected:
    void SetUp() override {
        DbTest::SetUp();
        if (IsSkipped() || HasFatalFailure()) return;
        if (GetParam() != db::Backend::kMySql) GTEST_SKIP() << "the cluster runs on MariaDB";
        ASSERT_TRUE(db::Migrator(db()).Migrate().ok());
        dir_ = std::filesystem::temp_directory_path() / ("sched-tls-" + RandomHex(10));
        std::filesystem::create_directories(dir_);
        MakePki(dir_, "cluster", true);
        MakePki(dir_, "stranger", false);
    }
    void TearDown() override {
        clients_.clear();
        web_.reset();
        nodes_.clear();
        if (!dir_.empty()) std::filesystem::remove_all(dir_);
        DbTest::TearDown();
    }

    std::string File(const std::string& name) const { return (dir_ / name).string(); }

    // A server's tls: section (indented for `indent`) with the cluster's certificate.
    std::string ServerTls(const std::string& indent) const {
        return indent + "tls:\n" + indent + "  cert-file: \"" + File("cluster.crt") + "\"\n" + indent +
               "  key-file: \"" + File("cluster.key") + "\"\n";
    }
    // The http-client.tls section trusting `ca`.
    std::string ClientTls(const std::string& indent, const std::string& ca, bool https_peers) const {
        return indent + "http-client:\n" + indent + "  tls:\n" + indent + "    ca-file: \"" + File(ca) + "\"\n" +
               (https_peers ? indent + "    peer-scheme: https\n" : "");
    }

    int Port(ChildProcess& p, const std::string& needle) {
        auto line = p.WaitForStdoutLine(needle, 30s);
        EXPECT_TRUE(line) << p.stderr_text();
        return line ? std::stoi(line->substr(line->rfind(':') + 1)) : 0;
    }

    void StartNode(int n) {
        const auto config = dir_ / ("trigger-" + std::to_string(n) + ".yaml");
        std::ofstream(config) << "node-id: \"node-" << n << "\"\ntoken: \"t0ken\"\nheartbeat-interval: 200ms\n"
                              << "http:\n  listen: \"127.0.0.1:0\"\n  access-log: errors\n"
                              << ServerTls("  ") << ClientTls("", "cluster-ca.crt", true) << "database:\n  url: \""
                              << test_db().url().ToString() << "\"\n"
                              << "election:\n  tick: 200ms\n  ttl: 1s\n  margin: 300ms\n"
                              << "scheduler:\n  node-ttl: 1s\n"
                              << "slave:\n  poll-interval: 200ms\n";
        nodes_[n] = std::make_unique<ChildProcess>(
            std::vector<std::string>{SCHED_TRIGGER_BIN, "--config", config.string()}, dir_.string());
        ports_[n] = Port(*nodes_[n], "listening on https://127.0.0.1:");
    }

    void StartWeb() {
        const auto config = dir_ / "web.yaml";
        std::ofstream(config) << "token: \"t0ken\"\nhttp:\n  listen: \"127.0.0.1:0\"\n"
                              << ServerTls("  ") << ClientTls("", "cluster-ca.crt", true) << "database:\n  url: \""
                              << test_db().url().ToString() << "\"\n";
        web_ = std::make_unique<ChildProcess>(std::vector<std::string>{SCHED_WEB_BIN, "--config", config.string()},
                                              dir_.string());
        web_port_ = Port(*web_, "scheduler-web listening on https://127.0.0.1:");
    }

    // A demo-client serving HTTPS and calling the web node over https, trusting `ca`.
    ChildProcess& StartClient(const std::string& name, const std::string& ca) {
        const auto config = dir_ / (name + ".yaml");
        std::ofstream(config) << "executor:\n  app: demo\n  web-endpoints: [\"https://127.0.0.1:" << web_port_
                              << "\"]\n  token: \"t0ken\"\n  heartbeat-interval: 1s\n  capacity: 1000\n"
                              << "  spool-dir: \"" << File("spool-" + name) << "\"\n"
                              << "  http:\n    listen: \"127.0.0.1:0\"\n"
                              << ServerTls("    ") << ClientTls("  ", ca, false);
        clients_[name] = std::make_unique<ChildProcess>(
            std::vector<std::string>{SCHED_DEMO_CLIENT_BIN, "--config", config.string()}, dir_.string());
        return *clients_[name];
    }

    std::filesystem::path dir_;
    std::map<int, std::unique_ptr<ChildProcess>> nodes_;
    std::map<int, int> ports_;
    std::unique_ptr<ChildProcess> web_;
    int web_port_ = 0;
    std::map<std::string, std::unique_ptr<ChildProcess>> clients_;
};

TEST_P(TlsProcessTest, EveryHopOverTlsAndEveryFireSucceeds) {
    for (int n = 1; n <= 3; ++n) StartNode(n);
    StartWeb();
    ASSERT_NE(web_port_, 0);
    ChildProcess& client = StartClient("demo", "cluster-ca.crt");
    ASSERT_TRUE(WaitFor(
        [&] {
            auto live = store::ExecutorRepository(db()).ListLive("demo", 30000);
            return live.ok() && !live->empty();
        },
        30s))
        << client.stderr_text();

    // The web API over https, verified against the cluster CA; plain http gets no answer.
    http::ClientOptions trusting;
    trusting.tls.ca_file = File("cluster-ca.crt");
    http::testing::BlockingClient api(trusting);
    const std::string web = "https://127.0.0.1:" + std::to_string(web_port_);
    auto jobs = api.Get(web + "/api/v1/jobs", {.bearer_token = "t0ken"});
    ASSERT_TRUE(jobs.ok()) << jobs.status().message();
    EXPECT_EQ(jobs->status, 200) << jobs->body;
    for (int n = 1; n <= 3; ++n) {
        auto status = api.Get("https://localhost:" + std::to_string(ports_[n]) + "/status");
        ASSERT_TRUE(status.ok()) << status.status().message();
        EXPECT_EQ(status->status, 200) << status->body;
    }

    // Ten every-second jobs for a few seconds: the nodes plan, notify each other and dispatch
    // to the executor, which reports to the web node, all over TLS.
    constexpr int kJobs = 10;
    constexpr int kSeconds = 4;
    const std::int64_t first = (NowMs() / 1000 + 2) * 1000;
    std::vector<std::int64_t> jobs_ids;
    for (int i = 0; i < kJobs; ++i) {
        model::Job j;
        j.name = "tls-" + std::to_string(i);
        j.app = "demo";
        j.handler = "echo";
        j.params = R"({"over":"tls"})";
        j.schedule_type = *sched::ParseScheduleType("cron");
        j.schedule_expr = "* * * * * ?";
        j.next_fire_time = first;
        auto created = store::JobRepository(db()).Create(j);
        ASSERT_TRUE(created.ok()) << created.status().ToString();
        jobs_ids.push_back(created->id);
    }
    const auto fires_of = [&](std::int64_t job) {
        auto fires = store::FireRepository(db()).List({.job_id = job, .limit = 1000});
        return fires.ok() ? *fires : std::vector<model::Fire>{};
    };
    const std::int64_t end = first + std::int64_t{kSeconds} * 1000;
    ASSERT_TRUE(WaitFor(
        [&] {
            for (const auto job : jobs_ids) {
                int done = 0;
                for (const auto& f : fires_of(job)) {
                    if (f.scheduled_time < end && model::IsFinal(f.status)) ++done;
                }
                if (done < kSeconds) return false;
            }
            return true;
        },
        30s))
        << "node 1:\n"
        << nodes_[1]->stderr_text() << "\nclient:\n"
        << client.stderr_text();
    std::set<std::string> dispatchers;
    for (const auto job : jobs_ids) {
        for (const auto& f : fires_of(job)) {
            if (f.scheduled_time >= end) continue;
            EXPECT_EQ(f.status, model::FireStatus::kSucceeded)
                << "job " << job << " at " << f.scheduled_time << ": " << f.result_message.value_or("");
            EXPECT_EQ(f.result_message, R"({"over":"tls"})");
        }
    }
    // Every handshake succeeded: a refused one is logged by its server ("TLS handshake with ...
    // failed"), a refused call by the caller ("certificate verify failed"). Node-to-node notices
    // would otherwise go unnoticed here (the slaves' polling makes up for a lost one).
    for (auto* p : {&client, web_.get(), nodes_[1].get(), nodes_[2].get(), nodes_[3].get()}) {
        EXPECT_EQ(p->stderr_text().find("TLS handshake"), std::string::npos) << p->stderr_text();
        EXPECT_EQ(p->stderr_text().find("certificate verify failed"), std::string::npos) << p->stderr_text();
    }

    // A demo-client that trusts another CA cannot register, and says why.
    ChildProcess& stranger = StartClient("stranger", "stranger-ca.crt");
    auto line = stranger.WaitForStderrLine("certificate verify failed", 30s);
    ASSERT_TRUE(line) << stranger.stderr_text();
    EXPECT_NE(line->find("certificate verify failed: unable to get local issuer certificate"), std::string::npos)
        << *line;
    http::ClientOptions wrong;
    wrong.tls.ca_file = File("stranger-ca.crt");
    http::testing::BlockingClient wrong_api(wrong);
    auto refused = wrong_api.Get(web + "/api/v1/jobs", {.bearer_token = "t0ken"});
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("unable to get local issuer certificate"), std::string::npos)
        << refused.status().message();
}

SCHED_DB_TEST_SUITE(TlsProcessTest);

}  // namespace
}  // namespace sched
