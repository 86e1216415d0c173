#include "sched/trigger/held_fires.hpp"

#include <algorithm>

namespace sched::trigger {

std::vector<protocol::NoticedFire> HeldFires::HeldAgain(const std::vector<std::int64_t>& held,
                                                        const std::set<std::int64_t>& first_in_line,
                                                        std::int64_t now_ms) {
    std::vector<protocol::NoticedFire> again;
    again.reserve(held.size());
    for (const auto id : held) {
        const int holds = ++holds_[id];
        // The shift stops at 10 so that it cannot overflow; kMaxHoldMs caps the wait long before.
        const std::int64_t wait = first_in_line.contains(id)
                                      ? kFirstInLineMs
                                      : std::min<std::int64_t>(kMaxHoldMs, kFirstInLineMs << std::min(holds, 10));
        again.push_back({.id = id, .due_at = now_ms + wait});
    }
    return again;
}

void HeldFires::Forget(std::int64_t id) {
    holds_.erase(id);
}

}  // namespace sched::trigger
