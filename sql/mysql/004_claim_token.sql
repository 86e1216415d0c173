-- job_fire.claim_token: the random token of the slave's group claim that moved the fire to
-- `dispatching` (docs/architecture/slave.md). One UPDATE claims a group of fires and one
-- SELECT by token tells the slave which of them it won; a claim retried after an ambiguous
-- commit reuses its token, so it finds the fires it already won. NULL: never claimed by a
-- group claim. Re-runnable like 002 (MySQL 8 has no ADD COLUMN IF NOT EXISTS).

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE job_fire ADD COLUMN claim_token BIGINT NULL', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'job_fire' AND column_name = 'claim_token');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;
