#pragma once

/// One page of a fire's log as an executor instance answers `GET /v1/log?fire_id=7&from_line=0`
/// (docs/protocol.md "Routes"): the client SDK writes it, the web module reads it and relays it
/// with its own fields added (executor_address, fire_status, source).
///
///     200 {"fire_id": 7, "from_line": 0, "to_line": 2, "lines": ["...", "..."], "finished": true}
///     404 naming fire_id (the instance no longer has, or never had, the fire's log)
///
/// `to_line` is the next page's from_line. Reading is lenient about unknown fields and strict,
/// with bounds, about the known ones (a page is at most kMaxLogPageLines lines; the reader's HTTP
/// client bounds its bytes with kMaxLogPageBytes).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sched/protocol/parsed.hpp"

namespace sched::protocol {

/// Lines per page at most.
inline constexpr std::size_t kMaxLogPageLines = 1000;
/// Bytes of a page's body a reader accepts at most.
inline constexpr std::size_t kMaxLogPageBytes = std::size_t{16} * 1024 * 1024;

struct LogPage {
    std::int64_t fire_id = 0;
    std::int64_t from_line = 0;  ///< index of lines[0]
    std::int64_t to_line = 0;    ///< from_line + lines.size(): what to ask for next
    std::vector<std::string> lines;
    bool finished = false;  ///< the fire ended: no line will follow

    friend bool operator==(const LogPage&, const LogPage&) = default;
};

nlohmann::json ToJson(const LogPage& page);
/// Required: fire_id, from_line, to_line (all >= 0, to_line - from_line == lines' count), lines
/// (strings, at most kMaxLogPageLines); finished defaults to false.
Parsed<LogPage> ReadLogPage(const nlohmann::json& body);

}  // namespace sched::protocol
