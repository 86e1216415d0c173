// The shipped Grafana dashboard and Prometheus alert rules against a live /metrics of the real
// scheduler-standalone binary: promtool accepts both the rules and the exposition, and every
// metric name the dashboard and the rules use is declared there.

#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>

#include <gtest/gtest.h>

#include "../support/scratch_dir.hpp"
#include "../support/source_files.hpp"
#include "sched/common/testing/child_process.hpp"
#include "sched/common/testing/wait_for.hpp"

#include "sched/common/node_id.hpp"

namespace sched {
namespace {

using namespace std::chrono_literals;
using testing::ChildProcess;
using testing::ReadFile;

// Runs a shell command; returns its exit status and output (stdout and stderr).
std::pair<int, std::string> Shell(const std::string& command) {
    std::string out;
    const int code = testing::RunCommand({"/bin/sh", "-c", command}, &out);
    return {code, out};
}

// The metric names a dashboard or rule file uses: every sched_* or process_* identifier.
std::set<std::string> NamesUsed(const std::string& text) {
    static const std::regex kName(R"((?:^|[^A-Za-z0-9_:])((?:sched|process)_[A-Za-z0-9_:]*))");
    std::set<std::string> out;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), kName); it != std::sregex_iterator(); ++it) {
        out.insert((*it)[1].str());
    }
    return out;
}

// The names `names` uses that `exposition` does not declare (# TYPE). A histogram's _bucket,
// _sum and _count series count as its own name.
std::set<std::string> Missing(const std::set<std::string>& names, const std::string& exposition) {
    std::map<std::string, std::string> declared;  // name -> type
    std::istringstream in(exposition);
    for (std::string line; std::getline(in, line);) {
        std::istringstream words(line);
        std::string hash, kw, name, type;
        if (words >> hash >> kw >> name >> type && hash == "#" && kw == "TYPE") declared[name] = type;
    }
    std::set<std::string> missing;
    for (const auto& n : names) {
        if (declared.count(n) != 0) continue;
        bool found = false;
        for (const char* suffix : {"_bucket", "_sum", "_count"}) {
            const std::string s(suffix);
            if (n.size() > s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0) {
                auto it = declared.find(n.substr(0, n.size() - s.size()));
                found = found || (it != declared.end() && (it->second == "histogram" || it->second == "summary"));
            }
        }
        if (!found) missing.insert(n);
    }
    return missing;
}

// The names a cluster process serves, and those only an executor (the client SDK) serves.
bool IsClientName(const std::string& name) {
    return name.rfind("sched_client_", 0) == 0;
}
std::set<std::string> ClusterNames(const std::set<std::string>& names) {
    std::set<std::string> out;
    for (const auto& n : names) {
        if (!IsClientName(n)) out.insert(n);
    }
    return out;
}
std::set<std::string> ClientNames(const std::set<std::string>& names) {
    std::set<std::string> out;
    for (const auto& n : names) {
        if (IsClientName(n)) out.insert(n);
    }
    return out;
}

std::string Join(const std::set<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
}

// scheduler-standalone started with --demo on SQLite in a folder of its own: the job "hello"
// (handler echo, every 10 s) and an executor token in data/. Stopped by PID, and its folder
// removed, when the object goes.
class DemoStandalone {
  public:
    explicit DemoStandalone(const std::string& prefix)
        : scratch_(prefix),
          process_({SCHED_STANDALONE_BIN, "--config", ConfigIn(scratch_.path()), "--demo"}, scratch_.path().string()),
          port_(testing::ListeningPort(process_, 20s)) {}

    const std::filesystem::path& dir() const { return scratch_.path(); }
    ChildProcess& process() { return process_; }
    unsigned short port() const { return port_; }  ///< its web module's; 0 when it did not listen

