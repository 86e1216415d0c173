-- alert_rule.managed_by: the file that declares the rule (the `alerts:` section of `schedctl
-- apply`, which sends the file's name), NULL for a rule made by hand; as job.managed_by and
-- workflow.managed_by (018). The UI shows a managed rule read-only; nothing else reads it.
-- Re-runnable like 005 (MySQL 8 has no ADD COLUMN IF NOT EXISTS).

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE alert_rule ADD COLUMN managed_by VARCHAR(191) NULL', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'alert_rule' AND column_name = 'managed_by');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;
