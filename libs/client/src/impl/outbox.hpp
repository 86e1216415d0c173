#pragma once

// Results waiting for their callback request. Each trigger node names itself as the callback URL
// of the runs it dispatched, so results are queued per URL and a batch is cut from one queue:
// the queue whose oldest result is the oldest of all. Taking a batch costs the batch, whatever
// else is waiting. Pure bookkeeping (no I/O), thread-safe: one mutex around everything.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "impl/spool.hpp"

namespace sched::client::impl {

class Outbox {
  public:
    /// A batch holds at most `max_results` results and, past its first result, at most
    /// `max_bytes` of them by CallbackResult::WireBytes.
    Outbox(std::size_t max_results, std::size_t max_bytes);

    void Push(CallbackResult result);
    /// The next batch (empty when nothing waits): results of one callback URL, oldest first.
    std::vector<CallbackResult> TakeBatch();
    /// Puts back a batch TakeBatch returned (or results the spool could not take), in its
    /// order, ahead of the results that arrived after it.
    void Requeue(std::vector<CallbackResult> batch);
    /// Every waiting result, oldest first, leaving the outbox empty.
    std::vector<CallbackResult> TakeAll();
    std::size_t size() const;

  private:
    struct Entry {
        std::int64_t seq = 0;  // order across URLs: pushed count up from 1, requeued down from 0
        CallbackResult result;
    };

    const std::size_t max_results_;
    const std::size_t max_bytes_;
    mutable std::mutex mu_;
    std::map<std::string, std::deque<Entry>> by_url_;  // no empty queue: URLs come and go with nodes
    std::size_t size_ = 0;
    std::int64_t next_seq_ = 1;
    std::int64_t front_seq_ = 0;  // requeued results go ahead of everything queued so far
};

}  // namespace sched::client::impl
