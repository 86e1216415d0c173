#include "sched/trigger/fire_queue.hpp"

#include <algorithm>

namespace sched::trigger {

FireQueue::FireQueue(std::int64_t claim_ahead_ms, std::size_t capacity)
    : claim_ahead_ms_(claim_ahead_ms), capacity_(capacity) {}

FireQueue::Admitted FireQueue::Admit(const std::vector<protocol::NoticedFire>& fires) {
    std::lock_guard lock(mu_);
    return AdmitLocked(fires);
}

// A notice's fires are queued as the master wrote them, unread: the claim reads each row anyway
// (and holds the slave to its own pending fires), so reading them here too was a second SELECT
// of every fire between the scan and the claim. Unread also means unchecked: ids that name no
// fire of this node, or a due time far ahead, would stay queued until that time. Hence the
// horizon here and the capacity (a notice needs the cluster token, but a peer's bug must not
// grow a node's memory without bound).
FireQueue::Admitted FireQueue::AdmitNotice(const std::vector<protocol::NoticedFire>& fires, std::int64_t now_ms) {
    const std::int64_t horizon = now_ms + kNoticeHorizonMs;
    std::vector<protocol::NoticedFire> near;
    near.reserve(fires.size());
    for (const auto& f : fires) {
        if (f.due_at <= horizon) near.push_back(f);
    }
    std::lock_guard lock(mu_);
    return AdmitLocked(near);
}

// A poll's or a notice's fires are queued under one lock: queued one by one, the group loop
// (on another thread) could take a group between two of them and claim a burst in pieces,
// each piece with its own claim and no batch request shared with the rest.
FireQueue::Admitted FireQueue::AdmitLocked(const std::vector<protocol::NoticedFire>& fires) {
    Admitted out;
    if (closed_) return out;
    if (known_.size() < capacity_ * 9 / 10) filled_reported_ = false;  // room again
    for (const auto& fire : fires) {
        if (known_.size() >= capacity_) {
            out.filled = !std::exchange(filled_reported_, true);
            break;
        }
        if (!known_.insert(fire.id).second) continue;
        due_.emplace(fire.due_at, fire.id);
        // The loop sleeps until wake_at_ms_; a fire to claim before then must wake it.
        out.wake = out.wake || fire.due_at - claim_ahead_ms_ < wake_at_ms_;
    }
    return out;
}

FireQueue::Admitted FireQueue::Requeue(const std::vector<protocol::NoticedFire>& fires) {
    Admitted out;
    std::lock_guard lock(mu_);
    if (closed_) return out;
    for (const auto& fire : fires) {
        if (!known_.contains(fire.id)) continue;
        due_.emplace(fire.due_at, fire.id);
        out.wake = out.wake || fire.due_at - claim_ahead_ms_ < wake_at_ms_;
    }
    return out;
}

FireQueue::Group FireQueue::TakeGroup(std::int64_t now_ms, int max_group, std::int64_t idle_wait_ms) {
    Group group;
    group.wait_ms = idle_wait_ms;
    std::lock_guard lock(mu_);
    const bool woken = !due_.empty() && due_.begin()->first <= now_ms + claim_ahead_ms_;
    const std::int64_t horizon = now_ms + 2 * claim_ahead_ms_;
    while (woken && !due_.empty() && due_.begin()->first <= horizon && static_cast<int>(group.ids.size()) < max_group) {
        group.ids.push_back(due_.begin()->second);
        due_.erase(due_.begin());
    }
    if (!due_.empty()) group.wait_ms = std::min(group.wait_ms, due_.begin()->first - claim_ahead_ms_ - now_ms);
    // While it claims, the loop looks at the queue again before it sleeps: no wake-up needed.
    wake_at_ms_ = group.ids.empty() ? now_ms + group.wait_ms : std::numeric_limits<std::int64_t>::min();
    return group;
}

std::vector<std::int64_t> FireQueue::Unknown(const std::vector<std::int64_t>& ids) const {
    std::vector<std::int64_t> unknown;
    std::lock_guard lock(mu_);
    for (const std::int64_t id : ids) {
        if (!known_.contains(id)) unknown.push_back(id);
    }
    return unknown;
}

void FireQueue::Forget(std::int64_t id) {
    std::lock_guard lock(mu_);
    known_.erase(id);
}

void FireQueue::Close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    for (const auto& [due_at, id] : due_) known_.erase(id);
    due_.clear();
}

std::size_t FireQueue::Known() const {
    std::lock_guard lock(mu_);
    return known_.size();
}

std::size_t FireQueue::Queued() const {
    std::lock_guard lock(mu_);
    return due_.size();
}

}  // namespace sched::trigger
