// docker/: the compose file, its configs and the Dockerfile agree with the apps. No Docker
// engine is needed: the files are parsed, and every config is validated by the real app
// binary (--check-config) or, for the demo client, by the SDK's own config reader.

#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "../support/source_files.hpp"
#include "sched/client/executor.hpp"
#include "sched/common/config.hpp"
#include "sched/common/logging.hpp"
#include "sched/common/testing/child_process.hpp"
#include "sched/db/db_url.hpp"

namespace sched {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

using testing::kSourceDir;
using testing::ReadFile;
const fs::path kDocker = kSourceDir / "docker";

// Secrets the check-config runs are given (values made up for the test).
const std::vector<std::string> kSecretsEnv = {"SCHED_TOKEN=compose-test-token",
                                              "SCHED_DB_PASSWORD=compose-test-password"};

// The YAML text without its comment lines.
std::string WithoutComments(const std::string& text) {
    std::string out;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        const auto first = line.find_first_not_of(' ');
        if (first != std::string::npos && line[first] != '#') out += line + "\n";
    }
    return out;
}

int PortOf(const std::string& host_port) {
    const auto colon = host_port.rfind(':');
    if (colon == std::string::npos) return -1;
    return std::stoi(host_port.substr(colon + 1));
}

// YAML merge keys (`<<: *anchor`), which the compose tools apply and yaml-cpp 0.7 does not: a
// copy of `node` with every map's `<<` entries (a map or a list of maps) merged in, the map's
// own keys winning, recursively.
YAML::Node ExpandMergeKeys(const YAML::Node& node) {
    if (node.IsSequence()) {
        YAML::Node out(YAML::NodeType::Sequence);
        for (const auto& item : node) out.push_back(ExpandMergeKeys(item));
        return out;
    }
    if (!node.IsMap()) return node;
    YAML::Node out(YAML::NodeType::Map);
    for (const auto& kv : node) {
        if (kv.first.as<std::string>() != "<<") out[kv.first.as<std::string>()] = ExpandMergeKeys(kv.second);
    }
    if (const YAML::Node merge = node["<<"]) {
        std::vector<YAML::Node> sources;
        if (merge.IsSequence()) {
            for (const auto& m : merge) sources.push_back(m);
        } else {
            sources.push_back(merge);
        }
        for (const auto& source : sources) {
            const YAML::Node expanded = ExpandMergeKeys(source);
            for (const auto& kv : expanded) {
                const auto key = kv.first.as<std::string>();
                if (!out[key]) out[key] = kv.second;
            }
        }
    }
    return out;
}

// One of our apps' services in the compose file, resolved to its config file.
struct AppService {
    std::string name;
    std::string app;           // command[0]: scheduler-trigger, scheduler-web, demo-client, ...
    std::string config_in;     // the --config path inside the container
    fs::path config_host;      // the mounted file on this machine
    YAML::Node config;         // its YAML
    YAML::Node service;        // the compose entry
    int listen_port = -1;      // http.listen (demo-client: executor.http.listen)
    bool executor_api = true;  // serves the SDK's registry and callback routes
};

class Compose : public ::testing::Test {
  protected:
    void SetUp() override {
        raw_ = YAML::LoadFile((kDocker / "docker-compose.yml").string());
        compose_ = ExpandMergeKeys(raw_);
        ASSERT_TRUE(compose_["services"].IsMap());
        for (const auto& kv : compose_["services"]) {
            const std::string name = kv.first.as<std::string>();
            const YAML::Node svc = kv.second;
            // "mariadb:10.11" or fully qualified ("docker.io/library/mariadb:10.11", which podman
            // resolves without asking which registry a short name means).
            const std::string image = svc["image"].as<std::string>("");
            if (image.substr(image.rfind('/') == std::string::npos ? 0 : image.rfind('/') + 1).rfind("mariadb:", 0) ==
                0) {
                ASSERT_TRUE(mariadb_.empty()) << "two MariaDB services";
                mariadb_ = name;
                continue;
            }
            ASSERT_TRUE(svc["command"] && svc["command"].IsSequence()) << name << ": needs a command list";
            AppService a;
            a.name = name;
            a.service = svc;
            const auto cmd = svc["command"].as<std::vector<std::string>>();
            a.app = cmd.at(0);
            for (std::size_t i = 1; i + 1 < cmd.size(); ++i) {
                if (cmd[i] == "--config") a.config_in = cmd[i + 1];
            }
            ASSERT_FALSE(a.config_in.empty()) << name << ": command has no --config";
            apps_.push_back(a);
        }
        ASSERT_FALSE(mariadb_.empty()) << "no MariaDB service";
    }

