#include "sched/trigger/shard_leases.hpp"

#include <algorithm>

#include "sched/store/shard.hpp"

namespace sched::trigger {

class ShardLeases::Relay final : public lock::ElectionObserver {
  public:
    Relay(ShardLeases& leases, int shard, ShardObserver& observer)
        : leases_(leases), shard_(shard), observer_(observer) {}

    void OnStartedLeading(std::int64_t epoch) override {
        {
            std::lock_guard lock(leases_.since_mu_);
            leases_.since_[static_cast<std::size_t>(shard_)] = std::chrono::steady_clock::now();
        }
        observer_.OnShardLeading(shard_, epoch);
    }
    void OnStoppedLeading(const lock::LeadershipEnd& end) override {
        {
            std::lock_guard lock(leases_.since_mu_);
            leases_.since_[static_cast<std::size_t>(shard_)].reset();
        }
        observer_.OnShardStopped(shard_, end);
    }
    void OnNewLeader(const std::string& node, std::int64_t epoch) override {
        observer_.OnShardLeader(shard_, node, epoch);
    }

  private:
    ShardLeases& leases_;
    const int shard_;
    ShardObserver& observer_;
};

ShardLeases::ShardLeases(lock::LockStore& store, const std::string& node_id, const lock::ElectionConfig& election,
                         int shards, ShardObserver& observer)
    : since_(static_cast<std::size_t>(std::max(shards, 1))) {
    const int n = std::max(shards, 1);
    for (int i = 0; i < n; ++i) names_.push_back(store::ShardLeaseName(election.name, i));
    // Hysteresis: a shard moves only after the imbalance has held this long, at least three
    // rounds and one lease length, so one late heartbeat or one slow renew moves nothing.
    const Micros hold = std::max(3 * election.tick, election.ttl);
    balancer_ = std::make_unique<ShardBalancer>(names_, node_id, election.tick, hold, [this, node_id](int shard) {
        const auto& e = *electors_.at(static_cast<std::size_t>(shard));
        if (e.IsLeading()) return std::optional<std::string>(node_id);
        // This node's own sighting outlives its term (a yield, a lost renew) until a round reads
        // another holder: not leading, it is not the holder.
        const auto seen = e.LeaderSeen();
        if (!seen || seen->first == node_id) return std::optional<std::string>();
        return std::optional<std::string>(seen->first);
    });
    for (int i = 0; i < n; ++i) {
        lock::ElectionConfig c = election;
        c.name = names_[static_cast<std::size_t>(i)];
        electors_.push_back(std::make_unique<lock::LeaseElector>(store, node_id, c));
        relays_.push_back(std::make_unique<Relay>(*this, i, observer));
        electors_.back()->AddObserver(*relays_.back());
        // With one shard the balancer lets the node take the one lease whenever it is free, as
        // without shards; it still holds a node back whose count is not the cluster's.
        electors_.back()->SetGate(*balancer_);
    }
}

ShardLeases::~ShardLeases() {
    Stop();
}

void ShardLeases::Start() {
    for (auto& e : electors_) {
        threads_.emplace_back([elector = e.get()](const std::stop_token& st) { elector->Run(st); });
    }
}

void ShardLeases::Stop() {
    for (auto& t : threads_) t.request_stop();
    for (auto& t : threads_) {
        if (t.joinable()) t.join();  // Run() resigns: owner NULL, epoch + 1
    }
    threads_.clear();
}

std::optional<std::int64_t> ShardLeases::ObservedEpoch(int shard) const {
    if (shard < 0 || shard >= count()) return std::nullopt;
    const auto& e = elector(shard);
    std::optional<std::int64_t> observed;
    if (const auto seen = e.LeaderSeen()) observed = seen->second;
    if (const auto leadership = e.CurrentLeadership()) observed = std::max(observed.value_or(0), leadership->epoch);
    return observed;
}

int ShardLeases::Led() const {
    int n = 0;
    for (const auto& e : electors_) n += e->IsLeading() ? 1 : 0;
    return n;
}

std::vector<ShardState> ShardLeases::States() const {
    std::vector<ShardState> out;
    std::lock_guard lock(since_mu_);
    for (int i = 0; i < count(); ++i) {
        const auto& e = elector(i);
        ShardState s{.shard = i,
                     .lease = names_[static_cast<std::size_t>(i)],
                     .leading = e.CurrentLeadership(),
                     .leader = e.LeaderSeen(),
                     .leading_since = std::nullopt,
                     .last_leader_activity = e.LastLeaderActivity()};
        if (s.leading) s.leading_since = since_[static_cast<std::size_t>(i)];
        out.push_back(std::move(s));
    }
    return out;
}

void ShardLeases::Nudge() {
    for (auto& e : electors_) e->Nudge();
}

lock::ElectionCounters ShardLeases::Counters() const {
    lock::ElectionCounters sum;
    for (const auto& e : electors_) {
        const auto c = e->Counters();
        sum.ticks += c.ticks;
        sum.started_leading += c.started_leading;
        sum.stopped_leading += c.stopped_leading;
        sum.renews += c.renews;
        sum.renew_failures += c.renew_failures;
        sum.self_demotions += c.self_demotions;
        sum.acquire_errors += c.acquire_errors;
        sum.clock_anomalies += c.clock_anomalies;
    }
    return sum;
}

}  // namespace sched::trigger
