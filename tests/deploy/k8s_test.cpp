// deploy/k8s/base: the Kubernetes manifests agree with the apps and the image (the overlays
// change counts, placement and resources, and production adds TLS on every hop, checked at the
// end; tests/deploy/k8s-schema renders and schema-checks each). No cluster is
// needed: the manifests are parsed, each config mounted from the ConfigMap is validated by the
// real app binary (--check-config), and each app is started on that config (with a SQLite
// database and a loopback port instead of MariaDB and 0.0.0.0) to show that every probe path
// is a route it serves, answering 200.

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "../support/source_files.hpp"
#include "sched/common/testing/child_process.hpp"
#include "sched/common/testing/wait_for.hpp"

namespace sched {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

using testing::kSourceDir;
using testing::ReadFile;
const fs::path kK8s = kSourceDir / "deploy/k8s/base";

const std::map<std::string, std::string>& AppBinaries() {
    static const std::map<std::string, std::string> bins = {{"scheduler-trigger", SCHED_TRIGGER_BIN},
                                                            {"scheduler-web", SCHED_WEB_BIN}};
    return bins;
}

int PortOf(const std::string& host_port) {
    const auto colon = host_port.rfind(':');
    if (colon == std::string::npos) return -1;
    return std::stoi(host_port.substr(colon + 1));
}

// Every label in `selector` is in `labels` with the same value (and the selector is not empty).
bool Selects(const YAML::Node& selector, const YAML::Node& labels) {
    if (!selector || !selector.IsMap() || selector.size() == 0 || !labels || !labels.IsMap()) return false;
    for (const auto& kv : selector) {
        const auto key = kv.first.as<std::string>();
        if (!labels[key] || labels[key].as<std::string>() != kv.second.as<std::string>()) return false;
    }
    return true;
}

struct Document {
    std::string file;
    YAML::Node node;
    std::string kind() const { return node["kind"].as<std::string>(""); }
    std::string name() const { return node["metadata"]["name"].as<std::string>(""); }
};

// One container of a Deployment, resolved to its config in the ConfigMap.
struct AppContainer {
    std::string deployment;
    YAML::Node pod;        // spec.template.spec
    YAML::Node container;  // the container
    std::string app;       // command[0]
    std::string config_path;
    std::string config_text;  // the ConfigMap entry mounted at config_path
    int listen_port = -1;
};

class K8s : public ::testing::Test {
  protected:
    void SetUp() override {
        for (const auto& entry : fs::directory_iterator(kK8s)) {
            const auto name = entry.path().filename().string();
            if (entry.path().extension() != ".yaml" || name == "kustomization.yaml") continue;
            for (const auto& doc : YAML::LoadAllFromFile(entry.path().string())) {
                if (doc.IsNull()) continue;
                docs_.push_back({name, doc});
            }
        }
        ASSERT_FALSE(docs_.empty());
    }

    std::vector<const Document*> OfKind(const std::string& kind) const {
        std::vector<const Document*> out;
        for (const auto& d : docs_) {
            if (d.kind() == kind) out.push_back(&d);
        }
        return out;
    }

    const Document* Find(const std::string& kind, const std::string& name) const {
        for (const auto& d : docs_) {
            if (d.kind() == kind && d.name() == name) return &d;
        }
        return nullptr;
    }

    // The scheduler's own Deployments (label app.kubernetes.io/name: sched), not the example
    // executor's.
    std::vector<const Document*> SchedulerDeployments() const {
        std::vector<const Document*> out;
        for (const auto* d : OfKind("Deployment")) {
            if (d->node["metadata"]["labels"]["app.kubernetes.io/name"].as<std::string>("") == "sched")
                out.push_back(d);
        }
        return out;
    }

    // The containers of every scheduler Deployment, with their configs; fails the test where one
    // does not resolve.
    std::vector<AppContainer> Containers() {
        std::vector<AppContainer> out;
        for (const auto* d : SchedulerDeployments()) {
            const YAML::Node pod = d->node["spec"]["template"]["spec"];
            for (const auto& c : pod["containers"]) {
                AppContainer a;
                a.deployment = d->name();
                a.pod = pod;
                a.container = static_cast<const YAML::Node&>(c);
                const auto cmd = c["command"].as<std::vector<std::string>>(std::vector<std::string>{});
                EXPECT_FALSE(cmd.empty()) << a.deployment << ": the container names its app in command";
                if (cmd.empty()) continue;
                a.app = cmd[0];
                for (std::size_t i = 1; i + 1 < cmd.size(); ++i) {
                    if (cmd[i] == "--config") a.config_path = cmd[i + 1];
                }
                ResolveConfig(a);
                if (::testing::Test::HasFailure()) return {};
                out.push_back(a);
            }
        }
        return out;
    }