    // Resolves the service's --config to the bind-mounted file; fails the test when none is.
    void ResolveConfig(AppService& a) {
        ASSERT_TRUE(a.service["volumes"]) << a.name << ": no volumes, so no config mounted";
        for (const auto& v : a.service["volumes"]) {
            const std::string spec = v.as<std::string>();  // ./src:/target[:ro]
            if (spec.rfind("./", 0) != 0) continue;
            const auto first = spec.find(':');
            const auto second = spec.find(':', first + 1);
            const std::string target =
                spec.substr(first + 1, second == std::string::npos ? std::string::npos : second - first - 1);
            if (target == a.config_in) a.config_host = kDocker / spec.substr(0, first);
        }
        ASSERT_FALSE(a.config_host.empty()) << a.name << ": " << a.config_in << " is not mounted from docker/";
        ASSERT_TRUE(fs::is_regular_file(a.config_host)) << a.name << ": mounted file missing: " << a.config_host;
        a.config = YAML::LoadFile(a.config_host.string());
        const YAML::Node http = a.app == "demo-client" ? a.config["executor"]["http"] : a.config["http"];
        ASSERT_TRUE(http && http["listen"]) << a.config_host << ": set http.listen explicitly";
        a.listen_port = PortOf(http["listen"].as<std::string>());
        if (a.app == "demo-client") {
            a.executor_api = false;
        } else if (a.config["executor-api"]) {
            a.executor_api = a.config["executor-api"].as<bool>();
        }
    }

    std::vector<AppService> Resolved() {
        std::vector<AppService> all = apps_;
        for (auto& a : all) {
            ResolveConfig(a);
            if (::testing::Test::HasFatalFailure()) return {};
        }
        return all;
    }

    YAML::Node raw_;      // as written, merge keys unexpanded
    YAML::Node compose_;  // as the compose tools see it
    std::string mariadb_;
    std::vector<AppService> apps_;
};

TEST_F(Compose, HasTheClusterShape) {
    std::map<std::string, int> count;
    for (const auto& a : apps_) ++count[a.app];
    EXPECT_EQ(count["scheduler-trigger"], 3);
    EXPECT_EQ(count["scheduler-web"], 1);
    EXPECT_EQ(count["demo-client"], 1);
}

// What one of the three tools (Compose v2, docker-compose 1.29, podman-compose 1.0) rejects or
// mangles is not in the file (scripts/container-test.sh and README.md show the tools' output).
TEST_F(Compose, AvoidsWhatOneOfTheComposeToolsRejects) {
    EXPECT_FALSE(raw_["name"]) << "docker-compose 1.29 refuses a top-level name: (COMPOSE_PROJECT_NAME in .env)";
    EXPECT_FALSE(raw_["version"]) << "obsolete in Compose v2";
    for (const auto& kv : raw_) {
        const auto key = kv.first.as<std::string>();
        EXPECT_TRUE(key == "services" || key == "volumes" || key.rfind("x-", 0) == 0) << key;
    }
    // podman-compose 1.0 turns ${A:-${B:?}} into "}": no variable inside another's default.
    const std::string text = WithoutComments(ReadFile(kDocker / "docker-compose.yml"));
    EXPECT_FALSE(std::regex_search(text, std::regex(R"(\$\{[^}]*\$\{)"))) << "nested ${..${..}}";
    EXPECT_EQ(text.find("$$"), std::string::npos) << "an escaped $ is read differently by the tools";
    // The project name the README's commands use.
    EXPECT_NE(ReadFile(kDocker / ".env.example").find("\nCOMPOSE_PROJECT_NAME=sched\n"), std::string::npos);
}

// One definition of the block every service of our image shares, merged into each.
TEST_F(Compose, EveryAppServiceMergesTheSharedBlock) {
    ASSERT_TRUE(raw_["x-sched-app"] && raw_["x-sched-app"].IsMap());
    const YAML::Node shared = raw_["x-sched-app"];
    ASSERT_TRUE(shared["image"] && shared["build"]);
    for (const auto& a : apps_) {
        SCOPED_TRACE(a.name);
        const YAML::Node raw = raw_["services"][a.name];
        ASSERT_TRUE(raw["<<"]) << "no <<: merge of the shared block";
        for (const char* key : {"build", "image", "init", "restart"}) {
            EXPECT_FALSE(raw[key]) << key << " repeated instead of merged";
            EXPECT_TRUE(a.service[key]) << key << " missing after the merge";
        }
        EXPECT_EQ(a.service["image"].as<std::string>(), shared["image"].as<std::string>());
        EXPECT_TRUE(a.service["init"].as<bool>(false)) << "PID 1 must reap and forward SIGTERM";
    }
}

