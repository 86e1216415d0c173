-- Who created each API token (docs/api.md "Authentication"):
--   api_token.created_by  the creator as the audit log names them (a token's name, "cluster-token"
--                         or a person signed in through single sign-on); NULL for tokens created
--                         before this column existed.
-- Re-runnable like 005 (MySQL 8 has no ADD COLUMN IF NOT EXISTS).

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE api_token ADD COLUMN created_by VARCHAR(191) NULL', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'api_token' AND column_name = 'created_by');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;
