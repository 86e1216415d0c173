// scheduler-trigger: one node of the trigger cluster. Wiring only (sched/trigger/node.hpp).

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "sched/common/app_main.hpp"
#include "sched/common/config.hpp"
#include "sched/common/log_fields.hpp"
#include "sched/http/server.hpp"
#include "sched/http/url.hpp"
#include "sched/trigger/node.hpp"
#include "sched/web/executor_api.hpp"

namespace {

constexpr const char* kUsage = R"(usage: scheduler-trigger [--config FILE] [--check-config]

Runs one trigger node: competes for the master lease, schedules while it leads, dispatches the
fires assigned to it, and serves /healthz, /readyz, /metrics, /status on its HTTP port.

  --config FILE   YAML configuration (default: config/trigger.yaml)
  --check-config  validate the configuration (with the environment), print "config ok" and exit
                  0, or print the error naming the key and exit 2; the database is not touched
  --help          print this help and exit
  --version       print the version and exit

Environment: SCHED_TOKEN (cluster token), SCHED_DB_PASSWORD.
Exit codes: 0 stopped cleanly, 1 runtime failure, 2 bad arguments or configuration.
)";

}  // namespace

int main(int argc, char** argv) {
    const sched::AppSpec spec{.name = "scheduler-trigger",
                              .version = SCHED_VERSION,
                              .usage = kUsage,
                              .default_config = "config/trigger.yaml"};
    const sched::ParsedArgs parsed = sched::ParseAppArgs(spec, argc, argv);
    if (parsed.exit_code) return *parsed.exit_code;
    sched::trigger::NodeConfig config;
    sched::web::LockApiOptions locks;
    const auto loaded = sched::LoadAppConfig(spec, parsed.args, [&](const sched::ConfigNode& root) {
        // The lock API served with the executor API (`locks:`): every node that serves it must
        // use the same backend as the web nodes, or two holders could coexist.
        locks = sched::web::LockApiOptions::FromYaml(root.Child("locks"));
        config = sched::trigger::NodeConfig::FromYaml(root, {});
    });
    if (loaded) return *loaded;
    sched::SetupLogging(config.log);

    sched::StopSignals signals;  // before any other thread starts
    signals.OnHangup([] { sched::http::ReloadAllTls(); });
    sched::trigger::TriggerNode node(config);
    sched::SetProcessLogField("node", node.node_id());  // on every log line (log_fields.hpp)
    if (config.executor_api) {
        // The SDK's routes on this node's port (registry, callback, locks), so that a service can
        // use any node. They authenticate inside their handlers against the token table.
        sched::web::AddExecutorRoutes(
            node.router(), config.token, [&node] { return node.database(); }, node.db_pool(), locks,
            std::chrono::seconds(5), &node.metrics(), [&node] { node.WakeMasters(); },
            [&node](const std::vector<std::int64_t>& fire_ids) { node.ResultsApplied(fire_ids); });
    }
    spdlog::info("scheduler-trigger {} starting as {} with database {}", SCHED_VERSION, node.node_id(),
                 config.database.url.Redacted());
    sched::Status started = node.Start([&] { return signals.stop_requested(); });
    if (!started.ok()) return sched::StartFailureExitCode(started);
    sched::AnnounceListening(
        "scheduler-trigger " + node.node_id(), config.http.tls.enabled(),
        sched::http::HostPort{sched::http::HostPort::Parse(config.http.listen)->host, node.port()}.ToString());
    return sched::ServeUntilStopped(signals, "scheduler-trigger", [&] { node.Stop(); });
}
