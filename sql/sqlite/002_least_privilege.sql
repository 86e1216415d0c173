-- Least privilege; see sql/mysql/002_least_privilege.sql for what the columns mean.
-- (SQLite runs every missing migration in one transaction, so this need not be re-runnable.)

ALTER TABLE api_token ADD COLUMN app_scope TEXT NULL;
ALTER TABLE job_fire ADD COLUMN dispatch_epoch INTEGER NULL;
UPDATE api_token SET app_scope = '["*"]' WHERE role = 'executor' AND app_scope IS NULL;
