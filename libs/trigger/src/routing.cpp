#include "sched/trigger/routing.hpp"

#include <algorithm>
#include <array>

namespace sched::trigger {

namespace {

// Enough virtual nodes that load spreads evenly over a handful of instances.
constexpr int kVirtualNodes = 160;

// Rotates `v` so that index `first` comes first, keeping the rest in order.
std::vector<std::string> RotateTo(std::vector<std::string> v, std::size_t first) {
    std::rotate(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(first % v.size()), v.end());
    return v;
}

}  // namespace

Probe ProbeFor(Routing r) {
    if (r == Routing::kFailover) return Probe::kBeat;
    if (r == Routing::kBusyOver) return Probe::kIdleBeat;
    return Probe::kNone;
}

std::uint64_t StableHash(std::string_view data) {
    std::uint64_t h = 1469598103934665603ULL;
    for (const unsigned char c : data) {
        h ^= c;
        h *= 1099511628211ULL;
    }
    // FNV alone clusters similar keys ("a:1", "a:2"); a final mix spreads them over the ring.
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

Router::Router(std::uint64_t seed) : rng_(seed) {}

std::vector<std::string> Router::Order(Routing routing, std::int64_t job_id, std::vector<std::string> instances,
                                       int shard_index) {
    if (instances.empty()) return instances;
    // A canonical order makes first/last/failover/sharding agree across nodes and restarts.
    std::sort(instances.begin(), instances.end());
    instances.erase(std::unique(instances.begin(), instances.end()), instances.end());
    const std::size_t n = instances.size();
    std::lock_guard lock(mu_);
    switch (routing) {
        case Routing::kFirst:
        case Routing::kFailover:
        case Routing::kBusyOver:
            return instances;
        case Routing::kLast:
            return RotateTo(std::move(instances), n - 1);
        case Routing::kRoundRobin:
            return RotateTo(std::move(instances), round_robin_[job_id]++ % n);
        case Routing::kRandom: {
            std::shuffle(instances.begin(), instances.end(), rng_);
            return instances;
        }
        case Routing::kShardingBroadcast:
            return RotateTo(std::move(instances), static_cast<std::size_t>(std::max(0, shard_index)) % n);
        case Routing::kConsistentHash: {
            std::map<std::uint64_t, std::size_t> ring;
            for (std::size_t i = 0; i < n; ++i) {
                for (int v = 0; v < kVirtualNodes; ++v) {
                    ring.emplace(StableHash(instances[i] + "#" + std::to_string(v)), i);
                }
            }
            auto it = ring.lower_bound(StableHash("job:" + std::to_string(job_id)));
            if (it == ring.end()) it = ring.begin();
            return RotateTo(std::move(instances), it->second);
        }
        case Routing::kLeastFrequentlyUsed:
        case Routing::kLeastRecentlyUsed: {
            auto& table = routing == Routing::kLeastFrequentlyUsed ? use_count_ : last_use_;
            // stable_sort keeps address order among ties, so a fresh job starts at the first.
            std::stable_sort(instances.begin(), instances.end(), [&](const std::string& a, const std::string& b) {
                const auto ia = table.find({job_id, a});
                const auto ib = table.find({job_id, b});
                const std::uint64_t va = ia == table.end() ? 0 : ia->second;
                const std::uint64_t vb = ib == table.end() ? 0 : ib->second;
                return va < vb;
            });
            return instances;
        }
    }
    return instances;
}

void Router::RecordDispatch(std::int64_t job_id, const std::string& address) {
    std::lock_guard lock(mu_);
    ++use_count_[{job_id, address}];
    last_use_[{job_id, address}] = ++tick_;
}

}  // namespace sched::trigger
