// scheduler-web: the REST API, the web UI and the SDK's registry and callback routes over the
// cluster's database (sched/web/web_service.hpp). Wiring only.

#include <string>

#include <spdlog/spdlog.h>

#include "sched/common/app_main.hpp"
#include "sched/common/config.hpp"
#include "sched/common/logging.hpp"
#include "sched/http/server.hpp"
#include "sched/http/url.hpp"
#include "sched/web/web_service.hpp"

namespace {

constexpr const char* kUsage = R"(usage: scheduler-web [--config FILE] [--check-config]

Serves the scheduler's REST API (/api/v1, described at /api/v1/openapi.json), the web UI (/),
the client SDK's registry and callback routes, /healthz, /readyz and /metrics. Stateless: run
as many as you need against the cluster's database.

  --config FILE   YAML configuration (default: config/web.yaml)
  --check-config  validate the configuration (with the environment), print "config ok" and exit
                  0, or print the error naming the key and exit 2; the database is not touched
  --help          print this help and exit
  --version       print the version and exit

Environment: SCHED_TOKEN (the cluster token), SCHED_DB_PASSWORD.
Exit codes: 0 stopped cleanly, 1 runtime failure, 2 bad arguments or configuration.
)";

}  // namespace

int main(int argc, char** argv) {
    const sched::AppSpec spec{
        .name = "scheduler-web", .version = SCHED_VERSION, .usage = kUsage, .default_config = "config/web.yaml"};
    const sched::ParsedArgs parsed = sched::ParseAppArgs(spec, argc, argv);
    if (parsed.exit_code) return *parsed.exit_code;
    sched::web::WebServiceConfig config;
    const auto loaded = sched::LoadAppConfig(spec, parsed.args, [&](const sched::ConfigNode& root) {
        config = sched::web::WebServiceConfig::FromYaml(root);
    });
    if (loaded) return *loaded;
    sched::SetupLogging(config.log);

    sched::StopSignals signals;  // before any other thread starts
    signals.OnHangup([] { sched::http::ReloadAllTls(); });
    sched::web::WebService service(config);
    spdlog::info("scheduler-web {} starting with database {}", SCHED_VERSION, config.database.url.Redacted());
    sched::Status started = service.Start([&] { return signals.stop_requested(); });
    if (!started.ok()) return sched::StartFailureExitCode(started);
    sched::AnnounceListening(
        "scheduler-web", config.http.tls.enabled(),
        sched::http::HostPort{sched::http::HostPort::Parse(config.http.listen)->host, service.port()}.ToString());
    return sched::ServeUntilStopped(signals, "scheduler-web", [&] { service.Stop(); });
}
