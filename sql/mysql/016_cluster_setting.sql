-- cluster_setting: values every node of a cluster must agree on, recorded by the first node that
-- starts (store/shard.hpp). name 'shards': the number of shards the master's job space is split
-- into (scheduler.shards); a node configured with another count refuses to start while other
-- nodes are live (docs/architecture.md "Sharded mastership").

CREATE TABLE IF NOT EXISTS cluster_setting (
    name VARCHAR(64) NOT NULL PRIMARY KEY,
    value VARCHAR(255) NOT NULL,
    updated_at BIGINT NOT NULL
);

-- held_since_us: when the lease row's current owner took it (database clock, epoch microseconds;
-- 0 for a row last taken before this column existed). Written with the owner on acquisition and
-- take-over, kept on renew, so the cluster view can say since when each shard has its leader.

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE scheduler_lock ADD COLUMN held_since_us BIGINT NOT NULL DEFAULT 0', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'scheduler_lock' AND column_name = 'held_since_us');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;
