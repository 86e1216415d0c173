-- Backfills; see sql/mysql/011_backfill.sql.

CREATE TABLE IF NOT EXISTS job_backfill (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id INTEGER NOT NULL,
    range_from INTEGER NOT NULL,
    range_to INTEGER NOT NULL,
    overlap TEXT NOT NULL,
    max_parallel INTEGER NOT NULL,
    state TEXT NOT NULL,
    cursor_ms INTEGER NOT NULL,
    planned INTEGER NOT NULL,
    existing INTEGER NOT NULL DEFAULT 0,
    created INTEGER NOT NULL DEFAULT 0,
    created_by TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    finished_at INTEGER NULL
);
CREATE INDEX IF NOT EXISTS idx_backfill_state ON job_backfill (state, id);
CREATE INDEX IF NOT EXISTS idx_backfill_job ON job_backfill (job_id, id);
