// TLS on every hop with real processes on MariaDB: three scheduler-trigger nodes, a
// scheduler-web node, the C++ demo-client and the Python SDK's demo service, each serving HTTPS
// with a certificate made by the `openssl` command for this run, and each client verifying its
// peers against that CA (scripts/tls-certs.sh makes them, as for a deployment). Also: no process listens for plain
// HTTP, certificates that must be refused are refused with their cause named, and certificates renewed under load
// (SIGHUP) lose or double no fire.

#include <dirent.h>
#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "sched/common/node_id.hpp"
#include "sched/common/testing/child_process.hpp"
#include "sched/common/testing/wait_for.hpp"
#include "sched/db/migrator.hpp"
#include "sched/db/testing/test_database.hpp"
#include "sched/http/testing/test_pki.hpp"
#include "sched/http/testing/test_server.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/job.hpp"
#include "sched/store/registry.hpp"

#include "../support/scratch_dir.hpp"

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

// A CA (`<name>-ca.crt`, `<name>-ca.key`) that signs nothing the cluster uses.
void MakeCa(const std::filesystem::path& dir, const std::string& name) {
    Run(dir, "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout " + name + "-ca.key -out " +
                 name + "-ca.crt -days 2 -subj '/CN=" + name + " test CA'");
}

// `<stem>.crt` and `<stem>.key` for `stem`, localhost and 127.0.0.1, signed by the cluster CA
// (`ca.crt`, made on the first call), as operators make them: scripts/tls-certs.sh.
void IssueLeaf(const std::filesystem::path& dir, const std::string& stem) {
    Run(dir, std::string("'") + SCHED_TLS_CERTS_SCRIPT + "' . " + stem);
}

// The SHA-256 fingerprint line `openssl x509 -fingerprint` prints for the certificate in `pem`,
// or for the one the server on 127.0.0.1:`port` presents when `port` is set; "" on failure.
std::string Fingerprint(const std::filesystem::path& dir, const std::string& pem, int port = 0) {
    const std::string out = (dir / ("fingerprint-" + RandomHex(6))).string();
    const std::string source =
        port != 0 ? "openssl s_client -connect 127.0.0.1:" + std::to_string(port) + " </dev/null 2>/dev/null | "
                  : "cat '" + pem + "' | ";
    const std::string command = "cd '" + dir.string() + "' && " + source +
                                "openssl x509 -noout -fingerprint -sha256 >'" + out + "' 2>/dev/null";
    if (std::system(command.c_str()) != 0) return "";
    std::ifstream in(out);
    std::string line;
    std::getline(in, line);
    std::filesystem::remove(out);
    return line;
}

// The TCP ports `pid` listens on (IPv4 and IPv6): its sockets' inodes (/proc/<pid>/fd) matched
// against the listening rows (state 0A) of its network namespace's tables.
std::set<int> ListeningPorts(pid_t pid) {
    const std::string proc = "/proc/" + std::to_string(pid);
    std::set<std::string> inodes;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(proc + "/fd", ec)) {
        std::error_code link_ec;
        const auto target = std::filesystem::read_symlink(entry.path(), link_ec).string();
        if (!link_ec && target.starts_with("socket:[")) inodes.insert(target.substr(8, target.size() - 9));
    }
    std::set<int> ports;
    for (const char* table : {"/net/tcp", "/net/tcp6"}) {
        std::ifstream in(proc + table);
        std::string line;
        std::getline(in, line);  // the header
        while (std::getline(in, line)) {
            std::istringstream row(line);
            std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
            row >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
            if (state != "0A" || !inodes.contains(inode)) continue;
            ports.insert(std::stoi(local.substr(local.rfind(':') + 1), nullptr, 16));
        }
    }
    return ports;
}

class TlsProcessTest : public db::testing::DbTest {
  protected:
    void SetUpDatabase() override {
        if (GetParam() != db::Backend::kMySql) GTEST_SKIP() << "the cluster runs on MariaDB";
        ASSERT_TRUE(db::Migrator(db()).Migrate().ok());
        IssueLeaf(dir_, "cluster");
        MakeCa(dir_, "stranger");
    }
    void TearDown() override {
        pythons_.clear();
        clients_.clear();
        webs_.clear();
        web_.reset();
        nodes_.clear();
        DbTest::TearDown();
    }