TEST_F(Compose, EveryConfigIsMountedAndEveryPortMatchesItsListenPort) {
    for (const auto& a : Resolved()) {
        SCOPED_TRACE(a.name);
        ASSERT_GT(a.listen_port, 0) << "listen port 0 cannot be published";
        std::set<int> container_ports;
        for (const auto& p : a.service["ports"]) {
            // "[ip:]published:target": both sides must be the listen port (one port per node).
            const std::string spec = p.as<std::string>();
            const auto last = spec.rfind(':');
            ASSERT_NE(last, std::string::npos) << spec;
            const int target = std::stoi(spec.substr(last + 1));
            const std::string rest = spec.substr(0, last);
            const int published =
                std::stoi(rest.substr(rest.rfind(':') == std::string::npos ? 0 : rest.rfind(':') + 1));
            EXPECT_EQ(target, a.listen_port) << spec;
            EXPECT_EQ(published, a.listen_port) << spec;
            container_ports.insert(target);
        }
        for (const auto& p : a.service["expose"]) {
            EXPECT_EQ(std::stoi(p.as<std::string>()), a.listen_port);
            container_ports.insert(std::stoi(p.as<std::string>()));
        }
        EXPECT_EQ(container_ports, std::set<int>{a.listen_port}) << "publish or expose exactly the listen port";
        // Listening on loopback inside a container serves nobody else.
        const std::string listen =
            (a.app == "demo-client" ? a.config["executor"]["http"] : a.config["http"])["listen"].as<std::string>();
        EXPECT_EQ(listen.rfind("0.0.0.0:", 0), 0u) << listen;
    }
}

TEST_F(Compose, HealthChecksProbeTheListenPort) {
    const std::regex probe(R"(http://127\.0\.0\.1:(\d+)/(\S*))");
    for (const auto& a : Resolved()) {
        SCOPED_TRACE(a.name);
        ASSERT_TRUE(a.service["healthcheck"]["test"]) << "no health check";
        std::string test;
        for (const auto& part : a.service["healthcheck"]["test"]) test += part.as<std::string>() + " ";
        std::smatch m;
        ASSERT_TRUE(std::regex_search(test, m, probe)) << test;
        EXPECT_EQ(std::stoi(m[1]), a.listen_port) << test;
        if (a.app != "demo-client") {
            EXPECT_TRUE(m[2] == "readyz" || m[2] == "healthz") << test;
        }
    }
    EXPECT_TRUE(compose_["services"][mariadb_]["healthcheck"]["test"]) << "MariaDB has no health check";
}

TEST_F(Compose, DependenciesWaitForHealthyServices) {
    for (const auto& a : apps_) {
        SCOPED_TRACE(a.name);
        const YAML::Node deps = a.service["depends_on"];
        ASSERT_TRUE(deps && deps.IsMap()) << "depends_on with conditions expected";
        for (const auto& d : deps) {
            const std::string dep = d.first.as<std::string>();
            EXPECT_EQ(d.second["condition"].as<std::string>(""), "service_healthy") << dep;
            ASSERT_TRUE(compose_["services"][dep]) << "depends on an unknown service " << dep;
            EXPECT_TRUE(compose_["services"][dep]["healthcheck"]) << dep << " has no health check to wait for";
        }
        if (a.app != "demo-client") {
            EXPECT_TRUE(deps[mariadb_]) << "must wait for " << mariadb_;
        }
    }
}

TEST_F(Compose, DatabaseUrlsNameTheMariaDbService) {
    const YAML::Node env = compose_["services"][mariadb_]["environment"];
    const std::string database = env["MARIADB_DATABASE"].as<std::string>("");
    const std::string user = env["MARIADB_USER"].as<std::string>("");
    ASSERT_FALSE(database.empty());
    for (const auto& a : Resolved()) {
        if (a.app == "demo-client") continue;
        SCOPED_TRACE(a.name);
        auto url = db::ParseDbUrl(a.config["database"]["url"].as<std::string>(""));
        ASSERT_TRUE(url.ok()) << url.status().ToString();
        EXPECT_EQ(url->backend, db::Backend::kMySql);
        EXPECT_EQ(url->host, mariadb_);
        EXPECT_EQ(url->port, 3306);
        EXPECT_EQ(url->database, database);
        EXPECT_EQ(url->user, user);
        EXPECT_EQ(url->password, "") << "the password comes from SCHED_DB_PASSWORD, not the file";
        // The password MariaDB creates the user with is the one the apps get.
        EXPECT_EQ(a.service["environment"]["SCHED_DB_PASSWORD"].as<std::string>("").find("${SCHED_DB_PASSWORD:?"), 0u);
    }
    EXPECT_EQ(env["MARIADB_PASSWORD"].as<std::string>("").find("${SCHED_DB_PASSWORD:?"), 0u);
}

