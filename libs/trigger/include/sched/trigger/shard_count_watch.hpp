#pragma once

/// When a trigger node reads the cluster's recorded shard count again (its heartbeat loop).
///
/// The count is recorded by a node that starts with another one, and only when no other node is
/// live (TriggerNode::CheckShardCount refuses otherwise). Another node finds this one not live
/// only once this node's heartbeat row is older than a node TTL: its heartbeats failed, or
/// stopped (a paused process), for about that long. So instead of on every heartbeat, the count
/// is read again after a heartbeat that failed, after a gap between the start of one successful
/// heartbeat and the end of the next longer than `gap` (shorter than the TTL: the config
/// requires two heartbeat intervals to be), and once per `max_age` besides, for a cluster whose
/// nodes were started with different intervals. A read that is due stays due until it is done.
///
/// No I/O, no clock of its own (times come in). Not thread-safe: the heartbeat loop owns it.

#include <chrono>
#include <optional>

#include "sched/common/duration.hpp"

namespace sched::trigger {

class ShardCountWatch {
  public:
    using Clock = std::chrono::steady_clock;

    ShardCountWatch(Micros gap, Micros max_age) : gap_(gap), max_age_(max_age) {}

    /// After a heartbeat that started at `started`, ended at `ended` and succeeded (`ok`) or not:
    /// whether to read the count now (never after a failed one: the database did not answer).
    bool ReadDue(Clock::time_point started, Clock::time_point ended, bool ok);
    /// The count was read at `at`.
    void Read(Clock::time_point at);

  private:
    const Micros gap_;
    const Micros max_age_;
    std::optional<Clock::time_point> last_ok_start_;  // of the last successful heartbeat
    std::optional<Clock::time_point> last_read_;
    bool due_ = true;  // nothing read yet
};

}  // namespace sched::trigger
