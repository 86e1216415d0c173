-- job_last_success.fire_id, fire_finished_at: the succeeded fire whose finish finished_at is, so
-- that the no_success alert reads a job's last success (and its episode key, the fire id) from
-- this one row instead of an aggregate over the job's whole history (docs/architecture/alerts.md).
--   fire_id           that fire's id (0: none known)
--   fire_finished_at  the finished_at written with fire_id; a writer that does not know fire_id
--                     (a node of a build before this migration, during a rolling upgrade) moves
--                     finished_at alone, and the two then differ: the alerter reads that job's
--                     last success from job_fire instead
-- Filled once from the retained history, re-runnable.

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE job_last_success ADD COLUMN fire_id BIGINT NOT NULL DEFAULT 0, ADD COLUMN fire_finished_at BIGINT NOT NULL DEFAULT 0', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'job_last_success' AND column_name = 'fire_id');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;

UPDATE job_last_success l
    SET l.fire_id = COALESCE((SELECT MAX(f.id) FROM job_fire f WHERE f.job_id = l.job_id AND f.status = 'succeeded'), 0),
        l.fire_finished_at = l.finished_at
    WHERE l.fire_finished_at <> l.finished_at;
