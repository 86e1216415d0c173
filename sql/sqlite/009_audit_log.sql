-- Audit log and pause notes; see sql/mysql/009_audit_log.sql.

CREATE TABLE IF NOT EXISTS audit_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at_ms INTEGER NOT NULL,
    actor TEXT NOT NULL,
    actor_role TEXT NOT NULL,
    actor_token_id INTEGER NOT NULL DEFAULT 0,
    action TEXT NOT NULL,
    target_kind TEXT NOT NULL,
    target_id TEXT NOT NULL,
    target_name TEXT NOT NULL,
    before_json TEXT NULL,
    after_json TEXT NULL
);
CREATE INDEX IF NOT EXISTS idx_audit_at ON audit_log (at_ms, id);
CREATE INDEX IF NOT EXISTS idx_audit_target ON audit_log (target_kind, target_id, id);
CREATE INDEX IF NOT EXISTS idx_audit_actor ON audit_log (actor, id);
ALTER TABLE job ADD COLUMN paused_by TEXT NULL;
ALTER TABLE job ADD COLUMN paused_at INTEGER NULL;
ALTER TABLE job ADD COLUMN pause_note TEXT NULL;
