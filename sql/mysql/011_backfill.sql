-- Backfills (docs/architecture/backfill.md; store::BackfillRepository, trigger::AdvanceBackfills).
-- job_backfill: a request to run job_id once for every scheduled time in [range_from, range_to)
--   (epoch ms), created by the API (POST /api/v1/jobs/{id}/backfill) and advanced by the master
--   inside its fenced scan. cursor_ms: every scheduled time before it has a fire (or already had
--   one); the master continues from it after a failover. overlap serial | parallel with
--   max_parallel: how many of its fires may be unfinished at once (1 for serial). state
--   running -> completed (every time has an ended fire) | cancelled. planned: the scheduled times
--   in the range; existing: times that already had a fire (not run again); created: fires this
--   backfill inserted. The fires themselves are job_fire rows of kind `backfill`.
-- Re-runnable: the table IF NOT EXISTS, its indexes inline.

CREATE TABLE IF NOT EXISTS job_backfill (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    job_id BIGINT NOT NULL,
    range_from BIGINT NOT NULL,
    range_to BIGINT NOT NULL,
    overlap VARCHAR(16) NOT NULL,
    max_parallel INT NOT NULL,
    state VARCHAR(16) NOT NULL,
    cursor_ms BIGINT NOT NULL,
    planned INT NOT NULL,
    existing INT NOT NULL DEFAULT 0,
    created INT NOT NULL DEFAULT 0,
    created_by VARCHAR(191) NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    finished_at BIGINT NULL,
    KEY idx_backfill_state (state, id),
    KEY idx_backfill_job (job_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
