#pragma once

/// The master's scan as steps (docs/architecture/master.md "Master loop"): Master::Scan opens one
/// fenced transaction and runs each ScanStep in order inside it, so every write of every step
/// lands only while this node holds the lease at the scan's epoch. A step reads and writes
/// through the context's session, adds what it did to the report, and notes the fires it gave a
/// slave (for the notices sent after the commit). A step throws only what the transaction
/// throws (soci errors: the whole scan rolls back and is retried by the loop).

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <soci/soci.h>

#include "sched/db/dialect.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/shard.hpp"
#include "sched/trigger/assigner.hpp"
#include "sched/trigger/master_config.hpp"

namespace sched::trigger::impl {

/// What the steps of one scan share. Built by Master::Scan inside the fenced transaction.
class ScanContext {
  public:
    ScanContext(soci::session& s, const db::Dialect& dialect, std::int64_t epoch, std::int64_t now, Assigner& assigner,
                std::vector<std::string> alive_ids, std::int64_t executor_ttl_ms, ScanReport& report)
        : s(s),
          dialect(dialect),
          epoch(epoch),
          now(now),
          assigner(assigner),
          live_ids(assigner.NodeIds()),
          alive_ids(std::move(alive_ids)),
          report(report),
          executor_ttl_ms_(executor_ttl_ms) {}

    soci::session& s;
    const db::Dialect& dialect;
    const std::int64_t epoch;
    const std::int64_t now;  ///< the database clock when the scan began
    /// The slaves that get fires (heartbeat within node-ttl / 2), by capacity.
    Assigner& assigner;
    const std::vector<std::string> live_ids;
    /// The slaves not dead (heartbeat within node-ttl): their dispatching fires are theirs.
    const std::vector<std::string> alive_ids;
    /// Whether a slave missing from `alive_ids` may be judged dead (its dispatching fires lost):
    /// not in a term's first node-ttl (Master::Scan).
    bool judges_slaves = true;
    ScanReport& report;
    /// The shard of the job space this scan plans (the whole space with one shard).
    store::JobShard shard;
    /// Workflow runs whose step fires ended in this scan (the follow-ups tell the workflows).
    std::set<std::int64_t> ended_runs;
    /// The slaves that take planned fires (a trigger_node row with sent_through: a build that
    /// knows them), and the election's lease name whose rows' epochs a dispatch carries.
    std::set<std::string> planned_nodes;
    std::string lease_base;

    /// Whether a fire of `node` due at `due_at` is planned already claimed for it
    /// (store::FireClaims "Planned fires"): the node takes planned fires and the fire is due
    /// later than kPlannedAfter from now (a fire due sooner is likely at or below the node's
    /// sent_through already, and would be judged lost rather than handed back if the node died).
    bool PlansClaimed(const std::string& node, std::int64_t due_at) const;
    /// The epoch a planned fire is dispatched under: the sum over the election's lease rows,
    /// as a claim stamps it, read once per scan.
    std::int64_t DispatchEpoch();
    static constexpr std::int64_t kPlannedAfter = 1500;

    /// Live executor instances of `app` (sharding-broadcast), counted once per scan.
    int LiveExecutors(const std::string& app);
    /// Notes a fire given to `node` (new or moved), for its notice; `fill`: it may be claimed
    /// early to fill a small group (protocol::NoticedFire).
    void Notify(const std::string& node, std::int64_t fire_id, std::int64_t due_at, bool fill = false);
    /// Notes `fire`, stored as `fire_id`, for the notice of the node it is assigned to (if any).
    void Notify(std::int64_t fire_id, const model::Fire& fire, bool fill = false);
    /// Notes a planner's new fires per node.
    void Notify(const std::map<std::string, std::vector<protocol::NoticedFire>>& assigned);

  private:
    const std::int64_t executor_ttl_ms_;
    std::map<std::string, int> executors_by_app_;
    std::optional<std::int64_t> dispatch_epoch_;
};

/// What the probe that prompted a scan found waiting (Master::Quiet, store::ScanProbe).
struct ProbedWork {
    bool jobs_due = false;       ///< a job due within lookahead - lookahead-refill
    bool workflows_due = false;  ///< a workflow due within the same window
    bool followups = false;
    bool unassigned = false;
    bool backfills = false;
    bool unstarted_runs = false;
};

class ScanStep {
  public:
    virtual ~ScanStep() = default;
    /// This step's share of the scan, inside its transaction.
    virtual void Run(ScanContext& ctx) = 0;
    /// Whether a scan that a probe prompted runs this step (Master::Scan): only a step the probe
    /// found work for, or one whose work the probe cannot see and that is cheap when there is
    /// none. The others wait for the next full scan, as they would have without the probe.
    virtual bool Wanted(const ProbedWork& work) const {
        (void)work;
        return true;
    }
};

/// Milliseconds of a configured duration.
inline std::int64_t Ms(Micros d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

}  // namespace sched::trigger::impl
