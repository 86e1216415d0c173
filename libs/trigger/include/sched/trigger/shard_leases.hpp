#pragma once

/// One node's leases of the job space's shards (docs/architecture.md "Sharded mastership"): a
/// lock::LeaseElector per shard, each on its own thread and its own row (store::ShardLeaseName),
/// all gated by one ShardBalancer so that the shards spread over the live nodes. With one shard
/// it is the single `master` lease, elected as before (the balancer lets the node take it
/// whenever it is free, unless the node's shard count is not the cluster's).
///
/// The owner (TriggerNode) learns of terms through ShardObserver, called on the shard's elector
/// thread with the shard's index.

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sched/lock/lease_elector.hpp"
#include "sched/lock/lock_store.hpp"
#include "sched/trigger/shard_balancer.hpp"

namespace sched::trigger {

class ShardObserver {
  public:
    virtual ~ShardObserver() = default;
    virtual void OnShardLeading(int shard, std::int64_t epoch) = 0;
    virtual void OnShardStopped(int shard, const lock::LeadershipEnd& end) = 0;
    virtual void OnShardLeader(int shard, const std::string& node, std::int64_t epoch) = 0;
};

/// What /status, /metrics and the readiness check show of one shard.
struct ShardState {
    int shard = 0;
    std::string lease;                                           ///< the lease row's name
    std::optional<lock::Leadership> leading;                     ///< this node's current term
    std::optional<std::pair<std::string, std::int64_t>> leader;  ///< the holder last seen, its epoch
    /// Since when this node leads it (steady clock); nullopt when not leading.
    std::optional<std::chrono::steady_clock::time_point> leading_since;
    std::optional<std::chrono::steady_clock::time_point> last_leader_activity;
};

class ShardLeases {
  public:
    /// `shards` leases named after `election.name`; the balancer holds back acquisitions for
    /// `hold` (see ShardBalancer). `store` and `observer` must outlive this object.
    ShardLeases(lock::LockStore& store, const std::string& node_id, const lock::ElectionConfig& election, int shards,
                ShardObserver& observer);
    ~ShardLeases();
    ShardLeases(const ShardLeases&) = delete;
    ShardLeases& operator=(const ShardLeases&) = delete;

    /// Starts every elector's thread.
    void Start();
    /// Stops every elector (each resigns its lease: observers first, then the row released).
    void Stop();

    int count() const { return static_cast<int>(electors_.size()); }
    lock::LeaseElector& elector(int shard) { return *electors_.at(static_cast<std::size_t>(shard)); }
    const lock::LeaseElector& elector(int shard) const { return *electors_.at(static_cast<std::size_t>(shard)); }
    ShardBalancer& balancer() { return *balancer_; }
    /// The lease row of shard `shard`.
    const std::string& lease_name(int shard) const { return names_.at(static_cast<std::size_t>(shard)); }

    bool IsLeading(int shard, std::int64_t epoch) const { return elector(shard).IsLeading(epoch); }
    /// The highest epoch of `shard` this node has seen (its own term or the holder a round read).
    std::optional<std::int64_t> ObservedEpoch(int shard) const;
    /// Shards this node leads now.
    int Led() const;
    std::vector<ShardState> States() const;
    /// Makes every elector run its next round now (a peer released a lease).
    void Nudge();
    /// Sums over the electors' counters (a node's lease transitions, failures, ...).
    lock::ElectionCounters Counters() const;

  private:
    class Relay;  // one per elector: tags its callbacks with the shard

    std::vector<std::string> names_;
    std::vector<std::unique_ptr<lock::LeaseElector>> electors_;
    std::vector<std::unique_ptr<Relay>> relays_;
    std::unique_ptr<ShardBalancer> balancer_;
    std::vector<std::jthread> threads_;
    mutable std::mutex since_mu_;
    std::vector<std::optional<std::chrono::steady_clock::time_point>> since_;
    friend class Relay;
};

}  // namespace sched::trigger