TEST_F(Compose, TriggerNodesAdvertiseTheirOwnServiceAndHaveDistinctIds) {
    std::set<std::string> ids;
    for (const auto& a : Resolved()) {
        if (a.app != "scheduler-trigger") continue;
        SCOPED_TRACE(a.name);
        EXPECT_EQ(a.config["advertised-address"].as<std::string>(""), a.name + ":" + std::to_string(a.listen_port));
        const std::string id = a.config["node-id"].as<std::string>("");
        EXPECT_FALSE(id.empty());
        EXPECT_TRUE(ids.insert(id).second) << "duplicate node-id " << id;
    }
    EXPECT_EQ(ids.size(), 3u);
}

TEST_F(Compose, DemoClientReachesServicesThatServeTheExecutorApi) {
    const auto all = Resolved();
    std::map<std::string, const AppService*> by_name;
    for (const auto& a : all) by_name[a.name] = &a;
    const std::regex endpoint(R"(http://([^:/]+):(\d+)/?)");
    int checked = 0;
    for (const auto& a : all) {
        if (a.app != "demo-client") continue;
        const YAML::Node ex = a.config["executor"];
        EXPECT_EQ(ex["advertised-address"].as<std::string>(""), a.name + ":" + std::to_string(a.listen_port));
        ASSERT_TRUE(ex["web-endpoints"] && ex["web-endpoints"].size() > 0);
        for (const auto& e : ex["web-endpoints"]) {
            const std::string url = e.as<std::string>();
            std::smatch m;
            ASSERT_TRUE(std::regex_match(url, m, endpoint)) << url;
            const auto it = by_name.find(m[1]);
            ASSERT_NE(it, by_name.end()) << url << " names no service";
            EXPECT_EQ(std::stoi(m[2]), it->second->listen_port) << url;
            EXPECT_TRUE(it->second->executor_api) << url << ": " << it->second->app << " does not serve the SDK routes";
            ++checked;
        }
        // An executor token (never sent to it by the nodes, which sign their calls).
        EXPECT_NE(a.service["environment"]["SCHED_TOKEN"].as<std::string>("").find("SCHED_EXECUTOR_TOKEN"),
                  std::string::npos);
    }
    EXPECT_GT(checked, 0);
}

TEST_F(Compose, NoSecretInTheFilesAndEveryVariableInEnvExample) {
    // The variables the compose file interpolates (comment lines left out).
    const std::string compose_text = WithoutComments(ReadFile(kDocker / "docker-compose.yml"));
    const std::string example = ReadFile(kDocker / ".env.example");
    const std::regex var(R"(\$\{([A-Z_][A-Z0-9_]*))");
    std::set<std::string> used;
    for (auto it = std::sregex_iterator(compose_text.begin(), compose_text.end(), var); it != std::sregex_iterator();
         ++it) {
        used.insert((*it)[1]);
    }
    for (const char* required : {"SCHED_TOKEN", "SCHED_DB_PASSWORD", "SCHED_EXECUTOR_TOKEN"}) {
        EXPECT_TRUE(used.count(required)) << required;
    }
    for (const auto& v : used) {
        EXPECT_NE(example.find("\n" + v + "="), std::string::npos) << v << " missing from .env.example";
    }
    for (const auto& a : Resolved()) {
        SCOPED_TRACE(a.name);
        for (const auto& kv : a.service["environment"]) {
            const std::string value = kv.second.as<std::string>("");
            EXPECT_TRUE(value.empty() || value.rfind("${", 0) == 0) << kv.first << " holds a literal value";
        }
        const YAML::Node token_holder = a.app == "demo-client" ? a.config["executor"] : a.config;
        EXPECT_EQ(token_holder["token"].as<std::string>(""), "") << "token in " << a.config_host;
        EXPECT_EQ(a.config["executor-token"].as<std::string>(""), "");
        if (a.config["slave"]) {
            EXPECT_EQ(a.config["slave"]["executor-token"].as<std::string>(""), "");
        }
    }
}

// Runs `app --check-config` on `config` with `env`; returns {exit code, stdout + stderr}.
std::pair<int, std::string> CheckConfig(const std::string& app, const fs::path& config,
                                        const std::vector<std::string>& env) {
    const std::map<std::string, std::string> bins = {{"scheduler-trigger", SCHED_TRIGGER_BIN},
                                                     {"scheduler-web", SCHED_WEB_BIN},
                                                     {"scheduler-standalone", SCHED_STANDALONE_BIN}};
    std::string out;
    const int code = testing::RunCommand({bins.at(app), "--check-config", "--config", config.string()}, &out, env);
    return {code, out};
}

