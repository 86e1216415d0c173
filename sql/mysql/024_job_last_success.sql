-- job_last_success: each job's latest succeeded fire, kept by the results path so that the
-- last-success gauge reads one row per job whose success moved, not the fires' history
-- (store/fire_metrics.hpp, docs/architecture/metrics.md "Last success").
--   job_id       the job (a row goes with its job's delete)
--   finished_at  the latest finish time of a succeeded fire (the executor's clock, epoch ms)
--   recorded_at  the database clock when finished_at last moved forward (epoch ms): the gauge
--                reads the rows recorded since its previous read, by idx_last_success_recorded
-- Filled once from the retained history (recorded_at 0), re-runnable.

CREATE TABLE IF NOT EXISTS job_last_success (
    job_id BIGINT NOT NULL PRIMARY KEY,
    finished_at BIGINT NOT NULL,
    recorded_at BIGINT NOT NULL,
    KEY idx_last_success_recorded (recorded_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

INSERT INTO job_last_success (job_id, finished_at, recorded_at)
    SELECT f.job_id, MAX(f.finished_at), 0 FROM job_fire f JOIN job j ON j.id = f.job_id
    WHERE f.status = 'succeeded' AND f.finished_at IS NOT NULL GROUP BY f.job_id
    ON DUPLICATE KEY UPDATE finished_at = GREATEST(job_last_success.finished_at, VALUES(finished_at));