  private:
    static std::string ConfigIn(const std::filesystem::path& dir) {
        const auto config = dir / "standalone.yaml";
        std::ofstream(config) << "http:\n  listen: \"127.0.0.1:0\"\ndatabase:\n  url: \"sqlite://" +
                                     (dir / "data/s.db").string() + "\"\nlog:\n  level: info\n";
        return config.string();
    }

    testing::ScratchDir scratch_;
    ChildProcess process_;
    unsigned short port_;
};

// Scrapes /metrics on `port` into `metrics` every 500 ms until `seen` (which reads `metrics`)
// holds, an answer is not 200, or `within` has passed; the last answer's status.
int ScrapeUntil(unsigned short port, std::string& metrics, std::chrono::milliseconds within,
                const std::function<bool()>& seen) {
    int status = 0;
    testing::WaitFor(
        [&] {
            std::tie(status, metrics) = testing::HttpGet(port, "/metrics");
            return status != 200 || seen();
        },
        within, 500ms);
    return status;
}

// The exposition `metrics` (kept in `file`) passes `promtool check metrics`, and declares every
// name the dashboard and the alert rules use that `names_of` picks (at least `at_least` per file);
// `whose` names the exposition in the failure.
void ExpectCheckedAndDeclaringTheUsedNames(const std::string& metrics, const std::filesystem::path& file,
                                           std::set<std::string> (*names_of)(const std::set<std::string>&),
                                           std::size_t at_least, const std::string& whose) {
    std::ofstream(file) << metrics;
    const auto [code, out] = Shell("promtool check metrics < " + file.string());
    EXPECT_EQ(code, 0) << out;
    for (const char* used : {"/docs/grafana/scheduler-dashboard.json", "/docs/prometheus/alerts.yml"}) {
        const auto names = names_of(NamesUsed(ReadFile(testing::kSourceDir.string() + used)));
        EXPECT_GE(names.size(), at_least) << used;
        EXPECT_EQ(Join(Missing(names, metrics)), "") << used << " names metrics " << whose << " does not declare";
    }
}

TEST(MetricNames, AreCheckedAgainstTheExposition) {
    const std::string exposition =
        "# TYPE sched_fire_lag_seconds histogram\n# TYPE sched_leader gauge\nsched_leader 1\n";
    EXPECT_EQ(NamesUsed("max(sched_leader) + rate(sched_fire_lag_seconds_bucket[5m]) + my_sched_x"),
              (std::set<std::string>{"sched_fire_lag_seconds_bucket", "sched_leader"}));
    EXPECT_TRUE(
        Missing({"sched_leader", "sched_fire_lag_seconds_bucket", "sched_fire_lag_seconds_count"}, exposition).empty());
    EXPECT_EQ(Missing({"sched_no_such_metric", "sched_leader_count"}, exposition),
              (std::set<std::string>{"sched_leader_count", "sched_no_such_metric"}));
}

TEST(AlertRules, PassPromtool) {
    const auto [code, out] = Shell("promtool check rules " SCHED_SOURCE_DIR "/docs/prometheus/alerts.yml");
    EXPECT_EQ(code, 0) << out << "\n(promtool comes with the Debian package prometheus: scripts/deps.sh test)";
}

TEST(StandaloneMetrics, LiveExpositionPassesPromtoolAndDeclaresEveryNameTheDashboardAndRulesUse) {
    // A job every 10 s with no executor, so fires end (failed) and are counted.
    DemoStandalone node("sched-metrics-");
    ASSERT_NE(node.port(), 0) << node.process().stderr_text();
    std::string metrics;
    bool fired = false;
    bool gauges = false;
    const int status = ScrapeUntil(node.port(), metrics, 60s, [&] {
        fired = metrics.find("sched_fire_outcomes_total{app=\"demo\"") != std::string::npos;
        gauges = metrics.find("\nsched_fires_pending ") != std::string::npos &&
                 metrics.find("sched_executors_live{app=\"demo\"} 0") != std::string::npos;
        return fired && gauges;
    });
    ASSERT_EQ(status, 200) << metrics;
    EXPECT_TRUE(fired) << "no fire outcome counted within 60 s\n" << metrics;
    EXPECT_TRUE(gauges) << "no leader gauges within 60 s\n" << metrics;
    node.process().Signal(SIGTERM);
    EXPECT_TRUE(node.process().WaitForExit(10s));
    for (const char* series : {"sched_build_info{", "\nprocess_resident_memory_bytes ", "\nsched_leader 1\n",
                               "sched_http_requests_total "}) {
        EXPECT_NE(metrics.find(series), std::string::npos) << series << "\n" << metrics;
    }
    ExpectCheckedAndDeclaringTheUsedNames(metrics, node.dir() / "metrics.txt", ClusterNames, 5, "/metrics");
}