// Each of `services` has its config accepted by its app: `--check-config` for the nodes; the
// demo client has none, so its file is read exactly as its main() does (with TLS on when `tls`).
void ExpectEveryConfigAccepted(const std::vector<AppService>& services, bool tls) {
    // The check must depend on these variables, not on whatever the test runner has set.
    for (const char* name : {"SCHED_TOKEN", "SCHED_DB_PASSWORD", "SCHED_EXECUTOR_TOKEN"}) unsetenv(name);
    for (const auto& a : services) {
        SCOPED_TRACE(a.name);
        if (a.app != "demo-client") {
            auto [code, out] = CheckConfig(a.app, a.config_host, kSecretsEnv);
            EXPECT_EQ(code, 0) << out;
            EXPECT_EQ(out, "config ok\n");
            continue;
        }
        setenv("SCHED_TOKEN", "compose-test-token", 1);
        EXPECT_NO_THROW({
            const auto root = ConfigNode::LoadFile(a.config_host);
            (void)LogConfig::FromYaml(root.Child("log"));
            const auto options = client::ExecutorOptions::FromYaml(root.Child("executor"));
            EXPECT_EQ(options.http.tls.enabled(), tls);
            root.RejectUnknownKeys();
        });
        unsetenv("SCHED_TOKEN");
    }
}

TEST_F(Compose, EveryConfigIsAcceptedByItsApp) {
    const auto services = Resolved();
    ASSERT_EQ(services.size(), apps_.size());
    ExpectEveryConfigAccepted(services, false);
}

TEST_F(Compose, CheckConfigRejectsWhatTheAppWouldReject) {
    for (const char* name : {"SCHED_TOKEN", "SCHED_DB_PASSWORD", "SCHED_EXECUTOR_TOKEN"}) unsetenv(name);
    const auto trigger = kDocker / "config/trigger-1.yaml";
    // Without the secret from the environment the node would not start, and --check-config says so.
    auto [no_token, why] = CheckConfig("scheduler-trigger", trigger, {"SCHED_DB_PASSWORD=x"});
    EXPECT_EQ(no_token, 2) << why;
    EXPECT_EQ(why,
              "scheduler-trigger: token: required: a cluster without a token refuses to start (set it or "
              "SCHED_TOKEN)\n");
    // A bad database URL names the key.
    const fs::path bad = fs::temp_directory_path() / ("compose-test-" + std::to_string(getpid()) + ".yaml");
    std::ofstream(bad) << ReadFile(kDocker / "config/web.yaml") << "\n# appended by the test\n";
    {
        std::string text = ReadFile(bad);
        text.replace(text.find("mysql://"), 8, "mysq1://");
        std::ofstream(bad) << text;
    }
    auto [bad_url, bad_why] = CheckConfig("scheduler-web", bad, kSecretsEnv);
    fs::remove(bad);
    EXPECT_EQ(bad_url, 2) << bad_why;
    EXPECT_EQ(bad_why.rfind("scheduler-web: database.url: ", 0), 0u) << bad_why;
}

// docker/docker-compose.tls.yml, the TLS variant: an override of the compose file whose services
// run the configs under docker/config/tls with the certificates scripts/tls-certs.sh makes.
class ComposeTls : public Compose {
  protected:
    void SetUp() override {
        Compose::SetUp();
        if (HasFatalFailure()) return;
        override_ = YAML::LoadFile((kDocker / "docker-compose.tls.yml").string());
        ASSERT_TRUE(override_["services"].IsMap());
    }

    // The service as the compose tools run it with the override: its command replaced, its
    // volumes added to the base's, its health check's test replaced.
    AppService Tls(const AppService& base) {
        AppService a = base;
        const YAML::Node over = override_["services"][base.name];
        EXPECT_TRUE(over) << base.name << " has no TLS variant";
        if (!over) return a;
        a.service = YAML::Clone(base.service);
        a.service["command"] = over["command"];
        for (const auto& v : over["volumes"]) a.service["volumes"].push_back(v);
        a.service["healthcheck"]["test"] = over["healthcheck"]["test"];
        const auto cmd = over["command"].as<std::vector<std::string>>();
        a.config_in.clear();
        for (std::size_t i = 1; i + 1 < cmd.size(); ++i) {
            if (cmd[i] == "--config") a.config_in = cmd[i + 1];
        }
        EXPECT_EQ(cmd.at(0), base.app) << base.name;
        return a;
    }

