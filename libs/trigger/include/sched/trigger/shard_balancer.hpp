#pragma once

/// How a node's shard leases spread over the cluster (docs/architecture.md "Sharded
/// mastership"): the lock::AcquireGate of every shard elector of one node.
///
/// The node counts, for every node it knows (live participants and the holders its electors
/// last saw), how many shards each leads. Then:
///  - a free shard is taken at once when this node leads fewer than its fair share
///    (ceil(shards / participants)) and no more than the least loaded participant; otherwise
///    only after it has stayed free for a tick: a node below its share had its round to take it
///    first, and no shard waits more than a tick longer for a leader because counts are stale
///    (a dead node still counted as a participant);
///  - a leader gives one shard back when it leads more than its fair share, or at least two
///    more than the least loaded participant, and this has held for `hold` (hysteresis: a
///    heartbeat that is late once moves nothing); of the nodes that lead the most, only the
///    first by node id yields, one shard per `hold`: its highest shard other than shard 0
///    (which also carries the cluster-wide duties) when it has one.
///  - Disabled (the node's shard count differs from the cluster's), it takes nothing and
///    gives back everything.
/// Thread-safe: the electors of a node call it from their own threads.

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sched/common/clock.hpp"
#include "sched/common/duration.hpp"
#include "sched/lock/lease_elector.hpp"

namespace sched::trigger {

class ShardBalancer final : public lock::AcquireGate {
  public:
    /// Who leads shard i as this node knows it: itself while leading, else the holder its
    /// elector last saw (nullopt: nobody seen).
    using HolderOf = std::function<std::optional<std::string>(int shard)>;

    /// `lease_names[i]` is shard i's lease row name.
    ShardBalancer(std::vector<std::string> lease_names, std::string self, Micros tick, Micros hold, HolderOf holder_of,
                  const Clock& clock = SystemClock::Instance());

    /// The nodes competing for shards (live heartbeats, this node included or not).
    void SetParticipants(std::vector<std::string> nodes);
    /// Disabled: takes nothing, yields everything (see above); `why` is logged once per change.
    void SetEnabled(bool enabled, const std::string& why = "");
    bool enabled() const;

    bool MayAcquire(std::string_view name, std::chrono::steady_clock::time_point free_since) override;
    bool ShouldYield(std::string_view name) override;

    /// The fair share: ceil(shards / participants), participants counted with this node.
    int FairShare() const;

  private:
    using SteadyTime = std::chrono::steady_clock::time_point;
    struct Counts {
        std::map<std::string, int> by_node;  // every participant (0 if none) and every holder seen
        int mine = 0;
        int least = 0;
        int most = 0;
        std::string first_of_most;  // lowest node id among those leading `most`
        std::vector<int> mine_shards;
    };
    Counts Count(SteadyTime now) const;  // under mu_
    int FairShareLocked() const;
    int ShardOf(std::string_view name) const;

    const std::vector<std::string> names_;
    const std::string self_;
    const Micros tick_;
    const Micros hold_;
    const HolderOf holder_of_;
    const Clock& clock_;

    mutable std::mutex mu_;
    std::vector<std::string> participants_;
    bool enabled_ = true;
    // Shards granted to this node's electors and not yet seen led: counted as this node's for a
    // tick, so electors deciding at the same moment do not all take a shard.
    std::map<int, SteadyTime> granted_;
    std::optional<SteadyTime> over_since_;
    std::optional<SteadyTime> last_yield_;
};

}  // namespace sched::trigger
