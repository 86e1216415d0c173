#include "sched/trigger/fire_queue.hpp"

#include <algorithm>
#include <stdexcept>

namespace sched::trigger {

FireQueue::FireQueue(std::int64_t claim_ahead_ms, std::size_t capacity, Bursts bursts, Fill fill)
    : claim_ahead_ms_(claim_ahead_ms), capacity_(capacity), bursts_(bursts), fill_(fill) {
    if (bursts_.claim_rate <= 0) throw std::invalid_argument("FireQueue: burst claim rate must be positive");
}

bool FireQueue::BurstsOn() const {
    return bursts_.min_fires > 0 && bursts_.max_lead_ms > 0;
}

// A held fire is queued again at the time its claim is to be retried, not at its due time: many
// held at once share that time, and counted as a burst they would be claimed again at once, not
// after the hold.
void FireQueue::Enqueue(std::int64_t due_at, std::int64_t id, bool held, bool fill) {
    due_.emplace(due_at, id);
    if (fill) fillable_.insert(id);
    if (held) {
        held_.insert(id);
        return;
    }
    if (BurstsOn() && ++queued_at_[due_at] == bursts_.min_fires) burst_times_.insert(due_at);
}

void FireQueue::Dequeue(std::set<std::pair<std::int64_t, std::int64_t>>::iterator it) {
    const auto [due_at, id] = *it;
    due_.erase(it);
    fillable_.erase(id);
    if (held_.erase(id) > 0 || !BurstsOn()) return;
    auto count = queued_at_.find(due_at);
    if (--count->second < bursts_.min_fires) burst_times_.erase(due_at);
    if (count->second == 0) queued_at_.erase(count);
}

// A top of the hour claimed in claim-ahead would be claimed group after group from 100 ms
// before its time, and sent as each claim commits: at a few thousand claimed fires a second per
// node, 33,000 fires per node arrived over seven seconds after their time (p99 4.4 s for
// 100,000 jobs on 3 nodes). Their times are known seconds before (the master plans a burst ahead),
// so the claims can be spread over the seconds before, each group sent ahead and started by its
// executor at the due time. The lead is the burst's remaining size over the assumed rate, so
// the claims neither start needlessly early (a claimed fire cannot be paused any more, and a
// node that dies loses the claimed fires it could not send ahead) nor end after the time.
std::optional<FireQueue::BurstDue> FireQueue::NextBurst() const {
    if (burst_times_.empty()) return std::nullopt;
    const std::int64_t due_at = *burst_times_.begin();
    const auto queued = static_cast<double>(queued_at_.at(due_at));
    std::int64_t lead =
        std::min<std::int64_t>(bursts_.max_lead_ms, static_cast<std::int64_t>(queued * 1000.0 / bursts_.claim_rate));
    // Bursts that recur (10,000 jobs every second) fire the same jobs: the next burst's claims
    // start no sooner than half-way from the last one, so a serial job's run has had that long to
    // end before its next fire asks for its seat (taken, the fire would be held and asked again).
    if (last_burst_due_ms_ && *last_burst_due_ms_ < due_at) lead = std::min(lead, (due_at - *last_burst_due_ms_) / 2);
    return BurstDue{.due_at = due_at, .claim_at = due_at - claim_ahead_ms_ - std::max<std::int64_t>(0, lead)};
}

std::int64_t FireQueue::NextClaimAt() const {
    std::int64_t at = due_.empty() ? std::numeric_limits<std::int64_t>::max() : due_.begin()->first - claim_ahead_ms_;
    if (const auto burst = NextBurst()) at = std::min(at, burst->claim_at);
    return at;
}

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
        if (fire.planned) planned_.insert(fire.id);
        Enqueue(fire.due_at, fire.id, false, fire.fill);
    }
    // The loop sleeps until wake_at_ms_; a fire (or a burst) to claim before then must wake it.
    out.wake = NextClaimAt() < wake_at_ms_;
    return out;
}

