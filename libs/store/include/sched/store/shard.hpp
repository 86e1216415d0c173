#pragma once

/// Shards of the master's job space (docs/architecture.md "Sharded mastership").
///
/// The jobs a cluster plans are split into `total` shards by their id: job j belongs to shard
/// j % total. Each shard has its own lease row (ShardLeaseName) and so its own leader and fencing
/// epoch; shard 0's row is the cluster's historical `master` row, and shard 0's leader also runs
/// the duties that must run once (workflows, the sweeps of dead slaves' and overdue fires,
/// history purge, alerts). With total = 1 (the default) there is one shard and every query is
/// the unsharded one.
///
/// The count is a cluster-wide setting (table cluster_setting, name `shards`): recorded by the
/// first node that starts, and changed only while no other node is live.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <soci/soci.h>

namespace sched::store {

/// The most shards a cluster may be split into (scheduler.shards).
inline constexpr int kMaxShards = 64;

/// One shard of the job space.
struct JobShard {
    int index = 0;
    int total = 1;

    bool Whole() const { return total <= 1; }
    /// Whether shard 0's leader (which also runs the cluster-wide duties) plans this shard.
    bool First() const { return index == 0; }
    bool Owns(std::int64_t job_id) const { return Whole() || job_id % total == index; }
    /// " AND (column % total) = index" for a job-id column; "" for the whole space.
    std::string JobFilter(std::string_view column) const;
    /// The condition on job_fire rows whose follow-ups this shard handles: fires of its jobs, and
    /// in shard 0 also every workflow step's fire (workflows are planned by shard 0's leader,
    /// which learns of its steps' ends from their follow-ups). "" for the whole space.
    std::string FollowupFilter() const;
};

/// The lease row of shard `index` under the election name `base`: `base` itself for shard 0
/// (so that one shard is today's `master` row), `base/<index>` for the others.
std::string ShardLeaseName(std::string_view base, int index);
/// The LIKE pattern matching every shard row other than shard 0's (`base/%`).
std::string ShardLeasePattern(std::string_view base);
/// The election's base name from shard `index`'s lease name (ShardLeaseName's inverse).
std::string ShardLeaseBase(std::string_view lease, int index);

/// The shard count recorded in cluster_setting, or nullopt before any node recorded one.
/// Throws soci errors (call inside Database::Run / InTransaction).
std::optional<int> ReadShardCount(soci::session& s);
/// Records `total` as the cluster's shard count (insert or replace).
void WriteShardCount(soci::session& s, int total, std::int64_t now_ms);

}  // namespace sched::store
