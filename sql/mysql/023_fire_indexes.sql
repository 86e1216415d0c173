-- job_fire's secondary indexes, fewer and cheaper to keep on the fire path: one index holds
-- `status` instead of two, so a fire's claim and its end each rewrite one secondary entry for
-- the status instead of two, and the index that only repeated the unique key's first columns is
-- gone (docs/architecture/data-model.md "job_fire's indexes").
--   idx_fire_state (status, assigned_node, scheduled_time)  replaces idx_fire_node (assigned_node,
--       status, scheduled_time) and idx_fire_status (status, scheduled_time): a node's pending
--       fires in time order (the slave's poll), the unassigned ones (the master), every fire of a
--       status (sweeps, counts)
--   idx_fire_time (scheduled_time)  never rewritten (the scheduled time does not change): the
--       activity view's time window and the retention purge's age
--   idx_fire_job (job_id, scheduled_time)  dropped: uk_fire_once (job_id, scheduled_time, kind,
--       attempt, shard_index) begins with the same columns and serves every read it served
-- Re-runnable (MySQL DDL commits implicitly): each step checks first. Each ALTER is online
-- (InnoDB builds the new indexes without blocking writes); on a large history allow for the
-- build's time and space.

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'CREATE INDEX idx_fire_state ON job_fire (status, assigned_node, scheduled_time)', 'DO 0') FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = 'job_fire' AND index_name = 'idx_fire_state');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'CREATE INDEX idx_fire_time ON job_fire (scheduled_time)', 'DO 0') FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = 'job_fire' AND index_name = 'idx_fire_time');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;

SET @sched_ddl = (SELECT IF(COUNT(*) > 0, 'DROP INDEX idx_fire_node ON job_fire', 'DO 0') FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = 'job_fire' AND index_name = 'idx_fire_node');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;

SET @sched_ddl = (SELECT IF(COUNT(*) > 0, 'DROP INDEX idx_fire_status ON job_fire', 'DO 0') FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = 'job_fire' AND index_name = 'idx_fire_status');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;

SET @sched_ddl = (SELECT IF(COUNT(*) > 0, 'DROP INDEX idx_fire_job ON job_fire', 'DO 0') FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = 'job_fire' AND index_name = 'idx_fire_job');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;
