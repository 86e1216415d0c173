-- Schedule options of a job; see sql/mysql/008_schedule_options.sql.

ALTER TABLE job ADD COLUMN jitter_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job ADD COLUMN dst_gap TEXT NOT NULL DEFAULT 'auto';
ALTER TABLE job ADD COLUMN dst_overlap TEXT NOT NULL DEFAULT 'auto';
