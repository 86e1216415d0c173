-- Alerts: rules, deliveries and the alerter's index; see sql/mysql/007_alerts.sql.

CREATE TABLE IF NOT EXISTS alert_rule (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    job_id INTEGER NULL,
    events TEXT NOT NULL,
    consecutive_failures INTEGER NOT NULL DEFAULT 1,
    no_success_within_ms INTEGER NULL,
    url TEXT NOT NULL,
    secret TEXT NOT NULL,
    enabled INTEGER NOT NULL DEFAULT 1,
    created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_alert_rule_job ON alert_rule (job_id);

CREATE TABLE IF NOT EXISTS alert_delivery (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    rule_id INTEGER NOT NULL,
    job_id INTEGER NOT NULL,
    fire_id INTEGER NOT NULL,
    event TEXT NOT NULL,
    payload TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    last_error TEXT NULL,
    created_at INTEGER NOT NULL,
    delivered_at INTEGER NULL,
    UNIQUE (rule_id, event, job_id, fire_id)
);
CREATE INDEX IF NOT EXISTS idx_alert_delivery_due ON alert_delivery (status, next_attempt_at);
ALTER TABLE job ADD COLUMN pause_after_failures INTEGER NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS idx_fire_finished ON job_fire (finished_at, id);
