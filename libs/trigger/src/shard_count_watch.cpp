#include "sched/trigger/shard_count_watch.hpp"

namespace sched::trigger {

bool ShardCountWatch::ReadDue(Clock::time_point started, Clock::time_point ended, bool ok) {
    if (!ok) {
        // The row may now age past a TTL before the next heartbeat lands.
        due_ = true;
        return false;
    }
    // The database stamps each heartbeat while it runs, so between these two the row was never
    // older than `ended` minus the previous one's start.
    if (!last_ok_start_ || ended - *last_ok_start_ > gap_) due_ = true;
    if (!last_read_ || ended - *last_read_ >= max_age_) due_ = true;
    last_ok_start_ = started;
    return due_;
}

void ShardCountWatch::Read(Clock::time_point at) {
    last_read_ = at;
    due_ = false;
}

}  // namespace sched::trigger
