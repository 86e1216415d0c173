#include "sched/trigger/claim_retry.hpp"

#include <algorithm>

namespace sched::trigger {

ClaimRetry::Step ClaimRetry::Next(const Status& why, std::size_t claimed) {
    claimed = std::max<std::size_t>(claimed, 1);
    if (why.code() != Code::kAborted) {
        // An outage ends a run of conflicts: after it, the group is tried whole again at the
        // size it had, and conflicts are counted afresh.
        conflicts_ = 0;
        conflict_.Reset();
        return {other_.Next(), claimed};
    }
    other_.Reset();
    ++conflicts_;
    std::size_t next = claimed;
    if (conflicts_ >= kSplitAfter && claimed > 1) {
        next = (claimed + 1) / 2;
        conflicts_ = 0;  // the smaller group gets kSplitAfter attempts of its own
    }
    return {conflict_.Next(), next};
}

}  // namespace sched::trigger
