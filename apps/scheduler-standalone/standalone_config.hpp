#pragma once

/// config/standalone.yaml: trigger + web in one process on an embedded SQLite file.
///
///   node-id: ""                        # empty: <host>-<pid>-<random>
///   http:
///     listen: "127.0.0.1:8080"         # host:port for the API, web UI and health endpoints (port 0: any free port)
///   database: {...}                    # see sched/db/database_config.hpp; default sqlite://data/scheduler.db
///   log: {level: info, format: text}   # see sched/common/logging.hpp

#include <filesystem>
#include <string>

#include "sched/common/logging.hpp"
#include "sched/db/database_config.hpp"

namespace sched::standalone {

struct StandaloneConfig {
    std::string node_id;
    std::string listen_host = "127.0.0.1";
    unsigned short listen_port = 8080;
    db::DatabaseConfig database;
    LogConfig log;

    /// Reads and validates the whole file; throws ConfigError naming the key (unknown keys too).
    static StandaloneConfig Load(const std::filesystem::path& file);
    static StandaloneConfig FromYaml(const ConfigNode& root);
};

/// Splits "host:port" ("[::1]:80" for IPv6); throws ConfigError for `key` when malformed.
std::pair<std::string, unsigned short> ParseListen(const std::string& key, const std::string& value);

}  // namespace sched::standalone
