-- Calendars and schedule bounds; see sql/mysql/010_calendars.sql.

CREATE TABLE IF NOT EXISTS calendar (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL DEFAULT '',
    time_zone TEXT NOT NULL,
    excluded_dates TEXT NOT NULL DEFAULT '',
    excluded_weekdays TEXT NOT NULL DEFAULT '',
    excluded_times TEXT NOT NULL DEFAULT '',
    version INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
ALTER TABLE job ADD COLUMN calendar TEXT NOT NULL DEFAULT '';
ALTER TABLE job ADD COLUMN start_at INTEGER NULL;
ALTER TABLE job ADD COLUMN end_at INTEGER NULL;
ALTER TABLE job ADD COLUMN max_runs INTEGER NULL;
ALTER TABLE job ADD COLUMN planned_runs INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job ADD COLUMN completed_at INTEGER NULL;
ALTER TABLE job ADD COLUMN completed_reason TEXT NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS idx_job_calendar ON job (calendar);
