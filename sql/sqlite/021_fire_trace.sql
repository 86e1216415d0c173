-- job_fire.trace_parent and trace_state; see sql/mysql/021_fire_trace.sql.

ALTER TABLE job_fire ADD COLUMN trace_parent VARCHAR(55) NULL;
ALTER TABLE job_fire ADD COLUMN trace_state VARCHAR(512) NULL;
