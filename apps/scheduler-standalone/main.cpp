// scheduler-standalone: the zero-setup single process (embedded SQLite). Wiring only.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>

#include <spdlog/spdlog.h>

#include "health_server.hpp"
#include "sched/common/net.hpp"
#include "sched/common/node_id.hpp"
#include "sched/db/database.hpp"
#include "sched/db/migrator.hpp"
#include "standalone_config.hpp"

namespace {

constexpr const char* kUsage = R"(usage: scheduler-standalone [--config FILE]

Runs the scheduler (trigger + web) in one process on an embedded SQLite database.

  --config FILE   YAML configuration (default: config/standalone.yaml)
  --help          print this help and exit
  --version       print the version and exit

Environment: SCHED_DB_PASSWORD overrides the database password.
Exit codes: 0 stopped cleanly, 1 runtime failure, 2 bad arguments or configuration.
)";

struct Metrics {
    std::atomic<bool> db_up{false};
    std::atomic<long long> db_probe_failures{0};
    std::atomic<int> schema_version{0};
    double start_time_s = 0;

    std::string Render() const {
        std::string out;
        out += "# HELP sched_build_info Version of the running binary.\n# TYPE sched_build_info gauge\n";
        out += "sched_build_info{version=\"" SCHED_VERSION "\",app=\"scheduler-standalone\"} 1\n";
        out += "# HELP sched_process_start_time_seconds Start time of the process (epoch seconds).\n";
        out += "# TYPE sched_process_start_time_seconds gauge\n";
        out += "sched_process_start_time_seconds " + std::to_string(start_time_s) + "\n";
        out += "# HELP sched_db_up 1 when the last database probe succeeded.\n# TYPE sched_db_up gauge\n";
        out += "sched_db_up " + std::string(db_up ? "1" : "0") + "\n";
        out += "# HELP sched_db_probe_failures_total Failed database probes.\n";
        out += "# TYPE sched_db_probe_failures_total counter\n";
        out += "sched_db_probe_failures_total " + std::to_string(db_probe_failures.load()) + "\n";
        out += "# HELP sched_schema_version Applied schema migration version.\n# TYPE sched_schema_version gauge\n";
        out += "sched_schema_version " + std::to_string(schema_version.load()) + "\n";
        return out;
    }
};

}  // namespace

int main(int argc, char** argv) {
    using namespace sched;
    std::string config_path = "config/standalone.yaml";
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            std::cout << kUsage;
            return 0;
        }
        if (arg == "--version") {
            std::cout << "scheduler-standalone " SCHED_VERSION "\n";
            return 0;
        }
        if (arg == "--config" && i + 1 < argc) {
            config_path = argv[++i];
        } else if (arg.rfind("--config=", 0) == 0) {
            config_path = arg.substr(9);
        } else {
            std::cerr << "scheduler-standalone: unknown argument \"" << arg << "\" (see --help)\n";
            return 2;
        }
    }

    standalone::StandaloneConfig config;
    try {
        config = standalone::StandaloneConfig::Load(config_path);
    } catch (const ConfigError& e) {
        std::cerr << "scheduler-standalone: " << e.what() << "\n";
        return 2;
    }
    SetupLogging(config.log);
    const std::string node_id = config.node_id.empty() ? MakeNodeId() : config.node_id;
    spdlog::info("scheduler-standalone {} starting as {} with database {}", SCHED_VERSION, node_id,
                 config.database.url.Redacted());

    Metrics metrics;
    metrics.start_time_s = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();

    net::io_context io;
    std::atomic<bool> stopping{false};
    std::mutex stop_mu;
    std::condition_variable stop_cv;
    net::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](const boost::system::error_code& ec, int signo) {
        if (ec) return;
        spdlog::info("signal {} received, stopping", signo);
        stopping = true;
        stop_cv.notify_all();
    });
    std::thread io_thread([&] { io.run(); });
    auto join_io = [&] {
        io.stop();
        io_thread.join();
    };

    auto db = db::Database::OpenWithRetry(config.database.url, config.database.connect_retry_for,
                                          [&] { return stopping.load(); });
    if (!db.ok()) {
        if (db.status().code() == Code::kCancelled) {
            join_io();
            return 0;
        }
        spdlog::error("cannot open the database: {}", db.status().ToString());
        join_io();
        return 1;
    }
    auto migrated = db::Migrator(**db).Migrate();
    if (!migrated.ok()) {
        spdlog::error("cannot migrate the database schema: {}", migrated.status().ToString());
        join_io();
        return 1;
    }
    metrics.schema_version = migrated->to_version;
    metrics.db_up = true;
    spdlog::info("schema at version {} ({} migrations applied now)", migrated->to_version, migrated->applied.size());

    std::unique_ptr<standalone::HealthServer> server;
    try {
        const tcp::endpoint endpoint(net::ip::make_address(config.listen_host), config.listen_port);
        server = std::make_unique<standalone::HealthServer>(
            io, endpoint,
            standalone::HealthHandlers{.ready = [&] { return metrics.db_up.load() && !stopping.load(); },
                                       .metrics =
                                           [&] {
                                               return metrics.Render();
                                           }});
    } catch (const std::exception& e) {
        spdlog::error("cannot listen on {}:{}: {}", config.listen_host, config.listen_port, e.what());
        join_io();
        return 1;
    }
    server->Start();
    const auto bound = server->local_endpoint();
    const std::string host =
        bound.address().is_v6() ? "[" + bound.address().to_string() + "]" : bound.address().to_string();
    std::cout << "scheduler-standalone listening on http://" << host << ":" << bound.port() << std::endl;

    // The database probe runs here, off the I/O thread (soci is blocking).
    {
        std::unique_lock lock(stop_mu);
        while (!stopping) {
            auto now = (*db)->NowUs();
            if (now.ok() != metrics.db_up.load()) {
                if (now.ok()) {
                    spdlog::info("database reachable again");
                } else {
                    spdlog::warn("database probe failed: {}", now.status().ToString());
                }
            }
            if (!now.ok()) ++metrics.db_probe_failures;
            metrics.db_up = now.ok();
            stop_cv.wait_for(lock, std::chrono::seconds(2), [&] { return stopping.load(); });
        }
    }

    server->Stop();
    join_io();
    spdlog::info("scheduler-standalone stopped");
    return 0;
}
