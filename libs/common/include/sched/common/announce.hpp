#pragma once

/// A process's few lines for people and scripts on stdout ("... listening on http://host:port",
/// a generated token), in the log's format: the bare line with `log.format: text`, one JSON
/// record like the log's (`{"ts", "level", "thread", "msg"}`) with `json`, so a collector reading
/// stdout and stderr together never meets a line that is not JSON. Escaped like every log
/// message (logging.hpp). Before SetupLogging(): the bare line.

#include <string_view>

namespace sched {

void Announce(std::string_view line);

}  // namespace sched
