#include "sched/trigger/shard_balancer.hpp"

#include <algorithm>
#include <limits>

#include <spdlog/spdlog.h>

namespace sched::trigger {

ShardBalancer::ShardBalancer(std::vector<std::string> lease_names, std::string self, Micros tick, Micros hold,
                             HolderOf holder_of, const Clock& clock)
    : names_(std::move(lease_names)),
      self_(std::move(self)),
      tick_(tick),
      hold_(hold),
      holder_of_(std::move(holder_of)),
      clock_(clock) {}

void ShardBalancer::SetParticipants(std::vector<std::string> nodes) {
    std::lock_guard lock(mu_);
    participants_ = std::move(nodes);
}

void ShardBalancer::SetEnabled(bool enabled, const std::string& why) {
    std::lock_guard lock(mu_);
    if (enabled_ == enabled) return;
    enabled_ = enabled;
    if (enabled) {
        spdlog::info("node {} competes for shards again", self_);
    } else {
        spdlog::error("node {} gives up every shard and takes none: {}", self_, why);
    }
}

bool ShardBalancer::enabled() const {
    std::lock_guard lock(mu_);
    return enabled_;
}

int ShardBalancer::ShardOf(std::string_view name) const {
    for (std::size_t i = 0; i < names_.size(); ++i) {
        if (names_[i] == name) return static_cast<int>(i);
    }
    return -1;
}

int ShardBalancer::FairShareLocked() const {
    std::size_t nodes = participants_.size();
    if (std::find(participants_.begin(), participants_.end(), self_) == participants_.end()) ++nodes;
    const auto shards = names_.size();
    return static_cast<int>((shards + nodes - 1) / nodes);
}

int ShardBalancer::FairShare() const {
    std::lock_guard lock(mu_);
    return FairShareLocked();
}

ShardBalancer::Counts ShardBalancer::Count(SteadyTime now) const {
    Counts c;
    for (const auto& node : participants_) c.by_node.emplace(node, 0);
    c.by_node.emplace(self_, 0);
    for (std::size_t i = 0; i < names_.size(); ++i) {
        const int shard = static_cast<int>(i);
        auto holder = holder_of_(shard);
        const auto granted = granted_.find(shard);
        if ((!holder || *holder != self_) && granted != granted_.end() && now - granted->second < tick_) {
            holder = self_;  // being taken by this node's elector right now
        }
        if (!holder) continue;
        ++c.by_node[*holder];
        if (*holder == self_) c.mine_shards.push_back(shard);
    }
    c.mine = c.by_node[self_];
    c.least = std::numeric_limits<int>::max();
    // Holders that are not participants (dead, or seen before their heartbeat) are not asked
    // to take a shard, so only participants set the least; every holder counts for the most.
    for (const auto& node : participants_) c.least = std::min(c.least, c.by_node[node]);
    c.least = std::min(c.least, c.mine);
    for (const auto& [node, n] : c.by_node) {
        if (n > c.most) {
            c.most = n;
            c.first_of_most = node;  // the map is ordered: the first with the most
        }
    }
    return c;
}

bool ShardBalancer::MayAcquire(std::string_view name, SteadyTime free_since) {
    std::lock_guard lock(mu_);
    if (!enabled_) return false;
    const int shard = ShardOf(name);
    if (shard < 0) return false;
    const SteadyTime now = clock_.Steady();
    const Counts c = Count(now);
    const bool below_share = c.mine < FairShareLocked() && c.mine <= c.least;
    if (!below_share && now - free_since < tick_) return false;
    granted_[shard] = now;
    return true;
}

bool ShardBalancer::ShouldYield(std::string_view name) {
    std::lock_guard lock(mu_);
    const int shard = ShardOf(name);
    if (shard < 0) return false;
    if (!enabled_) return true;
    const SteadyTime now = clock_.Steady();
    const Counts c = Count(now);
    const bool over = c.mine > FairShareLocked() || c.mine >= c.least + 2;
    if (!over) {
        over_since_.reset();
        return false;
    }
    if (!over_since_) over_since_ = now;
    if (now - *over_since_ < hold_) return false;
    if (last_yield_ && now - *last_yield_ < hold_) return false;
    if (c.first_of_most != self_) return false;
    // The highest shard this node leads, shard 0 only when it leads nothing else.
    const int give = c.mine_shards.empty() ? -1 : c.mine_shards.back();
    if (give != shard) return false;
    last_yield_ = now;
    over_since_.reset();
    granted_.erase(shard);
    return true;
}

}  // namespace sched::trigger