    // The file at config_path comes from a volumeMount of a ConfigMap volume: its key is the
    // rest of the path.
    void ResolveConfig(AppContainer& a) {
        SCOPED_TRACE(a.deployment);
        ASSERT_FALSE(a.config_path.empty()) << "command has no --config";
        for (const auto& m : a.container["volumeMounts"]) {
            const std::string mount = m["mountPath"].as<std::string>("");
            if (mount.empty() || a.config_path.rfind(mount + "/", 0) != 0) continue;
            const std::string key = a.config_path.substr(mount.size() + 1);
            for (const auto& v : a.pod["volumes"]) {
                if (v["name"].as<std::string>("") != m["name"].as<std::string>("") || !v["configMap"]) continue;
                const auto* cm = Find("ConfigMap", v["configMap"]["name"].as<std::string>(""));
                ASSERT_NE(cm, nullptr) << "no ConfigMap " << v["configMap"]["name"];
                ASSERT_TRUE(cm->node["data"][key]) << "ConfigMap " << cm->name() << " has no key " << key;
                a.config_text = cm->node["data"][key].as<std::string>();
            }
        }
        ASSERT_FALSE(a.config_text.empty()) << a.config_path << " is not mounted from a ConfigMap";
        const YAML::Node config = YAML::Load(a.config_text);
        ASSERT_TRUE(config["http"]["listen"]) << a.config_path << ": set http.listen explicitly";
        a.listen_port = PortOf(config["http"]["listen"].as<std::string>());
        // Listening on loopback inside a pod serves nobody else, probes included.
        EXPECT_EQ(config["http"]["listen"].as<std::string>().rfind("0.0.0.0:", 0), 0u);
    }

