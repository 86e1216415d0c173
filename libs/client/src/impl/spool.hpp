#pragma once

// Results on their way to the web module, and the spool that keeps undelivered ones on disk.
//
// The spool is a JSON-lines file (results.jsonl) that only grows, plus a marker file
// (results.acked) holding the byte offset up to which results were delivered; the marker is
// replaced atomically (write, fsync, rename). When everything is delivered both files go.
// A crash can at worst repeat the last delivered batch after a restart (the web module accepts
// a (fire_id, attempt) once); a torn last line from a crash mid-append is dropped.
// A lock file keeps a second executor out of the same directory.
//
// Not thread-safe: owned by the executor's callback loop.

#include <cstdint>
#include <deque>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sched/common/status.hpp"
#include "sched/protocol/run_result.hpp"

namespace sched::client::impl {

struct CallbackResult {
    std::int64_t fire_id = 0;
    std::int64_t attempt = 0;
    std::int64_t epoch = 0;
    protocol::RunOutcome outcome = protocol::RunOutcome::kSucceeded;
    std::string code;  // canonical code name: "ok", "internal", "deadline_exceeded", "cancelled", ...
    std::string message;
    std::int64_t started_ms = 0;
    std::int64_t finished_ms = 0;
    std::string callback_url;  // where the dispatcher asked for it ("" = the web endpoints)
    // The executor's advertised address when it ran the fire: the server applies a result only
    // from the instance the fire was dispatched to. "" (spooled by an older SDK): left out.
    std::string address;
    // The tail of the run's log (FireLogBook::ReadTail), and the bytes cut from its front;
    // nullopt: none sent (log-tail-bytes 0, or spooled by an older SDK).
    std::optional<std::string> log;
    std::int64_t log_truncated_bytes = 0;
    // The traceparent the run ran under ("" = none); posted only to nodes that advertise
    // result-traceparent (Runtime::PostResults strips it otherwise).
    std::string traceparent;

    /// The protocol form (sched/protocol/run_result.hpp): {fire_id, attempt, epoch, address,
    /// status, code, message, started_ms, finished_ms, log, log_truncated_bytes, traceparent}
    /// (address only when known, the log's two only with a log, traceparent only when known).
    nlohmann::json ToJson() const;
    /// One spool line (the protocol form plus callback_url), without the newline. Read back
    /// with the protocol's own reader: a line it refuses is dropped (and counted by the spool).
    std::string ToSpoolLine() const;
    static std::optional<CallbackResult> FromSpoolLine(std::string_view line);
    /// At least the bytes this result takes in a callback body (its text as JSON escapes it,
    /// worst case), for keeping a batch under the server's body limit.
    std::size_t WireBytes() const;
};

/// The bytes of results' WireBytes() a callback batch may take (the web module's default
/// body-limit is 1 MiB); a batch always takes at least one result.
inline constexpr std::size_t kCallbackBatchBytes = std::size_t{512} << 10;

class ResultSpool {
  public:
    /// Creates `dir` if needed, takes its lock and loads undelivered results. Throws
    /// std::runtime_error naming the directory when it cannot (including "in use by another
    /// process").
    explicit ResultSpool(std::filesystem::path dir);
    ~ResultSpool();
    ResultSpool(const ResultSpool&) = delete;
    ResultSpool& operator=(const ResultSpool&) = delete;

    /// Appends durably (fdatasync). kInternal naming the file on an I/O error.
    Status Append(const std::vector<CallbackResult>& results);
    /// The oldest undelivered results that share one callback_url, at most `max`, and at most
    /// `max_bytes` of WireBytes() (but at least one).
    std::vector<CallbackResult> Peek(std::size_t max, std::size_t max_bytes = kCallbackBatchBytes) const;
    /// The first `n` results of Peek() were delivered.
    Status Ack(std::size_t n);
    std::size_t pending() const { return pending_.size(); }
    const std::filesystem::path& dir() const { return dir_; }

  private:
    struct Entry {
        CallbackResult result;
        std::uint64_t end_offset;  // byte offset just past this result's line
    };
    void Load();

    std::filesystem::path dir_;
    std::filesystem::path data_path_;
    std::filesystem::path acked_path_;
    int lock_fd_ = -1;
    int data_fd_ = -1;
    std::uint64_t data_size_ = 0;
    std::deque<Entry> pending_;
};

}  // namespace sched::client::impl
