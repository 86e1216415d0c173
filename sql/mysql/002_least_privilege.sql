-- Least privilege (docs/architecture/trust-model.md):
-- api_token.app_scope: the apps an executor token may act for, a JSON array of app names.
--   NULL or ["*"] on an executor token = every app: the legacy scope of executor tokens created
--   before this migration (kept working so that an upgrade breaks nothing; logged as a warning
--   on use; admins re-issue them scoped). People's tokens (admin, operator, viewer) have NULL.
-- job_fire.dispatch_epoch: the lease epoch the slave read when it claimed the fire, the one it
--   sends in /v1/run; a callback must carry it (NULL: claimed before this migration, unchecked).
-- Re-runnable (MySQL DDL commits implicitly): each column is added only when it is missing, by a
-- statement built from information_schema (MySQL 8 has no ADD COLUMN IF NOT EXISTS).

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE api_token ADD COLUMN app_scope TEXT NULL', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'api_token' AND column_name = 'app_scope');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE job_fire ADD COLUMN dispatch_epoch BIGINT NULL', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'job_fire' AND column_name = 'dispatch_epoch');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;

UPDATE api_token SET app_scope = '["*"]' WHERE role = 'executor' AND app_scope IS NULL;
