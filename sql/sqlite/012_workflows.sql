-- Workflows; see sql/mysql/012_workflows.sql.

CREATE TABLE IF NOT EXISTS workflow (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL DEFAULT '',
    schedule_type TEXT NOT NULL,
    schedule_expr TEXT NOT NULL,
    time_zone TEXT NOT NULL DEFAULT 'UTC',
    misfire_policy TEXT NOT NULL DEFAULT 'fire-once-now',
    max_concurrent_runs INTEGER NOT NULL DEFAULT 1,
    run_timeout_ms INTEGER NOT NULL DEFAULT 0,
    paused INTEGER NOT NULL DEFAULT 0,
    next_fire_time INTEGER NULL,
    version INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_workflow_due ON workflow (next_fire_time);

CREATE TABLE IF NOT EXISTS workflow_step (
    workflow_id INTEGER NOT NULL,
    name TEXT NOT NULL,
    job_id INTEGER NOT NULL UNIQUE,
    ordinal INTEGER NOT NULL,
    PRIMARY KEY (workflow_id, name)
);

CREATE TABLE IF NOT EXISTS workflow_edge (
    workflow_id INTEGER NOT NULL,
    parent TEXT NOT NULL,
    child TEXT NOT NULL,
    edge_condition TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    PRIMARY KEY (workflow_id, parent, child)
);

CREATE TABLE IF NOT EXISTS workflow_run (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    workflow_id INTEGER NOT NULL,
    scheduled_time INTEGER NOT NULL,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT NULL,
    params TEXT NULL,
    workflow_version INTEGER NOT NULL,
    definition TEXT NOT NULL,
    generation INTEGER NOT NULL DEFAULT 0,
    from_step TEXT NULL,
    created_by TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    started_at INTEGER NULL,
    ended_at INTEGER NULL,
    updated_at INTEGER NOT NULL,
    UNIQUE (workflow_id, scheduled_time)
);
CREATE INDEX IF NOT EXISTS idx_workflow_run_status ON workflow_run (status, id);
CREATE INDEX IF NOT EXISTS idx_workflow_run_workflow ON workflow_run (workflow_id, id);

ALTER TABLE job_fire ADD COLUMN workflow_run_id INTEGER NULL;
ALTER TABLE job_fire ADD COLUMN workflow_step TEXT NULL;
CREATE INDEX IF NOT EXISTS idx_fire_workflow_run ON job_fire (workflow_run_id);
