-- Schedule options of a job (docs/cron.md):
--   job.jitter_ms    0 = none; else each fire runs a deterministic 0..jitter_ms ms after its
--                    scheduled time (hashed from the job id and that time), at most 3600000.
--   job.dst_gap      auto | skip | shift-forward: a matching local time inside a DST gap.
--   job.dst_overlap  auto | first | last | both: a matching local time that occurs twice.
-- Re-runnable like 005 (MySQL 8 has no ADD COLUMN IF NOT EXISTS).

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE job ADD COLUMN jitter_ms BIGINT NOT NULL DEFAULT 0', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'job' AND column_name = 'jitter_ms');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE job ADD COLUMN dst_gap VARCHAR(16) NOT NULL DEFAULT ''auto''', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'job' AND column_name = 'dst_gap');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE job ADD COLUMN dst_overlap VARCHAR(16) NOT NULL DEFAULT ''auto''', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'job' AND column_name = 'dst_overlap');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;