    std::vector<AppService> ResolvedTls() {
        std::vector<AppService> all;
        for (const auto& base : apps_) {
            AppService a = Tls(base);
            ResolveConfig(a);
            if (::testing::Test::HasFatalFailure()) return {};
            all.push_back(a);
        }
        return all;
    }

    YAML::Node override_;
};

// The TLS section of a service's server and its callers' client section.
YAML::Node ServerTlsOf(const AppService& a) {
    return a.app == "demo-client" ? a.config["executor"]["http"]["tls"] : a.config["http"]["tls"];
}
YAML::Node ClientTlsOf(const AppService& a) {
    return a.app == "demo-client" ? a.config["executor"]["http-client"]["tls"] : a.config["http-client"]["tls"];
}

TEST_F(ComposeTls, OverridesEveryAppServiceAndOnlyThose) {
    std::set<std::string> apps, overridden;
    for (const auto& a : apps_) apps.insert(a.name);
    for (const auto& kv : override_["services"]) overridden.insert(kv.first.as<std::string>());
    EXPECT_EQ(overridden, apps);
    for (const auto& kv : override_) {
        const auto key = kv.first.as<std::string>();
        EXPECT_TRUE(key == "services" || key.rfind("x-", 0) == 0) << key;
    }
    for (const auto& kv : override_["services"]) {
        for (const auto& key : kv.second) {
            const auto name = key.first.as<std::string>();
            EXPECT_TRUE(name == "command" || name == "volumes" || name == "healthcheck")
                << kv.first.as<std::string>() << "." << name << ": only these merge alike in the three tools";
        }
        // New container paths only: the tools disagree on how a volume over a base volume merges.
        std::set<std::string> base_targets;
        for (const auto& v : compose_["services"][kv.first.as<std::string>()]["volumes"]) {
            const std::string spec = v.as<std::string>();
            base_targets.insert(
                spec.substr(spec.find(':') + 1, spec.find(':', spec.find(':') + 1) - spec.find(':') - 1));
        }
        for (const auto& v : kv.second["volumes"]) {
            const std::string spec = v.as<std::string>();
            const std::string target =
                spec.substr(spec.find(':') + 1, spec.find(':', spec.find(':') + 1) - spec.find(':') - 1);
            EXPECT_FALSE(base_targets.contains(target)) << spec;
            EXPECT_EQ(spec.substr(spec.rfind(':')), ":ro") << spec;
        }
    }
}

TEST_F(ComposeTls, EveryHopServesAndCallsOverTlsWithTheMountedCertificates) {
    for (const auto& a : ResolvedTls()) {
        SCOPED_TRACE(a.name);
        EXPECT_EQ(a.config_host.parent_path().filename(), "tls") << a.config_host;
        bool mounted = false;
        for (const auto& v : a.service["volumes"]) mounted |= v.as<std::string>() == "./tls:/etc/sched/tls:ro";
        EXPECT_TRUE(mounted) << "docker/tls is not mounted at /etc/sched/tls";
        const YAML::Node server = ServerTlsOf(a);
        EXPECT_EQ(server["cert-file"].as<std::string>(""), "/etc/sched/tls/" + a.name + ".crt");
        EXPECT_EQ(server["key-file"].as<std::string>(""), "/etc/sched/tls/" + a.name + ".key");
        const YAML::Node client = ClientTlsOf(a);
        EXPECT_EQ(client["ca-file"].as<std::string>(""), "/etc/sched/tls/ca.crt");
        if (a.app == "demo-client") {
            for (const auto& e : a.config["executor"]["web-endpoints"]) {
                EXPECT_EQ(e.as<std::string>().rfind("https://", 0), 0u) << e.as<std::string>();
            }
        } else {
            EXPECT_EQ(client["peer-scheme"].as<std::string>(""), "https");
        }
        std::string test;
        for (const auto& part : a.service["healthcheck"]["test"]) test += part.as<std::string>() + " ";
        EXPECT_NE(test.find("--cacert /etc/sched/tls/ca.crt"), std::string::npos) << test;
        EXPECT_NE(test.find("https://localhost:" + std::to_string(a.listen_port) + "/"), std::string::npos) << test;
    }
}

