-- fence_writes: bumped by every fenced transaction's final check on a Galera cluster. A write
-- to the lease row puts the row in the transaction's write set, so certification aborts the
-- transaction when a take-over of the lease (an update of the same row, on any Galera node)
-- was ordered before it; a locking read alone is local to one Galera node and certifies nothing.

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE scheduler_lock ADD COLUMN fence_writes BIGINT NOT NULL DEFAULT 0', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'scheduler_lock' AND column_name = 'fence_writes');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;
