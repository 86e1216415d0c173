-- Audit log (docs/architecture/audit.md; store::AuditRepository, web RecordAudit).
-- audit_log: one row per change made through the API (and the master's automatic pause):
--   who (actor = the token's name, its role and id; 0 for the cluster token and the scheduler),
--   when (at_ms, the DB clock), what (action, target_kind + target_id + target_name) and the
--   target's JSON before and after (NULL when it did not exist; secrets redacted and each side
--   bounded by the web module). Purged with fires under `history-retention`.
-- job.paused_by / paused_at / pause_note: who paused the job (a token name, or "scheduler" for
--   pause_after_failures), when (DB clock) and why; set while paused, cleared on resume.
-- Re-runnable: tables IF NOT EXISTS, columns and indexes only when missing.

CREATE TABLE IF NOT EXISTS audit_log (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    at_ms BIGINT NOT NULL,
    actor VARCHAR(191) NOT NULL,
    actor_role VARCHAR(16) NOT NULL,
    actor_token_id BIGINT NOT NULL DEFAULT 0,
    action VARCHAR(32) NOT NULL,
    target_kind VARCHAR(32) NOT NULL,
    target_id VARCHAR(191) NOT NULL,
    target_name VARCHAR(191) NOT NULL,
    before_json MEDIUMTEXT NULL,
    after_json MEDIUMTEXT NULL,
    KEY idx_audit_at (at_ms, id),
    KEY idx_audit_target (target_kind, target_id, id),
    KEY idx_audit_actor (actor, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE job ADD COLUMN paused_by VARCHAR(191) NULL', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'job' AND column_name = 'paused_by');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE job ADD COLUMN paused_at BIGINT NULL', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'job' AND column_name = 'paused_at');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE job ADD COLUMN pause_note VARCHAR(1024) NULL', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'job' AND column_name = 'pause_note');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;