// The TLS configs are the plain ones plus TLS: without their tls sections (and with http://
// endpoints) each equals its docker/config twin, so the two variants cannot drift apart.
TEST_F(ComposeTls, ConfigsDifferFromThePlainOnesOnlyInTls) {
    const auto strip = [](YAML::Node config, const std::string& app) {
        YAML::Node root = YAML::Clone(config);
        YAML::Node holder = app == "demo-client" ? root["executor"] : root;
        holder["http"].remove("tls");
        holder.remove("http-client");
        if (app == "demo-client") {
            YAML::Node endpoints(YAML::NodeType::Sequence);
            for (const auto& e : holder["web-endpoints"]) {
                std::string url = e.as<std::string>();
                if (url.rfind("https://", 0) == 0) url.erase(4, 1);
                endpoints.push_back(url);
            }
            holder["web-endpoints"] = endpoints;
        }
        return YAML::Dump(root);
    };
    const auto plain = Resolved();
    const auto tls = ResolvedTls();
    ASSERT_EQ(plain.size(), tls.size());
    for (std::size_t i = 0; i < plain.size(); ++i) {
        EXPECT_EQ(strip(tls[i].config, tls[i].app), strip(plain[i].config, plain[i].app)) << tls[i].config_host;
    }
}

TEST_F(ComposeTls, EveryConfigIsAcceptedByItsApp) {
    const auto services = ResolvedTls();
    ASSERT_EQ(services.size(), apps_.size());
    ExpectEveryConfigAccepted(services, true);
}

// The command the override's header gives makes every file the configs name, and each service's
// certificate chains to the CA and names the service (what its peers dial) and localhost (what
// its health check dials).
TEST_F(ComposeTls, TheCertificateScriptMakesWhatTheConfigsName) {
    const fs::path dir = fs::temp_directory_path() / ("compose-tls-" + std::to_string(getpid()));
    fs::remove_all(dir);
    std::vector<std::string> argv = {"/bin/bash", (kSourceDir / "scripts/tls-certs.sh").string(), dir.string()};
    for (const auto& a : apps_) argv.push_back(a.name);
    std::string out;
    ASSERT_EQ(testing::RunCommand(argv, &out), 0) << out;
    const std::string header = ReadFile(kDocker / "docker-compose.tls.yml");
    std::string names;
    for (const auto& a : apps_) names += " " + a.name;
    EXPECT_NE(header.find("scripts/tls-certs.sh docker/tls" + names + "\n"), std::string::npos)
        << "the header's command does not name every service";
    for (const auto& a : ResolvedTls()) {
        SCOPED_TRACE(a.name);
        for (const YAML::Node& section : {ServerTlsOf(a), ClientTlsOf(a)}) {
            for (const auto& kv : section) {
                const std::string value = kv.second.as<std::string>("");
                if (value.rfind("/etc/sched/tls/", 0) != 0) continue;
                EXPECT_TRUE(fs::is_regular_file(dir / value.substr(15))) << value;
            }
        }
        for (const std::string& host : {a.name, std::string("localhost")}) {
            std::string verify;
            EXPECT_EQ(testing::RunCommand({"/usr/bin/openssl", "verify", "-CAfile", (dir / "ca.crt").string(),
                                           "-verify_hostname", host, (dir / (a.name + ".crt")).string()},
                                          &verify),
                      0)
                << verify;
        }
        EXPECT_EQ(fs::status(dir / (a.name + ".key")).permissions() & fs::perms::others_read, fs::perms::none);
    }
    fs::remove_all(dir);
}

// The repository's example configs (config/, copied into the image as /etc/sched) are valid
// too, and checking them creates nothing (config/standalone.yaml names sqlite://data/...).
TEST(CheckConfig, RepositoryConfigsPassWithoutCreatingFiles) {
    for (const char* name : {"SCHED_TOKEN", "SCHED_DB_PASSWORD", "SCHED_EXECUTOR_TOKEN"}) unsetenv(name);
    const fs::path cwd = fs::temp_directory_path() / ("compose-test-cwd-" + std::to_string(getpid()));
    fs::create_directories(cwd);
    const std::pair<std::string, std::string> cases[] = {{"scheduler-trigger", "trigger.yaml"},
                                                         {"scheduler-web", "web.yaml"},
                                                         {"scheduler-standalone", "standalone.yaml"}};
    const std::map<std::string, std::string> bins = {{"scheduler-trigger", SCHED_TRIGGER_BIN},
                                                     {"scheduler-web", SCHED_WEB_BIN},
                                                     {"scheduler-standalone", SCHED_STANDALONE_BIN}};
    for (const auto& [app, file] : cases) {
        testing::ChildProcess p({bins.at(app), "--config", (kSourceDir / "config" / file).string(), "--check-config"},
                                cwd.string(), kSecretsEnv);
        EXPECT_EQ(p.WaitForExit(10s), 0) << app << ": " << p.stderr_text();
        EXPECT_EQ(p.stdout_text(), "config ok\n") << app;
    }
    EXPECT_TRUE(fs::is_empty(cwd)) << "--check-config created files in " << cwd;
    fs::remove_all(cwd);
}