    std::vector<Document> docs_;
};

TEST_F(K8s, EveryDocumentHasApiVersionKindAndName) {
    const std::map<std::string, std::string> api = {{"Deployment", "apps/v1"},
                                                    {"Service", "v1"},
                                                    {"ConfigMap", "v1"},
                                                    {"Secret", "v1"},
                                                    {"PodDisruptionBudget", "policy/v1"},
                                                    {"NetworkPolicy", "networking.k8s.io/v1"},
                                                    {"ServiceMonitor", "monitoring.coreos.com/v1"}};
    std::set<std::string> kinds;
    for (const auto& d : docs_) {
        SCOPED_TRACE(d.file + ": " + d.kind() + " " + d.name());
        ASSERT_TRUE(d.node["apiVersion"] && d.node["kind"]) << "apiVersion and kind are required";
        EXPECT_FALSE(d.name().empty()) << "metadata.name is required";
        ASSERT_TRUE(api.count(d.kind())) << "unexpected kind";
        EXPECT_EQ(d.node["apiVersion"].as<std::string>(), api.at(d.kind()));
        kinds.insert(d.kind());
    }
    EXPECT_EQ(kinds.size(), api.size()) << "the set has one of each kind above";
}

TEST_F(K8s, KustomizationListsEveryManifestButTheExampleSecret) {
    const YAML::Node k = YAML::LoadFile((kK8s / "kustomization.yaml").string());
    std::set<std::string> listed;
    for (const auto& r : k["resources"]) listed.insert(r.as<std::string>());
    std::set<std::string> files;
    for (const auto& d : docs_) {
        if (d.kind() != "Secret") files.insert(d.file);
    }
    EXPECT_EQ(listed, files);
    for (const auto& d : OfKind("Secret")) {
        EXPECT_FALSE(listed.count(d->file)) << d->file << " holds example values and must not be applied";
        EXPECT_NE(d->file.find("example"), std::string::npos) << d->file;
        EXPECT_NE(ReadFile(kK8s / d->file).find("EXAMPLE ONLY"), std::string::npos) << d->file;
    }
}

TEST_F(K8s, SelectorsMatchTheirPods) {
    std::map<std::string, YAML::Node> pod_labels;  // deployment -> template labels
    for (const auto* d : OfKind("Deployment")) {
        SCOPED_TRACE(d->name());
        const YAML::Node labels = d->node["spec"]["template"]["metadata"]["labels"];
        EXPECT_TRUE(Selects(d->node["spec"]["selector"]["matchLabels"], labels));
        pod_labels[d->name()] = labels;
    }
    ASSERT_EQ(pod_labels.size(), 3u) << "trigger, web and the example executor";
    // Each Service, PodDisruptionBudget and NetworkPolicy selects the pods of exactly one
    // Deployment.
    for (const auto* kind : {"Service", "PodDisruptionBudget", "NetworkPolicy"}) {
        for (const auto* d : OfKind(kind)) {
            SCOPED_TRACE(std::string(kind) + " " + d->name());
            const YAML::Node selector = std::string(kind) == "Service" ? d->node["spec"]["selector"]
                                        : std::string(kind) == "NetworkPolicy"
                                            ? d->node["spec"]["podSelector"]["matchLabels"]
                                            : d->node["spec"]["selector"]["matchLabels"];
            int selected = 0;
            for (const auto& [name, labels] : pod_labels) selected += Selects(selector, labels) ? 1 : 0;
            EXPECT_EQ(selected, 1);
        }
    }
    // Both scheduler Deployments have a budget, and a budget that leaves room to drain a node.
    for (const auto* d : SchedulerDeployments()) {
        const std::string name = d->name();
        const YAML::Node labels = pod_labels[name];
        int budgets = 0;
        for (const auto* p : OfKind("PodDisruptionBudget")) {
            if (!Selects(p->node["spec"]["selector"]["matchLabels"], labels)) continue;
            ++budgets;
            const int replicas = Find("Deployment", name)->node["spec"]["replicas"].as<int>(1);
            if (p->node["spec"]["minAvailable"]) {
                EXPECT_LT(p->node["spec"]["minAvailable"].as<int>(), replicas) << name;
            } else {
                EXPECT_GE(p->node["spec"]["maxUnavailable"].as<int>(0), 1) << name;
            }
        }
        EXPECT_EQ(budgets, 1) << name;
    }
    // At most one trigger node down voluntarily: the lease must keep a holder.
    const auto* trigger_budget = Find("PodDisruptionBudget", "sched-trigger");
    ASSERT_NE(trigger_budget, nullptr);
    EXPECT_EQ(trigger_budget->node["spec"]["maxUnavailable"].as<int>(0), 1);
    EXPECT_TRUE(Find("Service", "sched-web")) << "the web Deployment needs its Service";
}

TEST_F(K8s, PortsAndProbesUseTheConfiguredListenPort) {
    for (const auto& a : Containers()) {
        SCOPED_TRACE(a.deployment);
        ASSERT_GT(a.listen_port, 0);
        std::map<std::string, int> named;
        std::set<int> ports;
        for (const auto& p : a.container["ports"]) {
            ports.insert(p["containerPort"].as<int>());
            if (p["name"]) named[p["name"].as<std::string>()] = p["containerPort"].as<int>();
        }
        EXPECT_EQ(ports, std::set<int>{a.listen_port}) << "declare exactly the listen port";
        const auto port_of = [&](const YAML::Node& port) {
            const std::string text = port.as<std::string>();
            const auto it = named.find(text);
            return it != named.end() ? it->second : std::stoi(text);
        };
        for (const char* probe : {"readinessProbe", "livenessProbe", "startupProbe"}) {
            if (!a.container[probe]) continue;
            EXPECT_EQ(port_of(a.container[probe]["httpGet"]["port"]), a.listen_port) << probe;
        }
        EXPECT_EQ(a.container["readinessProbe"]["httpGet"]["path"].as<std::string>(""), "/readyz");
        // The NetworkPolicy of these pods admits exactly the listen port.
        int policies = 0;
        for (const auto* np : OfKind("NetworkPolicy")) {
            if (!Selects(np->node["spec"]["podSelector"]["matchLabels"],
                         Find("Deployment", a.deployment)->node["spec"]["template"]["metadata"]["labels"])) {
                continue;
            }
            ++policies;
            std::set<int> admitted;
            for (const auto& rule : np->node["spec"]["ingress"]) {
                for (const auto& p : rule["ports"]) admitted.insert(port_of(p["port"]));
            }
            EXPECT_EQ(admitted, std::set<int>{a.listen_port}) << np->name();
        }
        EXPECT_EQ(policies, 1);
        EXPECT_TRUE(a.container["livenessProbe"]["httpGet"]["path"]) << "no liveness probe";
        // The Services reach the same port.
        for (const auto* s : OfKind("Service")) {
            if (!Selects(s->node["spec"]["selector"],
                         Find("Deployment", a.deployment)->node["spec"]["template"]["metadata"]["labels"])) {
                continue;
            }
            for (const auto& p : s->node["spec"]["ports"]) EXPECT_EQ(port_of(p["targetPort"]), a.listen_port);
        }
    }
}

TEST_F(K8s, SecretsComeFromTheSecretByKeysItHas) {
    const auto secrets = OfKind("Secret");
    ASSERT_EQ(secrets.size(), 1u);
    const YAML::Node example = secrets[0]->node;
    int refs = 0;
    std::set<std::string> env_names;
    for (const auto& a : Containers()) {
        SCOPED_TRACE(a.deployment);
        for (const auto& e : a.container["env"]) {
            const std::string name = e["name"].as<std::string>();
            env_names.insert(name);
            const YAML::Node value_from = e["valueFrom"];
            const YAML::Node ref = value_from ? value_from["secretKeyRef"] : YAML::Node(YAML::NodeType::Undefined);
            if (name == "SCHED_TOKEN" || name == "SCHED_DB_PASSWORD") {
                EXPECT_TRUE(ref) << name << " must come from a Secret";
                EXPECT_FALSE(e["value"]) << name << " holds a literal value";
            }
            if (!ref) continue;
            ++refs;
            EXPECT_EQ(ref["name"].as<std::string>(""), secrets[0]->name()) << name;
            const std::string key = ref["key"].as<std::string>("");
            EXPECT_TRUE(example["stringData"][key] || example["data"][key])
                << name << ": the Secret has no key " << key;
        }
        // No secret in the config file either.
        const YAML::Node config = YAML::Load(a.config_text);
        EXPECT_FALSE(config["token"]) << a.config_path;
        EXPECT_EQ(config["database"]["url"].as<std::string>("").find(":@"), std::string::npos);
    }
    EXPECT_GE(refs, 4);
    EXPECT_TRUE(env_names.count("SCHED_TOKEN") && env_names.count("SCHED_DB_PASSWORD"));
    // The example executor holds an executor token, never the cluster token, from a key the
    // Secret has.
    int executor_tokens = 0;
    for (const auto* d : OfKind("Deployment")) {
        if (d->node["metadata"]["labels"]["app.kubernetes.io/name"].as<std::string>("") == "sched") continue;
        for (const auto& c : d->node["spec"]["template"]["spec"]["containers"]) {
            for (const auto& e : c["env"]) {
                if (e["name"].as<std::string>("") != "SCHED_TOKEN") continue;
                ++executor_tokens;
                const std::string key = e["valueFrom"]["secretKeyRef"]["key"].as<std::string>("");
                EXPECT_EQ(key, "executor-token") << d->name();
                EXPECT_TRUE(example["stringData"][key]) << d->name() << ": the Secret has no key " << key;
            }
        }
    }
    EXPECT_EQ(executor_tokens, 1);
}

TEST_F(K8s, PodsRunAsNonRootWithAReadOnlyRootAndNoCapabilities) {
    const std::string dockerfile = ReadFile(kSourceDir / "docker/Dockerfile");
    std::smatch user;
    ASSERT_TRUE(std::regex_search(dockerfile, user, std::regex(R"(\nUSER (\d+):(\d+)\n)")))
        << "the image's USER must be numeric for runAsNonRoot to verify it";
    for (const auto& a : Containers()) {
        SCOPED_TRACE(a.deployment);
        EXPECT_TRUE(a.pod["securityContext"]["runAsNonRoot"].as<bool>(false));
        EXPECT_EQ(a.pod["securityContext"]["runAsUser"].as<std::string>(""), user[1].str());
        EXPECT_FALSE(a.pod["automountServiceAccountToken"].as<bool>(true));
        const YAML::Node sc = a.container["securityContext"];
        EXPECT_TRUE(sc["readOnlyRootFilesystem"].as<bool>(false));
        EXPECT_FALSE(sc["allowPrivilegeEscalation"].as<bool>(true));
        EXPECT_EQ(sc["capabilities"]["drop"].as<std::vector<std::string>>(std::vector<std::string>{}),
                  std::vector<std::string>{"ALL"});
        for (const char* kind : {"requests", "limits"}) {
            EXPECT_TRUE(a.container["resources"][kind]["cpu"]) << kind;
            EXPECT_TRUE(a.container["resources"][kind]["memory"]) << kind;
        }
        EXPECT_TRUE(AppBinaries().count(a.app)) << a.app;
        EXPECT_NE(dockerfile.find(a.app), std::string::npos) << a.app << " is not in the image";
    }
}

// `app --check-config` on `config_text`; {exit code, output}.
std::pair<int, std::string> CheckConfig(const std::string& app, const std::string& config_text) {
    const fs::path file = fs::temp_directory_path() / ("k8s-test-" + std::to_string(getpid()) + ".yaml");
    std::ofstream(file) << config_text;
    std::string out;
    const int code = testing::RunCommand({AppBinaries().at(app), "--check-config", "--config", file.string()}, &out,
                                         {"SCHED_TOKEN=k8s-test-token", "SCHED_DB_PASSWORD=k8s-test-password",
                                          "SCHED_ADVERTISED_ADDRESS=10.1.2.3:7071"});
    fs::remove(file);
    return {code, out};
}

TEST_F(K8s, EveryMountedConfigIsAcceptedByItsApp) {
    for (const char* name : {"SCHED_TOKEN", "SCHED_DB_PASSWORD", "SCHED_ADVERTISED_ADDRESS"}) unsetenv(name);
    int checked = 0;
    for (const auto& a : Containers()) {
        SCOPED_TRACE(a.deployment);
        auto [code, out] = CheckConfig(a.app, a.config_text);
        EXPECT_EQ(code, 0) << out;
        EXPECT_EQ(out, "config ok\n");
        ++checked;
    }
    EXPECT_EQ(checked, 2);
}

// Starts each app on its mounted config, moved to a loopback port and a SQLite database, and
// asks every probe's path until it answers 200 (a route the app does not serve answers 404).
TEST_F(K8s, ProbePathsAreRoutesTheAppsServe) {
    for (const char* name : {"SCHED_TOKEN", "SCHED_DB_PASSWORD", "SCHED_ADVERTISED_ADDRESS"}) unsetenv(name);
    for (const auto& a : Containers()) {
        SCOPED_TRACE(a.deployment);
        const fs::path dir = fs::temp_directory_path() / ("k8s-test-" + a.deployment + "-" + std::to_string(getpid()));
        fs::create_directories(dir);
        YAML::Node config = YAML::Load(a.config_text);
        config["http"]["listen"] = "127.0.0.1:0";
        config["database"]["url"] = "sqlite://" + (dir / "sched.db").string();
        config["database"].remove("connect-retry-for");
        const fs::path file = dir / "config.yaml";
        std::ofstream(file) << YAML::Dump(config) << "\n";
        std::vector<std::string> env = {"SCHED_TOKEN=k8s-test-token"};
        for (const auto& e : a.container["env"]) {
            // The manifest's own literal values (the advertised address: POD_IP is not set here).
            if (e["value"] && e["name"].as<std::string>() != "SCHED_ADVERTISED_ADDRESS") {
                env.push_back(e["name"].as<std::string>() + "=" + e["value"].as<std::string>());
            }
        }
        testing::ChildProcess p({AppBinaries().at(a.app), "--config", file.string()}, dir.string(), env);
        auto line = p.WaitForStdoutLine(" listening on http://127.0.0.1:", 30s);
        ASSERT_TRUE(line) << p.stderr_text();
        const auto port = static_cast<unsigned short>(PortOf(*line));
        for (const char* probe : {"readinessProbe", "livenessProbe", "startupProbe"}) {
            if (!a.container[probe]) continue;
            const std::string path = a.container[probe]["httpGet"]["path"].as<std::string>();
            int status = 0;
            std::string body;
            testing::WaitFor(
                [&] {
                    std::tie(status, body) = testing::HttpGet(port, path);
                    return status == 200;
                },
                10s, 100ms);
            EXPECT_EQ(status, 200) << probe << " " << path << ": " << body;
        }
        p.Signal(SIGTERM);
        EXPECT_EQ(p.WaitForExit(20s), 0) << p.stderr_text();
        fs::remove_all(dir);
    }
}

// overlays/production runs TLS on every hop: its configs (tls-config.yaml) replace the base's,
// tls.yaml mounts a certificate Secret per Deployment, secret-tls.example.yaml shows the
// Secrets and the scripts/tls-certs.sh lines that make them.
const fs::path kProduction = kSourceDir / "deploy/k8s/overlays/production";

std::vector<YAML::Node> LoadAll(const fs::path& file) {
    std::vector<YAML::Node> out;
    for (const auto& doc : YAML::LoadAllFromFile(file.string())) {
        if (!doc.IsNull()) out.push_back(doc);
    }
    return out;
}

// Every string under `node` that names a file in /etc/sched/tls.
void TlsPaths(const YAML::Node& node, std::set<std::string>* out) {
    if (node.IsMap()) {
        for (const auto& kv : node) TlsPaths(kv.second, out);
    } else if (node.IsSequence()) {
        for (const auto& item : node) TlsPaths(item, out);
    } else if (node.IsScalar() && node.as<std::string>().rfind("/etc/sched/tls/", 0) == 0) {
        out->insert(node.as<std::string>());
    }
}

TEST(K8sProductionTls, ConfigsServeAndCallOverTlsWithTheMountedSecretsFiles) {
    for (const char* name : {"SCHED_TOKEN", "SCHED_DB_PASSWORD", "SCHED_ADVERTISED_ADDRESS"}) unsetenv(name);
    // The Secrets the example shows: name -> keys.
    std::map<std::string, std::set<std::string>> secrets;
    for (const auto& doc : LoadAll(kProduction / "secret-tls.example.yaml")) {
        EXPECT_EQ(doc["type"].as<std::string>(""), "kubernetes.io/tls");
        for (const auto& kv : doc["stringData"]) {
            secrets[doc["metadata"]["name"].as<std::string>()].insert(kv.first.as<std::string>());
            EXPECT_EQ(kv.second.as<std::string>().rfind("EXAMPLE-", 0), 0u) << "a real key in the example";
        }
    }
    // Each Deployment mounts one of them at /etc/sched/tls.
    std::map<std::string, std::string> mounted;  // Deployment -> Secret
    for (const auto& doc : LoadAll(kProduction / "tls.yaml")) {
        ASSERT_EQ(doc["kind"].as<std::string>(""), "Deployment");
        const YAML::Node pod = doc["spec"]["template"]["spec"];
        for (const auto& c : pod["containers"]) {
            for (const auto& m : c["volumeMounts"]) {
                if (m["mountPath"].as<std::string>("") != "/etc/sched/tls") continue;
                for (const auto& v : pod["volumes"]) {
                    if (v["name"].as<std::string>("") == m["name"].as<std::string>("") && v["secret"]) {
                        mounted[doc["metadata"]["name"].as<std::string>()] =
                            v["secret"]["secretName"].as<std::string>();
                    }
                }
            }
            for (const char* probe : {"readinessProbe", "livenessProbe", "startupProbe"}) {
                if (c[probe]) {
                    EXPECT_EQ(c[probe]["httpGet"]["scheme"].as<std::string>(""), "HTTPS") << probe;
                }
            }
        }
    }
    EXPECT_EQ(mounted.size(), 3u);
    for (const auto& [deployment, secret] : mounted) {
        EXPECT_TRUE(secrets.contains(secret)) << deployment << " mounts " << secret << ", which the example lacks";
    }

    // The configs: accepted by their apps, every tls file one of the Secret's keys, peers over https.
    int checked = 0;
    for (const auto& doc : LoadAll(kProduction / "tls-config.yaml")) {
        ASSERT_EQ(doc["kind"].as<std::string>(""), "ConfigMap");
        for (const auto& kv : doc["data"]) {
            const std::string key = kv.first.as<std::string>();
            SCOPED_TRACE(key);
            const YAML::Node config = YAML::Load(kv.second.as<std::string>());
            std::set<std::string> paths;
            TlsPaths(config, &paths);
            EXPECT_EQ(paths, (std::set<std::string>{"/etc/sched/tls/tls.crt", "/etc/sched/tls/tls.key",
                                                    "/etc/sched/tls/ca.crt"}));
            if (key == "demo-client.yaml") {
                for (const auto& e : config["executor"]["web-endpoints"]) {
                    EXPECT_EQ(e.as<std::string>().rfind("https://", 0), 0u) << e.as<std::string>();
                }
                EXPECT_TRUE(config["executor"]["http"]["tls"]["cert-file"]);
                continue;
            }
            EXPECT_EQ(config["http-client"]["tls"]["peer-scheme"].as<std::string>(""), "https");
            EXPECT_TRUE(config["http"]["tls"]["cert-file"]);
            auto [code, out] =
                CheckConfig(key == "trigger.yaml" ? "scheduler-trigger" : "scheduler-web", kv.second.as<std::string>());
            EXPECT_EQ(code, 0) << out;
            EXPECT_EQ(out, "config ok\n");
            ++checked;
        }
    }
    EXPECT_EQ(checked, 2);
}

// The scripts/tls-certs.sh lines of secret-tls.example.yaml, run as written: each certificate
// chains to the CA and names what its peers dial (a trigger pod's DNS name under the headless
// Service, the Services), and not what they do not.
TEST(K8sProductionTls, TheExamplesCertificatesNameWhatPeersDial) {
    const std::string example = ReadFile(kProduction / "secret-tls.example.yaml");
    const auto from = example.find("#   ns=sched; d=sched-certs\n");
    const auto to = example.find("#   for s in");
    ASSERT_NE(from, std::string::npos);
    ASSERT_NE(to, std::string::npos);
    const fs::path dir = fs::temp_directory_path() / ("k8s-tls-" + std::to_string(getpid()));
    fs::remove_all(dir);
    std::string script = "set -e\nns=sched; d='" + dir.string() + "'\n";
    std::istringstream lines(example.substr(from, to - from));
    std::string ns_line;  // replaced above: d is a temporary folder
    std::getline(lines, ns_line);
    for (std::string line; std::getline(lines, line);) {
        ASSERT_EQ(line.rfind("#   ", 0), 0u) << line;
        line = line.substr(4);
        for (auto at = line.find("scripts/tls-certs.sh"); at != std::string::npos;
             at = line.find("scripts/tls-certs.sh", at + 1)) {
            line.replace(at, 0, kSourceDir.string() + "/");
            at += kSourceDir.string().size() + 1;
        }
        script += line + "\n";
    }
    std::string out;
    ASSERT_EQ(testing::RunCommand({"/bin/bash", "-c", script}, &out), 0) << script << out;
    const auto names = [&](const std::string& cert, const std::string& host) {
        std::string verify;
        return testing::RunCommand({"/usr/bin/openssl", "verify", "-CAfile", (dir / "ca.crt").string(),
                                    "-verify_hostname", host, (dir / (cert + ".crt")).string()},
                                   &verify) == 0;
    };
    EXPECT_TRUE(names("sched-trigger", "sched-trigger"));
    EXPECT_TRUE(names("sched-trigger", "10-1-2-3.sched-trigger-pods.sched.svc.cluster.local"));
    EXPECT_FALSE(names("sched-trigger", "10-1-2-3.sched-trigger-pods.other.svc.cluster.local"));
    EXPECT_TRUE(names("sched-web", "sched-web"));
    EXPECT_TRUE(names("sched-web", "sched-web.sched.svc.cluster.local"));
    EXPECT_FALSE(names("sched-web", "10-1-2-3.sched-trigger-pods.sched.svc.cluster.local"));
    EXPECT_TRUE(names("sched-demo-executor", "10-1-2-3.sched-demo-executor.sched.svc.cluster.local"));
    EXPECT_FALSE(names("sched-demo-executor", "sched-trigger"));
    fs::remove_all(dir);
}

}  // namespace
}  // namespace sched