// The client SDK's opt-in /metrics (executor option `metrics: true`), served by the real
// demo-client running the standalone's demo job: promtool accepts it, the handler's run is
// counted, and every sched_client_* name the dashboard and the rules use is declared there.
TEST(ExecutorMetrics, ADemoClientsExpositionPassesPromtoolAndDeclaresEveryClientNameTheDashboardAndRulesUse) {
    DemoStandalone standalone("sched-client-metrics-");
    ASSERT_NE(standalone.port(), 0) << standalone.process().stderr_text();
    const std::filesystem::path& dir = standalone.dir();
    const std::string web = "http://127.0.0.1:" + std::to_string(standalone.port());
    const auto token_file = dir / "data/executor-token";
    testing::WaitFor([&] { return std::filesystem::exists(token_file); }, 10s, 100ms);
    std::string token;
    std::getline(std::ifstream(token_file), token);
    ASSERT_FALSE(token.empty());

    const auto client_config = dir / "demo-client.yaml";
    std::ofstream(client_config) << "log:\n  level: info\nexecutor:\n  app: demo\n  web-endpoints: [\"" + web +
                                        "\"]\n  heartbeat-interval: 300ms\n  spool-dir: \"" + (dir / "spool").string() +
                                        "\"\n  metrics: true\n  http:\n    listen: \"127.0.0.1:0\"\n";
    ChildProcess client({SCHED_DEMO_CLIENT_BIN, "--config", client_config.string()}, dir.string(),
                        {"SCHED_TOKEN=" + token});
    auto serving = client.WaitForStderrLine("serving ", 20s);
    ASSERT_TRUE(serving) << client.stderr_text();
    // "executor demo: serving 4 handler(s) at 127.0.0.1:PORT, web endpoints: ..."
    const auto at = serving->find(" at 127.0.0.1:");
    ASSERT_NE(at, std::string::npos) << *serving;
    const auto port = static_cast<unsigned short>(std::stoi(serving->substr(at + std::strlen(" at 127.0.0.1:"))));
    // The demo job fires every 10 s: its run is counted within two periods.
    std::string metrics;
    bool ran = false;
    const int status = ScrapeUntil(port, metrics, 30s, [&] {
        ran = metrics.find("sched_client_runs_total{handler=\"echo\",outcome=\"succeeded\"} 1") != std::string::npos;
        return ran;
    });
    ASSERT_EQ(status, 200) << metrics;
    EXPECT_TRUE(ran) << "no run of the demo job counted within 30 s\n" << metrics;
    client.Signal(SIGTERM);
    EXPECT_TRUE(client.WaitForExit(15s));
    standalone.process().Signal(SIGTERM);
    EXPECT_TRUE(standalone.process().WaitForExit(10s));
    for (const char* series : {"sched_client_info{app=\"demo\"} 1", "\nsched_client_signing_keys 1\n",
                               "\nprocess_resident_memory_bytes ", "sched_build_info{"}) {
        EXPECT_NE(metrics.find(series), std::string::npos) << series << "\n" << metrics;
    }
    ExpectCheckedAndDeclaringTheUsedNames(metrics, dir / "client-metrics.txt", ClientNames, 2, "the client's /metrics");
}

}  // namespace
}  // namespace sched
