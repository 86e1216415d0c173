-- The caller's W3C trace context of a manual trigger (docs/api.md "Trigger a job"):
--   job_fire.trace_parent  the traceparent header the trigger carried (55 characters, checked by
--                          the API); a run of the fire carries the caller's trace id under it.
--                          NULL: the trace is derived from the fire (every scheduled fire).
--   job_fire.trace_state   the tracestate header kept with it (at most 512 characters).
-- Re-runnable like 005 (MySQL 8 has no ADD COLUMN IF NOT EXISTS).

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE job_fire ADD COLUMN trace_parent VARCHAR(55) NULL', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'job_fire' AND column_name = 'trace_parent');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;
SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE job_fire ADD COLUMN trace_state VARCHAR(512) NULL', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'job_fire' AND column_name = 'trace_state');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;
