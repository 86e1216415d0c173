-- job_fire_log: the tail of a fire's log stored with its result; see sql/mysql/006_fire_log.sql.

CREATE TABLE IF NOT EXISTS job_fire_log (
    fire_id INTEGER NOT NULL PRIMARY KEY,
    log TEXT NOT NULL,
    truncated_bytes INTEGER NOT NULL DEFAULT 0,
    stored_at INTEGER NOT NULL
);