// Every executable under apps/ is built and shipped by the Dockerfile, except the build-tree
// tools: scheduler-bench starts scheduler-trigger from the build directory and a private MariaDB
// through scripts/mariadb.sh, so it runs from a checkout, not from the image.
TEST(Dockerfile, BuildsEveryApp) {
    const std::set<std::string> build_tree_tools = {"scheduler-bench"};
    std::set<std::string> apps;
    const std::regex exe(R"(add_executable\(\s*([A-Za-z0-9_-]+))");
    for (const auto& dir : fs::directory_iterator(kSourceDir / "apps")) {
        const auto lists = dir.path() / "CMakeLists.txt";
        if (!fs::exists(lists)) continue;
        const std::string text = ReadFile(lists);
        std::smatch m;
        ASSERT_TRUE(std::regex_search(text, m, exe)) << lists;
        EXPECT_EQ(m[1], dir.path().filename().string()) << "the apps' binaries are named after their folder";
        if (!build_tree_tools.contains(m[1])) apps.insert(m[1]);
    }
    ASSERT_GE(apps.size(), 4u);

    const std::string dockerfile = ReadFile(kDocker / "Dockerfile");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(dockerfile, m, std::regex(R"(ARG SCHED_APPS="([^"]*)\")")));
    std::set<std::string> listed;
    std::istringstream words(m[1].str());
    for (std::string w; words >> w;) listed.insert(w);
    EXPECT_EQ(listed, apps);
    // The list drives both the build and the copy into the runtime image.
    EXPECT_NE(dockerfile.find("--target ${SCHED_APPS}"), std::string::npos);
    EXPECT_NE(dockerfile.find("for app in ${SCHED_APPS}"), std::string::npos);
    EXPECT_NE(dockerfile.find("FROM debian:bookworm AS build"), std::string::npos);
    EXPECT_NE(dockerfile.find("FROM debian:bookworm-slim"), std::string::npos);
    std::smatch user;
    ASSERT_TRUE(std::regex_search(dockerfile, user, std::regex(R"(\nUSER (\d+):(\d+)\n)")))
        << "USER must be numeric (Kubernetes' runAsNonRoot checks it without a passwd lookup)";
    EXPECT_NE(user[1], "0") << "runs as root";
    EXPECT_NE(dockerfile.find("--uid " + user[1].str()), std::string::npos) << "the user is created with that uid";
    // BuildKit fetches the frontend a syntax line names: an offline build fails on it.
    EXPECT_NE(dockerfile.rfind("# syntax=", 0), 0u);
    EXPECT_EQ(dockerfile.find("\n# syntax="), std::string::npos);
    EXPECT_EQ(WithoutComments(dockerfile).find("RUN --mount"), std::string::npos)
        << "the legacy builder (docker-compose 1.29) refuses it";
    for (const char* label : {"org.opencontainers.image.title", "org.opencontainers.image.version",
                              "org.opencontainers.image.revision", "org.opencontainers.image.description"}) {
        EXPECT_NE(dockerfile.find(label), std::string::npos) << label;
    }
    // apt runs before any source is copied, so a source change redoes no apt layer.
    EXPECT_LT(dockerfile.find("deps.sh run"), dockerfile.find("COPY libs/"));

    // Every app the compose file starts is in the image, and EXPOSE names exactly the ports they
    // listen on.
    const YAML::Node compose = ExpandMergeKeys(YAML::LoadFile((kDocker / "docker-compose.yml").string()));
    std::set<int> listen_ports;
    for (const auto& kv : compose["services"]) {
        if (!kv.second["command"]) continue;
        const auto cmd = kv.second["command"].as<std::vector<std::string>>();
        EXPECT_TRUE(listed.count(cmd[0])) << kv.first.as<std::string>();
        const auto config = YAML::LoadFile((kDocker / "config" / fs::path(cmd.back()).filename()).string());
        const YAML::Node http = cmd[0] == "demo-client" ? config["executor"]["http"] : config["http"];
        listen_ports.insert(PortOf(http["listen"].as<std::string>()));
    }
    ASSERT_TRUE(std::regex_search(dockerfile, m, std::regex(R"(\nEXPOSE ([0-9 ]+)\n)")));
    std::set<int> exposed;
    std::istringstream ports(m[1].str());
    for (int p = 0; ports >> p;) exposed.insert(p);
    EXPECT_EQ(exposed, listen_ports);
}

}  // namespace
}  // namespace sched
