#include "sched/store/scan_probe.hpp"

#include <algorithm>
#include <string>

#include "sched/model/workflow.hpp"

namespace sched::store {

Result<ScanProbe> ReadScanProbe(db::Database& db, const JobShard& shard, std::int64_t node_ttl_ms) {
    const std::string now(db.dialect().NowMs());
    // The cluster-wide parts are shard 0's steps (orphans, workflows): another shard's master
    // would scan for work it does not do.
    const std::string first_only = shard.First() ? "" : " AND 1 = 0";
    const std::string nodes = "FROM trigger_node WHERE state = 'active' AND last_heartbeat_ms > " + now + " - ";
    const std::string sql =
        "SELECT (SELECT MIN(next_fire_time) FROM job WHERE enabled = 1" + shard.JobFilter("id") +
        "), (SELECT MIN(next_fire_time) FROM workflow WHERE paused = 0" + first_only +
        "), EXISTS (SELECT 1 FROM job_fire WHERE followup = 1" + shard.FollowupFilter() +
        "), EXISTS (SELECT 1 FROM job_fire WHERE assigned_node IS NULL AND status = 'pending'" + first_only +
        "), EXISTS (SELECT 1 FROM job_backfill WHERE state = 'running'"
        "), EXISTS (SELECT 1 FROM workflow_run WHERE status = 'running'" +
        first_only +
        " AND NOT EXISTS (SELECT 1 FROM job_fire f WHERE f.workflow_run_id = workflow_run.id AND f.attempt >= " +
        std::to_string(model::kStepAttemptStride) + " * workflow_run.generation)), (SELECT COUNT(*) " + nodes +
        ":half1), (SELECT COALESCE(SUM(started_at_ms), 0) " + nodes + ":half2), (SELECT COUNT(*) " + nodes +
        ":ttl1), (SELECT COALESCE(SUM(started_at_ms), 0) " + nodes +
        ":ttl2), (SELECT MIN(last_heartbeat_ms) + :half3 - " + now + " " + nodes +
        ":half4), (SELECT MIN(last_heartbeat_ms) + :ttl3 - " + now + " " + nodes + ":ttl4)";
    const std::int64_t half = node_ttl_ms / 2;
    return db.Run([&](soci::session& s) {
        ScanProbe p;
        std::int64_t job_due = 0;
        std::int64_t workflow_due = 0;
        soci::indicator job_ind = soci::i_null;
        soci::indicator workflow_ind = soci::i_null;
        int followups = 0;
        int unassigned = 0;
        int backfills = 0;
        int unstarted = 0;
        std::int64_t stale_in = 0;
        std::int64_t dead_in = 0;
        soci::indicator stale_ind = soci::i_null;
        soci::indicator dead_ind = soci::i_null;
        s << sql, soci::use(half, "half1"), soci::use(half, "half2"), soci::use(node_ttl_ms, "ttl1"),
            soci::use(node_ttl_ms, "ttl2"), soci::use(half, "half3"), soci::use(half, "half4"),
            soci::use(node_ttl_ms, "ttl3"), soci::use(node_ttl_ms, "ttl4"), soci::into(job_due, job_ind),
            soci::into(workflow_due, workflow_ind), soci::into(followups), soci::into(unassigned),
            soci::into(backfills), soci::into(unstarted), soci::into(p.fresh.count), soci::into(p.fresh.started_sum),
            soci::into(p.live.count), soci::into(p.live.started_sum), soci::into(stale_in, stale_ind),
            soci::into(dead_in, dead_ind);
        // The earlier of the two; each is at least 0 up to the clock's tick (a node is in its set
        // while its heartbeat is newer than the threshold).
        if (stale_ind == soci::i_ok) p.node_change_in_ms = std::max<std::int64_t>(0, stale_in);
        if (dead_ind == soci::i_ok) {
            p.node_change_in_ms = std::max<std::int64_t>(0, std::min(dead_in, p.node_change_in_ms.value_or(dead_in)));
        }
        if (job_ind == soci::i_ok) p.earliest_job_due = job_due;
        if (workflow_ind == soci::i_ok) p.earliest_workflow_due = workflow_due;
        p.followups = followups != 0;
        p.unassigned = unassigned != 0;
        p.backfills = backfills != 0;
        p.unstarted_runs = unstarted != 0;
        return p;
    });
}

}  // namespace sched::store
