-- Objects kept in a file (docs/schedctl.md "Managed from a file"):
--   job.managed_by, workflow.managed_by  the file that declares the object (`schedctl apply`
--                                        sends its name), NULL for one made by hand. The UI shows
--                                        a managed object read-only; nothing else reads it.
-- Re-runnable like 005 (MySQL 8 has no ADD COLUMN IF NOT EXISTS).

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE job ADD COLUMN managed_by VARCHAR(191) NULL', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'job' AND column_name = 'managed_by');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE workflow ADD COLUMN managed_by VARCHAR(191) NULL', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'workflow' AND column_name = 'managed_by');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;
