#include "sched/store/scan_probe.hpp"

#include <soci/soci.h>

#include "sched/store/registry.hpp"
#include "store_test_base.hpp"

namespace sched::store {
namespace {

class ScanProbeTest : public StoreTest {
  protected:
    void Exec(const std::string& sql) {
        ASSERT_TRUE(db().Run([&](soci::session& s) { s << sql; }).ok()) << sql;
    }
    void Job(int id, long long next_fire_time, bool enabled = true) {
        Exec(
            "INSERT INTO job (id, name, app, handler, params, schedule_type, schedule_expr, enabled, next_fire_time, "
            "created_at, updated_at) VALUES (" +
            std::to_string(id) + ", 'j" + std::to_string(id) + "', 'app', 'h', '{}', 'cron', '* * * * * ?', " +
            (enabled ? "1" : "0") + ", " + std::to_string(next_fire_time) + ", 0, 0)");
    }
    void Fire(int id, int job_id, const std::string& status, const std::string& node, int followup) {
        Exec(
            "INSERT INTO job_fire (id, job_id, scheduled_time, kind, epoch, status, assigned_node, due_at, created_at, "
            "followup) VALUES (" +
            std::to_string(id) + ", " + std::to_string(job_id) + ", " + std::to_string(id) + ", 'schedule', 1, '" +
            status + "', " + (node.empty() ? "NULL" : "'" + node + "'") + ", 0, 0, " + std::to_string(followup) + ")");
    }
    ScanProbe Probe(JobShard shard = {}) {
        auto p = ReadScanProbe(db(), shard, 5000);
        EXPECT_TRUE(p.ok()) << p.status().ToString();
        return p.ok() ? *p : ScanProbe{};
    }
};

TEST_P(ScanProbeTest, AnEmptyClusterShowsNoWork) {
    const auto p = Probe();
    EXPECT_FALSE(p.earliest_job_due);
    EXPECT_FALSE(p.earliest_workflow_due);
    EXPECT_FALSE(p.followups);
    EXPECT_FALSE(p.unassigned);
    EXPECT_FALSE(p.backfills);
    EXPECT_FALSE(p.unstarted_runs);
    EXPECT_EQ(p.fresh.count, 0);
    EXPECT_EQ(p.live.count, 0);
}

TEST_P(ScanProbeTest, EarliestDueIsTheShardsEnabledJobs) {
    Job(2, 5000);
    Job(3, 7000);
    Job(4, 1000, /*enabled=*/false);
    EXPECT_EQ(Probe().earliest_job_due, 5000);
    EXPECT_EQ(Probe({.index = 1, .total = 2}).earliest_job_due, 7000);  // job 3 is shard 1's
    EXPECT_EQ(Probe({.index = 0, .total = 2}).earliest_job_due, 5000);
}

TEST_P(ScanProbeTest, FollowupsAndUnassignedPendingFiresAreWork) {
    Job(2, 5000);
    Fire(10, 2, "succeeded", "node-a", 0);
    Fire(11, 2, "pending", "node-a", 0);
    auto p = Probe();
    EXPECT_FALSE(p.followups);
    EXPECT_FALSE(p.unassigned);
    Fire(12, 2, "failed", "node-a", 1);
    Fire(13, 2, "pending", "", 0);
    p = Probe();
    EXPECT_TRUE(p.followups);
    EXPECT_TRUE(p.unassigned);
    // Shard 1 of 2 follows up only its own jobs' fires and never assigns orphans (shard 0 does).
    p = Probe({.index = 1, .total = 2});
    EXPECT_FALSE(p.followups);
    EXPECT_FALSE(p.unassigned);
}

TEST_P(ScanProbeTest, OnlyARunningBackfillIsWork) {
    Job(2, 5000);
    const auto backfill = [&](int id, const std::string& state) {
        Exec(
            "INSERT INTO job_backfill (id, job_id, range_from, range_to, overlap, max_parallel, state, cursor_ms, "
            "planned, created_by, created_at, updated_at) VALUES (" +
            std::to_string(id) + ", 2, 0, 1000, 'serial', 1, '" + state + "', 0, 0, 'test', 0, 0)");
    };
    backfill(1, "done");
    EXPECT_FALSE(Probe().backfills);
    backfill(2, "running");
    EXPECT_TRUE(Probe().backfills);
}

TEST_P(ScanProbeTest, NodesAreCountedByHeartbeatAgeAndTellApartByStartTime) {
    TriggerNodeRepository nodes(db());
    ASSERT_TRUE(nodes.Heartbeat({.node_id = "node-a", .address = "127.0.0.1:1", .capacity = 10}).ok());
    ASSERT_TRUE(nodes.Heartbeat({.node_id = "node-b", .address = "127.0.0.1:2", .capacity = 10}).ok());
    const auto both = Probe();
    EXPECT_EQ(both.fresh.count, 2);
    EXPECT_EQ(both.live.count, 2);
    // node-b's heartbeat 3 s old: alive (node-ttl 5 s) but no longer fresh (within 2.5 s).
    Exec("UPDATE trigger_node SET last_heartbeat_ms = last_heartbeat_ms - 3000 WHERE node_id = 'node-b'");
    auto p = Probe();
    EXPECT_EQ(p.fresh.count, 1);
    EXPECT_EQ(p.live.count, 2);
    Exec("UPDATE trigger_node SET last_heartbeat_ms = last_heartbeat_ms - 3000 WHERE node_id = 'node-b'");
    p = Probe();
    EXPECT_EQ(p.live.count, 1);
    // A node restarted under the same id between two probes changes the print, not the count.
    const auto before = Probe();
    Exec("UPDATE trigger_node SET started_at_ms = started_at_ms + 1 WHERE node_id = 'node-a'");
    const auto after = Probe();
    EXPECT_EQ(after.fresh.count, before.fresh.count);
    EXPECT_NE(after.fresh, before.fresh);
}

// When the node sets change next if nobody beats: the master sleeps no longer than that, so a
// dead slave's fires move as soon as a probe every few ms would have seen it.
TEST_P(ScanProbeTest, SaysWhenTheFirstNodeLeavesItsSetUnlessItBeats) {
    EXPECT_FALSE(Probe().node_change_in_ms) << "no node";
    TriggerNodeRepository nodes(db());
    ASSERT_TRUE(nodes.Heartbeat({.node_id = "node-a", .address = "127.0.0.1:1", .capacity = 10}).ok());
    ASSERT_TRUE(nodes.Heartbeat({.node_id = "node-b", .address = "127.0.0.1:2", .capacity = 10}).ok());
    // Both beat just now: fresh for another 2.5 s (node-ttl 5 s / 2), give or take the test's pace.
    auto in = Probe().node_change_in_ms;
    ASSERT_TRUE(in);
    EXPECT_LE(*in, 2500);
    EXPECT_GT(*in, 1500);
    // node-b's heartbeat 1 s old: it turns stale first, 1 s sooner.
    Exec("UPDATE trigger_node SET last_heartbeat_ms = last_heartbeat_ms - 1000 WHERE node_id = 'node-b'");
    in = Probe().node_change_in_ms;
    ASSERT_TRUE(in);
    EXPECT_LE(*in, 1500);
    EXPECT_GT(*in, 500);
    // 3 s old: stale already; node-a turns stale in about 2.5 s, node-b dies in about 2 s.
    Exec("UPDATE trigger_node SET last_heartbeat_ms = last_heartbeat_ms - 2000 WHERE node_id = 'node-b'");
    in = Probe().node_change_in_ms;
    ASSERT_TRUE(in);
    EXPECT_LE(*in, 2000);
    EXPECT_GT(*in, 1000);
    // Dead (6 s old) and node-a gone: nothing left to change.
    Exec("UPDATE trigger_node SET last_heartbeat_ms = last_heartbeat_ms - 3000 WHERE node_id = 'node-b'");
    Exec("DELETE FROM trigger_node WHERE node_id = 'node-a'");
    EXPECT_FALSE(Probe().node_change_in_ms);
}

SCHED_DB_TEST_SUITE(ScanProbeTest);

}  // namespace
}  // namespace sched::store
