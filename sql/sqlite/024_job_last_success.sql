-- job_last_success: each job's latest succeeded fire; see sql/mysql/024_job_last_success.sql.

CREATE TABLE IF NOT EXISTS job_last_success (
    job_id INTEGER NOT NULL PRIMARY KEY,
    finished_at INTEGER NOT NULL,
    recorded_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_last_success_recorded ON job_last_success (recorded_at);

INSERT OR IGNORE INTO job_last_success (job_id, finished_at, recorded_at)
    SELECT f.job_id, MAX(f.finished_at), 0 FROM job_fire f JOIN job j ON j.id = f.job_id
    WHERE f.status = 'succeeded' AND f.finished_at IS NOT NULL GROUP BY f.job_id;
