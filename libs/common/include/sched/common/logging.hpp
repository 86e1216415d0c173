#pragma once

/// Process-wide logging setup on spdlog.
///
/// YAML (section `log`):
///   level: info        # trace, debug, info, warn, error, critical, off
///   format: text       # text (human) or json (one JSON object per line)

#include <string>

#include "sched/common/config.hpp"

namespace sched {

struct LogConfig {
    std::string level = "info";
    std::string format = "text";

    /// Reads `level` and `format` from `node`; throws ConfigError on a bad value.
    static LogConfig FromYaml(const ConfigNode& node);
};

/// Installs a stderr sink with the configured level and format as spdlog's default logger.
/// Idempotent; call once at start-up before other threads log.
void SetupLogging(const LogConfig& config);

/// Escapes `s` for inclusion in a JSON string (quotes, backslashes, control characters).
std::string JsonEscape(std::string_view s);

}  // namespace sched
