#pragma once

// Per-fire log lines kept in memory for GET /v1/log: bounded in fires (the fires that finished
// first are forgotten first; a fire still running is kept over the bound) and in lines per fire.
// Also keeps, for the result callback, the last `tail_bytes` of each fire's log, including the
// lines beyond the per-fire line limit (those GET /v1/log no longer shows), for fires whose
// handler wrote a line. Thread-safe.

#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace sched::client::impl {

/// Who wrote a line: the SDK's own lines (accepted, started, finished, kill requested) repeat
/// what the fire's row already says (times, status, message); only a handler's lines make a
/// log worth sending with the result.
enum class LineSource { kRuntime, kHandler };

class FireLogBook {
  public:
    FireLogBook(std::size_t retained_fires, std::size_t max_lines_per_fire, std::size_t tail_bytes = 0);

    /// Starts a fire's log, with the SDK's first line when given, under one lock (no-op when it
    /// exists).
    void Open(std::int64_t fire_id, std::optional<std::string> first_line = std::nullopt);
    /// Appends a line; ignored for unknown fires and beyond the per-fire limit (one marker line
    /// says that lines were dropped).
    void Append(std::int64_t fire_id, std::string line, LineSource source);
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

    struct Tail {
        std::string text;                  // the last lines joined by '\n', valid UTF-8
        std::int64_t truncated_bytes = 0;  // bytes of the whole log (so joined) not in `text`
    };
    /// The last `tail_bytes` of the fire's log (a first line may be cut at its front, at a
    /// character boundary; invalid UTF-8 becomes U+FFFD); nullopt when the fire is unknown here
    /// or its handler wrote no line (the SDK's own lines alone are not sent, nor stored).
    std::optional<Tail> ReadTail(std::int64_t fire_id) const;
    /// A run's end under one lock: Append(last_line) as the SDK's, then ReadTail (when
    /// `want_tail`), then Close. The workers end every run this way, so they take the book's lock
    /// once at a run's end instead of three times; what the close forgets is freed after the lock.
    std::optional<Tail> Finish(std::int64_t fire_id, std::string last_line, bool want_tail);

  private:
    struct Entry {
        std::vector<std::string> lines;
        bool finished = false;
        bool truncated = false;
        bool handler_wrote = false;
        // Lines beyond the line limit, newest last, at most tail_bytes_ of them; the tail is taken
        // from them and from `lines` (without the truncation marker).
        std::deque<std::string> overflow;
        std::size_t overflow_bytes = 0;
        std::int64_t total_bytes = 0;  // of every line appended, plus one separator per line after the first
    };
    void AppendTo(Entry& e, std::string line, LineSource source);  // mu_ held
    // Forgets finished fires over the bound (mu_ held); their entries go to `forgotten`, when
    // given, to be freed after the lock.
    void EvictIfNeeded(std::vector<std::unordered_map<std::int64_t, Entry>::node_type>* forgotten = nullptr);
    // Marks the fire finished once and forgets what is over the bound (mu_ held), as EvictIfNeeded.
    void MarkFinished(std::int64_t fire_id, Entry& e,
                      std::vector<std::unordered_map<std::int64_t, Entry>::node_type>* forgotten);
    // The newest lines of `e` that fit the tail, newest first (mu_ held), and the tail they make.
    std::vector<std::string> PickTail(const Entry& e) const;
    Tail MakeTail(const std::vector<std::string>& picked, std::int64_t total_bytes) const;

    const std::size_t retained_fires_;
    const std::size_t max_lines_;
    const std::size_t tail_bytes_;
    mutable std::mutex mu_;
    std::unordered_map<std::int64_t, Entry> entries_;
    std::deque<std::int64_t> finished_;  // the finished fires still kept, in the order they finished
};

}  // namespace sched::client::impl