    std::string File(const std::string& name) const { return (dir_ / name).string(); }

    // A server's tls: section (indented for `indent`) with the certificate `<stem>.crt`; `extra`
    // are more keys of the section ("client-ca-file: ...").
    std::string ServerTls(const std::string& indent, const std::string& stem = "cluster",
                          const std::vector<std::string>& extra = {}) const {
        std::string out = indent + "tls:\n" + indent + "  cert-file: \"" + File(stem + ".crt") + "\"\n" + indent +
                          "  key-file: \"" + File(stem + ".key") + "\"\n";
        for (const auto& line : extra) out += indent + "  " + line + "\n";
        return out;
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

    // Trigger node `n` serving the certificate `<stem>.crt` (reload-check `reload_check`) and
    // trusting `ca` for its calls.
    void StartNode(int n, const std::string& stem = "cluster", const std::string& reload_check = "5s",
                   const std::string& ca = "ca.crt") {
        const auto config = dir_ / ("trigger-" + std::to_string(n) + ".yaml");
        std::ofstream(config) << "node-id: \"node-" << n << "\"\ntoken: \"t0ken\"\nheartbeat-interval: 200ms\n"
                              << "http:\n  listen: \"127.0.0.1:0\"\n  access-log: errors\n"
                              << ServerTls("  ", stem, {"reload-check: " + reload_check}) << ClientTls("", ca, true)
                              << "database:\n  url: \"" << test_db().url().ToString() << "\"\n"
                              << "election:\n  tick: 200ms\n  ttl: 1s\n  margin: 300ms\n"
                              << "scheduler:\n  node-ttl: 1s\n"
                              << "slave:\n  poll-interval: 200ms\n";
        nodes_[n] = std::make_unique<ChildProcess>(
            std::vector<std::string>{SCHED_TRIGGER_BIN, "--config", config.string()}, dir_.string());
        ports_[n] = Port(*nodes_[n], "listening on https://127.0.0.1:");
    }

    // A scheduler-web node named `name` whose server's tls: section is `tls`; returns its port.
    int StartWebNamed(const std::string& name, const std::string& tls) {
        const auto config = dir_ / (name + ".yaml");
        std::ofstream(config) << "token: \"t0ken\"\nhttp:\n  listen: \"127.0.0.1:0\"\n"
                              << tls << ClientTls("", "ca.crt", true) << "database:\n  url: \""
                              << test_db().url().ToString() << "\"\n";
        webs_[name] = std::make_unique<ChildProcess>(
            std::vector<std::string>{SCHED_WEB_BIN, "--config", config.string()}, dir_.string());
        return Port(*webs_[name], "scheduler-web listening on https://127.0.0.1:");
    }

    void StartWeb() {
        web_port_ = StartWebNamed("web", ServerTls("  "));
        web_ = std::move(webs_["web"]);
        webs_.erase("web");
    }

    // A demo-client serving HTTPS with `<stem>.crt` and calling `web` (default: the web node)
    // over https, trusting `ca`; `client_tls` are more keys of its http-client.tls section.
    ChildProcess& StartClient(const std::string& name, const std::string& ca, const std::string& stem = "cluster",
                              const std::string& web = "", const std::vector<std::string>& client_tls = {}) {
        const auto config = dir_ / (name + ".yaml");
        std::ofstream out(config);
        out << "executor:\n  app: demo\n  web-endpoints: [\""
            << (web.empty() ? "https://127.0.0.1:" + std::to_string(web_port_) : web)
            << "\"]\n  token: \"t0ken\"\n  heartbeat-interval: 1s\n  capacity: 1000\n"
            << "  spool-dir: \"" << File("spool-" + name) << "\"\n"
            << "  http:\n    listen: \"127.0.0.1:0\"\n"
            << ServerTls("    ", stem, {"reload-check: 10m"}) << ClientTls("  ", ca, false);
        for (const auto& line : client_tls) out << "      " << line << "\n";
        out.close();
        clients_[name] = std::make_unique<ChildProcess>(
            std::vector<std::string>{SCHED_DEMO_CLIENT_BIN, "--config", config.string()}, dir_.string());
        return *clients_[name];
    }

    // The Python SDK's demo service (app `pydemo`) serving HTTPS with the cluster certificate
    // and calling the web node over https, trusting `ca`.
    ChildProcess& StartPython(const std::string& name, const std::string& ca) {
        pythons_[name] = std::make_unique<ChildProcess>(
            std::vector<std::string>{SCHED_PYTHON3, SCHED_PYTHON_DEMO, "--web",
                                     "https://127.0.0.1:" + std::to_string(web_port_), "--app", "pydemo", "--token",
                                     "t0ken", "--listen", "127.0.0.1:0", "--heartbeat-interval", "1", "--tls-cert-file",
                                     File("cluster.crt"), "--tls-key-file", File("cluster.key"), "--ca-file", File(ca)},
            dir_.string());
        return *pythons_[name];
    }

    // The port a C++ SDK executor logs it serves on ("executor: listening on 127.0.0.1:<port>
    // (https)" on stderr); 0 when no such line came.
    static int ExecutorPort(ChildProcess& p) {
        const std::string needle = "listening on 127.0.0.1:";
        auto line = p.WaitForStderrLine(needle, 10s);
        return line ? std::stoi(line->substr(line->find(needle) + needle.size())) : 0;
    }

    bool Live(const std::string& app) {
        return WaitFor(
            [&] {
                auto live = store::ExecutorRepository(db()).ListLive(app, 30000);
                return live.ok() && !live->empty();
            },
            30s);
    }

    // Every-second cron jobs on `app`'s `handler`, the first fire at `first`, none from `end` on
    // (end_at) when `end` is set.
    std::vector<std::int64_t> CreateJobs(int count, const std::string& app, const std::string& handler,
                                         std::int64_t first, std::optional<std::int64_t> end = {}) {
        std::vector<std::int64_t> ids;
        for (int i = 0; i < count; ++i) {
            model::Job j;
            j.name = "tls-" + app + "-" + std::to_string(i);
            j.app = app;
            j.handler = handler;
            j.params = R"({"over":"tls"})";
            j.schedule_type = *sched::ParseScheduleType("cron");
            j.schedule_expr = "* * * * * ?";
            j.next_fire_time = first;
            if (end) j.end_at = *end - 1;
            auto created = store::JobRepository(db()).Create(j);
            EXPECT_TRUE(created.ok()) << created.status().ToString();
            if (created.ok()) ids.push_back(created->id);
        }
        return ids;
    }

    std::vector<model::Fire> FiresOf(std::int64_t job) {
        auto fires = store::FireRepository(db()).List({.job_id = job, .limit = 1000});
        return fires.ok() ? *fires : std::vector<model::Fire>{};
    }

    // Waits until each job has `seconds` final fires scheduled before `end`.
    bool WaitForFires(const std::vector<std::int64_t>& jobs, int seconds, std::int64_t end) {
        return WaitFor(
            [&] {
                for (const auto job : jobs) {
                    int done = 0;
                    for (const auto& f : FiresOf(job)) {
                        if (f.scheduled_time < end && model::IsFinal(f.status)) ++done;
                    }
                    if (done < seconds) return false;
                }
                return true;
            },
            45s);
    }

    std::string Logs() {
        std::string out;
        for (const auto& [n, p] : nodes_) out += "node " + std::to_string(n) + ":\n" + p->stderr_text() + "\n";
        if (web_) out += "web:\n" + web_->stderr_text() + "\n";
        for (const auto& [name, p] : clients_) out += name + ":\n" + p->stderr_text() + "\n";
        for (const auto& [name, p] : pythons_) out += name + ":\n" + p->stderr_text() + "\n";
        return out;
    }

    testing::ScratchDir scratch_{"sched-tls-"};
    const std::filesystem::path& dir_ = scratch_.path();
    std::map<int, std::unique_ptr<ChildProcess>> nodes_;
    std::map<int, int> ports_;
    std::unique_ptr<ChildProcess> web_;
    int web_port_ = 0;
    std::map<std::string, std::unique_ptr<ChildProcess>> webs_;
    std::map<std::string, std::unique_ptr<ChildProcess>> clients_;
    std::map<std::string, std::unique_ptr<ChildProcess>> pythons_;
};

TEST_P(TlsProcessTest, EveryHopOverTlsAndEveryFireSucceeds) {
    for (int n = 1; n <= 3; ++n) StartNode(n);
    StartWeb();
    ASSERT_NE(web_port_, 0);
    ChildProcess& client = StartClient("demo", "ca.crt");
    ChildProcess& python = StartPython("pydemo", "ca.crt");
    auto python_line = python.WaitForStdoutLine("demo_service: serving at 127.0.0.1:", 30s);
    ASSERT_TRUE(python_line) << python.stderr_text();
    const int python_port = std::stoi(python_line->substr(python_line->rfind(':') + 1));
    ASSERT_TRUE(Live("demo")) << client.stderr_text();
    ASSERT_TRUE(Live("pydemo")) << python.stderr_text();

    // The web API over https, verified against the cluster CA; plain http gets no answer.
    http::ClientOptions trusting;
    trusting.tls.ca_file = File("ca.crt");
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

    // Every-second jobs for a few seconds on both SDKs' services: the nodes plan, notify each
    // other and dispatch to the executors, which report to the web node, all over TLS.
    constexpr int kSeconds = 4;
    const std::int64_t first = (NowMs() / 1000 + 2) * 1000;
    const std::int64_t end = first + std::int64_t{kSeconds} * 1000;
    std::vector<std::int64_t> jobs_ids = CreateJobs(10, "demo", "echo", first);
    for (const auto id : CreateJobs(3, "pydemo", "echo", first)) jobs_ids.push_back(id);
    ASSERT_EQ(jobs_ids.size(), 13U);
    ASSERT_TRUE(WaitForFires(jobs_ids, kSeconds, end)) << Logs();
    for (const auto job : jobs_ids) {
        for (const auto& f : FiresOf(job)) {
            if (f.scheduled_time >= end) continue;
            EXPECT_EQ(f.status, model::FireStatus::kSucceeded)
                << "job " << job << " at " << f.scheduled_time << ": " << f.result_message.value_or("");
            EXPECT_EQ(f.result_message, R"({"over":"tls"})");
        }
    }
    // Every handshake succeeded: a refused one is logged by its server ("TLS handshake with ...
    // failed"), a refused call by the caller ("certificate verify failed"). Node-to-node notices
    // would otherwise go unnoticed here (the slaves' polling makes up for a lost one).
    std::vector<std::pair<std::string, ChildProcess*>> all = {
        {"demo-client", &client}, {"web", web_.get()}, {"python", &python}};
    for (int n = 1; n <= 3; ++n) all.emplace_back("node " + std::to_string(n), nodes_[n].get());
    for (auto& [name, p] : all) {
        (void)p->WaitForStderrLine("\x01", 100ms);  // reads what came so far
        EXPECT_EQ(p->stderr_text().find("TLS handshake"), std::string::npos) << name << ":\n" << p->stderr_text();
        EXPECT_EQ(p->stderr_text().find("certificate verify failed"), std::string::npos) << name << ":\n"
                                                                                         << p->stderr_text();
    }

    // No process listens for plain HTTP: each has exactly its configured port, and a plain
    // request there gets no HTTP answer, only a refused handshake its server logs.
    const std::map<std::string, int> configured = {{"demo-client", 0},      {"web", web_port_},
                                                   {"python", python_port}, {"node 1", ports_[1]},
                                                   {"node 2", ports_[2]},   {"node 3", ports_[3]}};
    for (auto& [name, p] : all) {
        const int port = name == "demo-client" ? ExecutorPort(client) : configured.at(name);
        ASSERT_NE(port, 0) << name << ":\n" << p->stderr_text();
        EXPECT_EQ(ListeningPorts(p->pid()), std::set<int>{port}) << name;
        http::testing::RawConnection plain(static_cast<std::uint16_t>(port));
        (void)plain.TrySend("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
        const std::string answer = plain.ReadUntilClose(10s);
        EXPECT_FALSE(answer.starts_with("HTTP/")) << name << " answered plain HTTP: " << answer;
        auto refused = p->WaitForStderrLine("TLS handshake with 127.0.0.1", 10s);
        EXPECT_TRUE(refused) << name << ":\n" << p->stderr_text();
    }

    // A demo-client that trusts another CA cannot register, and says why; so does the Python
    // demo service, and so does a caller of the API.
    ChildProcess& stranger = StartClient("stranger", "stranger-ca.crt");
    auto line = stranger.WaitForStderrLine("certificate verify failed", 30s);
    ASSERT_TRUE(line) << stranger.stderr_text();
    EXPECT_NE(line->find("certificate verify failed: unable to get local issuer certificate"), std::string::npos)
        << *line;
    ChildProcess& python_stranger = StartPython("python-stranger", "stranger-ca.crt");
    auto python_refusal = python_stranger.WaitForStderrLine("certificate verify failed", 30s);
    ASSERT_TRUE(python_refusal) << python_stranger.stderr_text();
    EXPECT_NE(python_refusal->find("unable to get local issuer certificate"), std::string::npos) << *python_refusal;
    http::ClientOptions wrong;
    wrong.tls.ca_file = File("stranger-ca.crt");
    http::testing::BlockingClient wrong_api(wrong);
    auto refused = wrong_api.Get(web + "/api/v1/jobs", {.bearer_token = "t0ken"});
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("unable to get local issuer certificate"), std::string::npos)
        << refused.status().message();
}

// Certificates that must be refused, each against a real scheduler-web node and a real
// demo-client: the caller fails closed and its log or answer names the cause, and the server
// logs the refused handshake. A correctly configured client beside each proves the server works.
TEST_P(TlsProcessTest, RefusedCertificatesFailClosedNamingTheCause) {
    http::testing::TestPki pki("hostile test CA");
    std::filesystem::copy_file(pki.ca_file(), File("hostile-ca.crt"));
    const auto install = [&](const http::testing::TestPki::Files& files, const std::string& stem) {
        std::filesystem::copy_file(files.cert, File(stem + ".crt"));
        std::filesystem::copy_file(files.key, File(stem + ".key"));
    };
    install(pki.Issue("expired", "localhost", {"127.0.0.1", "localhost"}, /*expired=*/true), "expired");
    install(pki.Issue("elsewhere", "elsewhere.invalid", {"elsewhere.invalid"}), "elsewhere");
    install(pki.Issue("good", "localhost", {"127.0.0.1", "localhost"}), "good");
    install(pki.Issue("member", "demo", {}), "member");

    const int expired_port = StartWebNamed("web-expired", ServerTls("  ", "expired"));
    const int elsewhere_port = StartWebNamed("web-elsewhere", ServerTls("  ", "elsewhere"));
    const int mtls_port =
        StartWebNamed("web-mtls", ServerTls("  ", "good", {"client-ca-file: \"" + File("hostile-ca.crt") + "\""}));
    ASSERT_NE(expired_port, 0);
    ASSERT_NE(elsewhere_port, 0);
    ASSERT_NE(mtls_port, 0);
    const auto url = [](const std::string& host, int port) {
        return "https://" + host + ":" + std::to_string(port) + "/api/v1/jobs";
    };
    http::ClientOptions trusting;
    trusting.tls.ca_file = File("hostile-ca.crt");
    http::testing::BlockingClient api(trusting);
    // A call to web node `port` by `host` is refused, with `cause` in the message.
    const auto expect_refused = [&](const std::string& host, int port, const std::string& cause) {
        auto r = api.Get(url(host, port), {.bearer_token = "t0ken"});
        const std::string failure = r.ok() ? "answered " + std::to_string(r->status) : r.status().message();
        EXPECT_NE(failure.find(cause), std::string::npos) << failure;
    };
    // A demo-client (trusting the hostile CA) pointed at `web` logs `cause`.
    const auto expect_client_refused = [&](const std::string& name, const std::string& web, const std::string& cause) {
        ChildProcess& client = StartClient(name, "hostile-ca.crt", "cluster", web);
        EXPECT_TRUE(client.WaitForStderrLine(cause, 30s)) << client.stderr_text();
    };

    // An expired server certificate.
    expect_refused("127.0.0.1", expired_port, "certificate verify failed: certificate has expired");
    expect_client_refused("to-expired", "https://127.0.0.1:" + std::to_string(expired_port), "certificate has expired");
    EXPECT_TRUE(webs_["web-expired"]->WaitForStderrLine("TLS handshake with 127.0.0.1", 10s))
        << webs_["web-expired"]->stderr_text();

    // A certificate that does not name the host dialled: by IP address and by name.
    expect_refused("127.0.0.1", elsewhere_port, "certificate verify failed: IP address mismatch");
    expect_refused("localhost", elsewhere_port, "certificate verify failed: hostname mismatch");
    expect_client_refused("to-elsewhere", "https://localhost:" + std::to_string(elsewhere_port), "hostname mismatch");

    // No client certificate where the server requires one (client-ca-file): refused on both
    // sides with the cause; with a certificate from that CA the same server answers.
    expect_refused("127.0.0.1", mtls_port, "no client certificate was presented");
    EXPECT_TRUE(webs_["web-mtls"]->WaitForStderrLine("peer did not return a certificate", 10s))
        << webs_["web-mtls"]->stderr_text();
    expect_client_refused("anonymous", "https://127.0.0.1:" + std::to_string(mtls_port),
                          "no client certificate was presented");
    auto registered = store::ExecutorRepository(db()).ListLive("demo", 30000);
    ASSERT_TRUE(registered.ok());
    EXPECT_TRUE(registered->empty()) << "a refused client registered";

    http::ClientOptions member_options = trusting;
    member_options.tls.cert_file = File("member.crt");
    member_options.tls.key_file = File("member.key");
    http::testing::BlockingClient member_api(member_options);
    auto answered = member_api.Get(url("127.0.0.1", mtls_port), {.bearer_token = "t0ken"});
    ASSERT_TRUE(answered.ok()) << answered.status().message();
    EXPECT_EQ(answered->status, 200) << answered->body;
    // That executor serves the expired certificate itself: it registers (its own calls are
    // fine), but a trigger node dispatching a fire to it refuses the handshake, logs why, and
    // the fire fails naming the cause.
    ChildProcess& member =
        StartClient("member", "hostile-ca.crt", "expired", "https://127.0.0.1:" + std::to_string(mtls_port),
                    {"cert-file: \"" + File("member.crt") + "\"", "key-file: \"" + File("member.key") + "\""});
    ASSERT_TRUE(Live("demo")) << member.stderr_text();
    StartNode(1, "good", "5s", "hostile-ca.crt");
    const std::int64_t first = (NowMs() / 1000 + 2) * 1000;
    const auto jobs = CreateJobs(1, "demo", "echo", first, first + 1000);
    ASSERT_EQ(jobs.size(), 1U);
    auto dispatch_refused = nodes_[1]->WaitForStderrLine("certificate has expired", 30s);
    EXPECT_TRUE(dispatch_refused) << nodes_[1]->stderr_text();
    ASSERT_TRUE(WaitForFires(jobs, 1, first + 1000)) << Logs();
    for (const auto& f : FiresOf(jobs[0])) {
        EXPECT_EQ(f.status, model::FireStatus::kFailed);
        EXPECT_NE(f.result_message.value_or("").find("certificate verify failed: certificate has expired"),
                  std::string::npos)
            << f.result_message.value_or("");
    }
}

// Certificates renewed under load: while jobs fire every second, the executor's and node 1's
// certificate and key files are replaced by new ones from the same CA and both processes get
// SIGHUP. They serve the new certificates at once, and every fire runs exactly once.
TEST_P(TlsProcessTest, CertificatesRenewedUnderLoadLoseOrDoubleNoFire) {
    IssueLeaf(dir_, "node-1");
    IssueLeaf(dir_, "executor");
    // reload-check is long (10m) so that only SIGHUP can pick the new files up.
    StartNode(1, "node-1", "10m");
    StartNode(2);
    StartNode(3);
    StartWeb();
    ChildProcess& client = StartClient("demo", "ca.crt", "executor");
    ASSERT_TRUE(Live("demo")) << client.stderr_text();
    const int client_port = ExecutorPort(client);
    ASSERT_NE(client_port, 0) << client.stderr_text();
    const std::string executor_first = Fingerprint(dir_, File("executor.crt"));
    ASSERT_FALSE(executor_first.empty());
    ASSERT_EQ(Fingerprint(dir_, "", client_port), executor_first);

    // The count handler answers with how many calls the process has served: over all fires the
    // answers are 1..N exactly once each iff no fire ran twice and nothing else ran.
    constexpr int kSeconds = 10;
    const std::int64_t first = (NowMs() / 1000 + 2) * 1000;
    const std::int64_t end = first + std::int64_t{kSeconds} * 1000;
    const auto jobs = CreateJobs(3, "demo", "count", first, end);
    ASSERT_EQ(jobs.size(), 3U);

    // Half-way through, scripts/tls-certs.sh renews both certificates under the same CA (new
    // files renamed over the old), then SIGHUP.
    while (NowMs() < first + 4000) std::this_thread::sleep_for(50ms);
    const std::string node_first = Fingerprint(dir_, File("node-1.crt"));
    IssueLeaf(dir_, "node-1");
    IssueLeaf(dir_, "executor");
    const std::string node_next = Fingerprint(dir_, File("node-1.crt"));
    const std::string executor_next = Fingerprint(dir_, File("executor.crt"));
    ASSERT_FALSE(node_next.empty());
    ASSERT_NE(node_next, node_first);
    ASSERT_NE(executor_next, executor_first);
    nodes_[1]->Signal(SIGHUP);
    client.Signal(SIGHUP);
    EXPECT_TRUE(WaitFor([&] { return Fingerprint(dir_, "", ports_[1]) == node_next; }, 10s))
        << Fingerprint(dir_, "", ports_[1]) << "\n"
        << nodes_[1]->stderr_text();
    EXPECT_TRUE(WaitFor([&] { return Fingerprint(dir_, "", client_port) == executor_next; }, 10s))
        << Fingerprint(dir_, "", client_port) << "\n"
        << client.stderr_text();
    ASSERT_TRUE(client.Running()) << client.stderr_text();
    ASSERT_TRUE(nodes_[1]->Running()) << nodes_[1]->stderr_text();

    ASSERT_TRUE(WaitForFires(jobs, kSeconds, end)) << Logs();
    std::set<std::string> answers;
    int fires = 0;
    for (const auto job : jobs) {
        std::set<std::int64_t> times;
        for (const auto& f : FiresOf(job)) {
            ++fires;
            EXPECT_EQ(f.status, model::FireStatus::kSucceeded)
                << "job " << job << " at " << f.scheduled_time << ": " << f.result_message.value_or("");
            EXPECT_TRUE(times.insert(f.scheduled_time).second)
                << "job " << job << " fired twice at " << f.scheduled_time;
            EXPECT_EQ((f.scheduled_time - first) % 1000, 0);
            answers.insert(f.result_message.value_or(""));
        }
        EXPECT_EQ(times.size(), static_cast<std::size_t>(kSeconds)) << "job " << job;
        if (!times.empty()) {
            EXPECT_EQ(*times.begin(), first);
            EXPECT_EQ(*times.rbegin(), end - 1000);
        }
    }
    std::set<std::string> expected;
    for (int n = 1; n <= fires; ++n) expected.insert(std::to_string(n));
    EXPECT_EQ(answers, expected) << "a fire ran twice, or a call got no fire";
    EXPECT_EQ(fires, 3 * kSeconds);
    EXPECT_TRUE(nodes_[1]->WaitForStderrLine("SIGHUP", 5s)) << nodes_[1]->stderr_text();
    EXPECT_TRUE(client.WaitForStderrLine("SIGHUP received, reloading TLS certificates", 5s)) << client.stderr_text();
}

SCHED_DB_TEST_SUITE(TlsProcessTest);

}  // namespace
}  // namespace sched
