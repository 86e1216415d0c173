#pragma once

/// Process-wide logging setup on spdlog.
///
/// Log injection: the installed formatters escape every message as a whole (LogEscape for text,
/// JsonEscape for json), so a user-supplied string logged by any call site (a job name with a
/// newline, a NUL) cannot start a forged line or break a JSON record. Call sites need not
/// escape anything themselves. Only messages logged after SetupLogging() are covered.
///
/// YAML (section `log`):
///   level: info        # trace, debug, info, warn, error, critical, off
///   format: text       # text (human) or json (one JSON object per line)

#include <string>
#include <string_view>

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

/// Escapes `s` for inclusion in a JSON string: quotes, backslashes, control characters and DEL
/// (\n, \u0000, ...); bytes that are not well-formed UTF-8 become \ufffd, so the result is
/// always valid JSON string content.
std::string JsonEscape(std::string_view s);

/// Escapes `s` for a text log line: control characters, DEL and bytes that are not well-formed
/// UTF-8 become visible (\n, \r, \t, \x00, \xff); everything else, UTF-8 included, is kept.
std::string LogEscape(std::string_view s);

}  // namespace sched
