#include "sched/trigger/sent_fires.hpp"

#include <algorithm>

namespace sched::trigger {

void SentFires::Ready(std::int64_t sent_through) {
    std::lock_guard lock(mu_);
    ready_ = true;
    sent_through_ = std::max(sent_through_, sent_through);
}

bool SentFires::ready() const {
    std::lock_guard lock(mu_);
    return ready_;
}

std::optional<std::int64_t> SentFires::RaiseFor(std::int64_t latest_due_ms) const {
    std::lock_guard lock(mu_);
    if (!ready_ || latest_due_ms <= sent_through_) return std::nullopt;
    return latest_due_ms + kLeadMs;
}

void SentFires::Committed(std::optional<std::int64_t> sent_through) {
    if (!sent_through) return;
    std::lock_guard lock(mu_);
    // A master's ReleaseUnsent moves it by a millisecond too; it only grows.
    sent_through_ = std::max(sent_through_, *sent_through);
}

bool SentFires::Sendable(std::int64_t id, std::int64_t due_at, std::optional<std::int64_t> sent_through) const {
    std::lock_guard lock(mu_);
    return ready_ && sent_through && due_at <= *sent_through && !ids_.contains(id);
}

void SentFires::Add(const std::vector<std::int64_t>& ids) {
    std::lock_guard lock(mu_);
    ids_.insert(ids.begin(), ids.end());
}

void SentFires::Erase(const std::vector<std::int64_t>& ids) {
    std::lock_guard lock(mu_);
    for (const auto id : ids) ids_.erase(id);
}

bool SentFires::Contains(std::int64_t id) const {
    std::lock_guard lock(mu_);
    return ids_.contains(id);
}

std::vector<std::int64_t> SentFires::Without(const std::vector<std::int64_t>& ids) const {
    std::vector<std::int64_t> out;
    out.reserve(ids.size());
    std::lock_guard lock(mu_);
    for (const auto id : ids) {
        if (!ids_.contains(id)) out.push_back(id);
    }
    return out;
}

std::set<std::int64_t> SentFires::Ids() const {
    std::lock_guard lock(mu_);
    return {ids_.begin(), ids_.end()};
}

std::size_t SentFires::size() const {
    std::lock_guard lock(mu_);
    return ids_.size();
}

}  // namespace sched::trigger