// A queued fire is taken claim-ahead before its key, so a retry time becomes the key claim-ahead
// after it: keyed at the retry time itself, a fire held back was taken again by the very next
// TakeGroup, and the slave asked for its seat in a loop, a claim transaction after the other,
// until the run holding the seat ended.
FireQueue::Admitted FireQueue::Requeue(const std::vector<protocol::NoticedFire>& fires) {
    Admitted out;
    std::lock_guard lock(mu_);
    if (closed_) return out;
    for (const auto& fire : fires) {
        if (!known_.contains(fire.id)) continue;
        planned_.erase(fire.id);  // held back: `pending` again
        Enqueue(fire.due_at + claim_ahead_ms_, fire.id, true, false);
    }
    out.wake = NextClaimAt() < wake_at_ms_;
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
        group.latest_due_ms = std::max(group.latest_due_ms, due_.begin()->first);
        Dequeue(due_.begin());
    }
    if (woken) FillSmallGroup(group, now_ms, max_group);
    // Only while no ordinary group is due: those keep their time, a burst's claims fill the gaps.
    if (const auto burst = NextBurst(); !woken && burst && burst->claim_at <= now_ms) {
        last_burst_due_ms_ = burst->due_at;
        auto it = due_.lower_bound({burst->due_at, std::numeric_limits<std::int64_t>::min()});
        while (it != due_.end() && it->first == burst->due_at && static_cast<int>(group.ids.size()) < max_group) {
            group.ids.push_back(it->second);
            group.latest_due_ms = std::max(group.latest_due_ms, it->first);
            Dequeue(it++);
        }
        group.burst_due_at = burst->due_at;
        const auto left = queued_at_.find(burst->due_at);
        group.burst_left = left == queued_at_.end() ? 0 : left->second;
    }
    group.all_planned = !group.ids.empty() && std::all_of(group.ids.begin(), group.ids.end(),
                                                          [this](std::int64_t id) { return planned_.contains(id); });
    if (!due_.empty()) group.wait_ms = std::min(group.wait_ms, NextClaimAt() - now_ms);
    // While it claims, the loop looks at the queue again before it sleeps: no wake-up needed.
    wake_at_ms_ = group.ids.empty() ? now_ms + group.wait_ms : std::numeric_limits<std::int64_t>::min();
    return group;
}

// Every group costs the same statements whatever its size (the claim's UPDATE and SELECT, the
// seats, BEGIN and COMMIT): at 100 fires/s on 3 nodes, groups of about four fires every
// claim-ahead were 25 claims and 175 statements a second, more than half of what the cluster
// asked of its database. Filled from the next few hundred milliseconds, a node claims a few
// times a second. Only small groups: at a high rate a group within twice claim-ahead is large
// already, and larger ones sent ahead only made the executor hold more runs longer (p50 lag
// 1.2 -> 2.6 ms at 3,000 fires/s with every group spanning 500 ms). Only fires whose claim
// judges nothing by its time: a skip or buffer-one job's claim judges the runs going then, and
// cancel-other or terminate-other would stop them half a second early. The price is a claim up
// to claim-ahead + span before the due time for these fires: a job paused within that still
// fires once, and a node that dies after the claim loses the fires it did not send ahead.
void FireQueue::FillSmallGroup(Group& group, std::int64_t now_ms, int max_group) {
    if (fill_.min_fires == 0 || fill_.span_ms <= 0) return;
    const std::int64_t far = now_ms + claim_ahead_ms_ + fill_.span_ms;
    const std::size_t want = std::min(fill_.min_fires, static_cast<std::size_t>(std::max(max_group, 0)));
    auto it = due_.begin();
    while (it != due_.end() && it->first <= far && group.ids.size() < want) {
        // A burst keeps its own pacing; a held fire (never fillable) its retry time.
        if (burst_times_.contains(it->first) || !fillable_.contains(it->second)) {
            ++it;
            continue;
        }
        group.ids.push_back(it->second);
        group.latest_due_ms = std::max(group.latest_due_ms, it->first);
        Dequeue(it++);
    }
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
    planned_.erase(id);
}

void FireQueue::Close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    for (const auto& [due_at, id] : due_) {
        known_.erase(id);
        planned_.erase(id);
    }
    due_.clear();
    queued_at_.clear();
    burst_times_.clear();
    held_.clear();
    fillable_.clear();
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
