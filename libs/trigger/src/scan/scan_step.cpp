#include "scan/scan_step.hpp"

#include "sched/lock/fenced.hpp"
#include "sched/store/registry.hpp"
#include "sched/store/shard.hpp"

namespace sched::trigger::impl {

int ScanContext::LiveExecutors(const std::string& app) {
    auto it = executors_by_app_.find(app);
    if (it == executors_by_app_.end()) {
        it = executors_by_app_.emplace(app, store::ExecutorRepository::CountLive(s, dialect, app, executor_ttl_ms_))
                 .first;
    }
    return it->second;
}

bool ScanContext::PlansClaimed(const std::string& node, std::int64_t due_at) const {
    return due_at > now + kPlannedAfter && planned_nodes.contains(node);
}

std::int64_t ScanContext::DispatchEpoch() {
    if (!dispatch_epoch_) {
        dispatch_epoch_ = lock::ReadEpochSum(s, lease_base, store::ShardLeasePattern(lease_base)).value_or(epoch);
    }
    return *dispatch_epoch_;
}

void ScanContext::Notify(const std::string& node, std::int64_t fire_id, std::int64_t due_at, bool fill) {
    report.assigned[node].push_back({.id = fire_id, .due_at = due_at, .fill = fill});
}

void ScanContext::Notify(std::int64_t fire_id, const model::Fire& fire, bool fill) {
    if (fire.assigned_node) Notify(*fire.assigned_node, fire_id, model::StoredDueAt(fire), fill);
}

void ScanContext::Notify(const std::map<std::string, std::vector<protocol::NoticedFire>>& assigned) {
    for (const auto& [node, fires] : assigned) {
        auto& to = report.assigned[node];
        to.insert(to.end(), fires.begin(), fires.end());
    }
}

}  // namespace sched::trigger::impl
