-- The fire ledger (docs/architecture/fire-ledger.md): every scheduled time is fired or
-- recorded with its reason.
--   job_fire.reason         why a fire ended without running (skipped, lost, failed by the
--                           cluster): misfire, paused, job_deleted, blocked, no_executor,
--                           slave_died, slave_restarted, executor_gone, no_result. NULL for
--                           fires that ran and for rows written before this migration.
--   job_fire.skipped_until  a misfire summary row (status skipped, reason misfire) stands for
--   job_fire.skipped_count  the scheduled times from scheduled_time to skipped_until, this many,
--                           none of which got a fire of its own: one row per run of skipped
--                           times, not one per time.
-- Re-runnable like 002 (MySQL 8 has no ADD COLUMN IF NOT EXISTS).

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE job_fire ADD COLUMN reason VARCHAR(32) NULL', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'job_fire' AND column_name = 'reason');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE job_fire ADD COLUMN skipped_until BIGINT NULL', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'job_fire' AND column_name = 'skipped_until');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE job_fire ADD COLUMN skipped_count BIGINT NULL', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'job_fire' AND column_name = 'skipped_count');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;
