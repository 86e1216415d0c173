-- job_last_success.fire_id, fire_finished_at: the succeeded fire whose finish finished_at is; see
-- sql/mysql/025_last_success_fire.sql.

ALTER TABLE job_last_success ADD COLUMN fire_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_last_success ADD COLUMN fire_finished_at INTEGER NOT NULL DEFAULT 0;

UPDATE job_last_success
    SET fire_id = COALESCE((SELECT MAX(f.id) FROM job_fire f WHERE f.job_id = job_last_success.job_id AND f.status = 'succeeded'), 0),
        fire_finished_at = finished_at;
