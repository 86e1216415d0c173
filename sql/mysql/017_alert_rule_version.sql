-- alert_rule.version: optimistic concurrency for PUT /api/v1/alert-rules/{id}, as job.version
-- and calendar.version: an edit carries the version it read and fails (409) when the rule has
-- changed since. 1 for a new rule and for every rule created before this column existed.
-- Test deliveries (POST /api/v1/alert-rules/{id}/test) need no column: their fire_id is
-- negative (-1, -2, ... per rule), which no fire id or no_success episode key ever is.

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE alert_rule ADD COLUMN version BIGINT NOT NULL DEFAULT 1', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'alert_rule' AND column_name = 'version');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;
