-- Calendars and schedule bounds (docs/schedules.md; cron::Calendar, store::CalendarRepository).
-- calendar: a named set of excluded periods shared by jobs; the rules are lists, one entry per
--   line: excluded_dates ("2026-12-25" or "2026-12-24..2026-12-26"), excluded_weekdays ("sat"),
--   excluded_times (daily local windows "22:00-06:00"), evaluated in time_zone. `version` is its
--   optimistic-concurrency token (every update + 1); the master caches calendars by (id, version).
-- job.calendar: the name of the calendar whose excluded periods get no fire ('' = none); the
--   master records such scheduled times in the fire ledger (status skipped, reason calendar).
-- job.start_at / end_at: no scheduled fire before start_at or after end_at (NULL = unbounded).
-- job.max_runs: the job completes once this many scheduled fires were planned (NULL = no limit);
--   job.planned_runs counts them (from when max_runs was set).
-- job.completed_at / completed_reason (end_at | max_runs): the job ended by itself; it keeps
--   enabled, has no next_fire_time, and an edit of its bounds that leaves time brings it back.
-- Re-runnable: tables IF NOT EXISTS, columns and the index only when missing.

CREATE TABLE IF NOT EXISTS calendar (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    name VARCHAR(191) NOT NULL,
    description VARCHAR(1024) NOT NULL DEFAULT '',
    time_zone VARCHAR(64) NOT NULL,
    excluded_dates TEXT NOT NULL,
    excluded_weekdays VARCHAR(64) NOT NULL DEFAULT '',
    excluded_times VARCHAR(512) NOT NULL DEFAULT '',
    version BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE KEY uk_calendar_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE job ADD COLUMN calendar VARCHAR(191) NOT NULL DEFAULT ''''', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'job' AND column_name = 'calendar');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE job ADD COLUMN start_at BIGINT NULL', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'job' AND column_name = 'start_at');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE job ADD COLUMN end_at BIGINT NULL', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'job' AND column_name = 'end_at');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE job ADD COLUMN max_runs BIGINT NULL', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'job' AND column_name = 'max_runs');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE job ADD COLUMN planned_runs BIGINT NOT NULL DEFAULT 0', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'job' AND column_name = 'planned_runs');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE job ADD COLUMN completed_at BIGINT NULL', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'job' AND column_name = 'completed_at');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE job ADD COLUMN completed_reason VARCHAR(16) NOT NULL DEFAULT ''''', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'job' AND column_name = 'completed_reason');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'CREATE INDEX idx_job_calendar ON job (calendar)', 'DO 0') FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = 'job' AND index_name = 'idx_job_calendar');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;
