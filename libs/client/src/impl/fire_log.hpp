#pragma once

// Per-fire log lines kept in memory for GET /v1/log: bounded in fires (oldest finished fires
// are forgotten first) and in lines per fire. Thread-safe.

#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace sched::client::impl {

class FireLogBook {
  public:
    FireLogBook(std::size_t retained_fires, std::size_t max_lines_per_fire);

    /// Starts a fire's log (no-op when it exists).
    void Open(std::int64_t fire_id);
    /// Appends a line; ignored for unknown fires and beyond the per-fire limit (one marker line
    /// says that lines were dropped).
    void Append(std::int64_t fire_id, std::string line);
    /// Marks the fire finished: no more lines will come, and it may now be forgotten.
    void Close(std::int64_t fire_id);

    struct Page {
        std::vector<std::string> lines;
        std::int64_t from_line = 0;  // index of lines[0]
        std::int64_t next_line = 0;  // what to ask for next time
        bool finished = false;
    };
    /// Lines from `from_line` on (at most `max`); nullopt when the fire is unknown here.
    std::optional<Page> Read(std::int64_t fire_id, std::int64_t from_line, std::size_t max) const;

  private:
    struct Entry {
        std::vector<std::string> lines;
        bool finished = false;
        bool truncated = false;
    };
    void EvictIfNeeded();

    const std::size_t retained_fires_;
    const std::size_t max_lines_;
    mutable std::mutex mu_;
    std::unordered_map<std::int64_t, Entry> entries_;
    std::deque<std::int64_t> order_;  // fire ids, oldest first
};

}  // namespace sched::client::impl
