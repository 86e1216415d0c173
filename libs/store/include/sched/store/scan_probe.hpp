#pragma once

/// What a master's scan would find to do, read with one statement.
///
/// A master whose last scan changed nothing asks this between scans instead of scanning every
/// scan-interval (trigger::Master::Quiet): an idle cluster then costs the database one cheap,
/// index-served statement per scan-interval instead of a fenced transaction of some twenty.
/// Each part mirrors the condition under which a scan step would act; a part left out only
/// delays that step's work to the next full scan (scan-idle-interval), it never loses it.

#include <cstdint>
#include <optional>

#include "sched/common/status.hpp"
#include "sched/db/database.hpp"
#include "sched/store/shard.hpp"

namespace sched::store {

/// The trigger nodes alive by one heartbeat threshold: how many and the sum of their start
/// times, so that a node replaced by another within one probe still shows as a change.
struct NodeSetPrint {
    std::int64_t count = 0;
    std::int64_t started_sum = 0;
    friend bool operator==(const NodeSetPrint&, const NodeSetPrint&) = default;
};

struct ScanProbe {
    std::optional<std::int64_t> earliest_job_due;       ///< the shard's enabled jobs
    std::optional<std::int64_t> earliest_workflow_due;  ///< workflows not paused (shard 0 only)
    bool followups = false;                             ///< ended fires of the shard whose follow-up is not done
    bool unassigned = false;                            ///< pending fires no node holds (shard 0 only)
    bool backfills = false;                             ///< a backfill is running
    bool unstarted_runs = false;  ///< a workflow run the API created is not started (shard 0 only)
    NodeSetPrint fresh;           ///< nodes whose heartbeat is within node-ttl / 2 (they get fires)
    NodeSetPrint live;            ///< nodes whose heartbeat is within node-ttl (not yet dead)
    /// Milliseconds (by the database clock) until the first of those nodes leaves its set if it
    /// does not beat again: a fresh node turning stale (node-ttl / 2) or a live one dead
    /// (node-ttl). nullopt: no node is live. A master that sleeps past it would see a dead
    /// slave's fires later than one that probed every few milliseconds.
    std::optional<std::int64_t> node_change_in_ms;
};

/// One SELECT of scalar subqueries, each served by an index (job: enabled + next_fire_time;
/// job_fire: followup, assigned_node + status; job_backfill: state; workflow_run: status).
/// Heartbeats are judged by the database clock.
Result<ScanProbe> ReadScanProbe(db::Database& db, const JobShard& shard, std::int64_t node_ttl_ms);

}  // namespace sched::store
