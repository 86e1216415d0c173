-- Initial schema (SQLite 3.35+), the embedded twin of sql/mysql/001_init.sql.
-- Times: schedule and heartbeat data in epoch milliseconds; lease data in epoch
-- microseconds of the database clock. The whole file runs in one transaction.

CREATE TABLE IF NOT EXISTS scheduler_lock (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace TEXT NOT NULL UNIQUE,
    owner TEXT NULL,
    epoch INTEGER NOT NULL DEFAULT 0,
    version INTEGER NOT NULL DEFAULT 0,
    lease_until_us INTEGER NOT NULL DEFAULT 0,
    update_time_us INTEGER NOT NULL DEFAULT 0,
    create_time_us INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE IF NOT EXISTS trigger_node (
    node_id TEXT NOT NULL PRIMARY KEY,
    address TEXT NOT NULL,
    capacity INTEGER NOT NULL DEFAULT 0,
    started_at_ms INTEGER NOT NULL,
    last_heartbeat_ms INTEGER NOT NULL,
    state TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_node_heartbeat ON trigger_node (last_heartbeat_ms);

CREATE TABLE IF NOT EXISTS executor_instance (
    app TEXT NOT NULL,
    address TEXT NOT NULL,
    handlers TEXT NOT NULL,
    capacity INTEGER NOT NULL DEFAULT 0,
    running INTEGER NOT NULL DEFAULT 0,
    last_heartbeat_ms INTEGER NOT NULL,
    registered_at_ms INTEGER NOT NULL,
    PRIMARY KEY (app, address)
);
CREATE INDEX IF NOT EXISTS idx_executor_heartbeat ON executor_instance (last_heartbeat_ms);

CREATE TABLE IF NOT EXISTS job (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    app TEXT NOT NULL,
    handler TEXT NOT NULL,
    params TEXT NOT NULL,
    schedule_type TEXT NOT NULL,
    schedule_expr TEXT NOT NULL,
    time_zone TEXT NOT NULL DEFAULT 'UTC',
    misfire_policy TEXT NOT NULL DEFAULT 'fire-once-now',
    routing TEXT NOT NULL DEFAULT 'round-robin',
    block_strategy TEXT NOT NULL DEFAULT 'serial',
    concurrency_limit INTEGER NOT NULL DEFAULT 1,
    timeout_ms INTEGER NOT NULL DEFAULT 0,
    retry_max INTEGER NOT NULL DEFAULT 0,
    retry_backoff_ms INTEGER NOT NULL DEFAULT 1000,
    shard_total INTEGER NOT NULL DEFAULT 1,
    at_least_once INTEGER NOT NULL DEFAULT 0,
    enabled INTEGER NOT NULL DEFAULT 1,
    next_fire_time INTEGER NULL,
    last_fire_time INTEGER NULL,
    version INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    UNIQUE (app, name)
);
CREATE INDEX IF NOT EXISTS idx_job_due ON job (enabled, next_fire_time);

CREATE TABLE IF NOT EXISTS job_fire (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id INTEGER NOT NULL,
    scheduled_time INTEGER NOT NULL,
    kind TEXT NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 0,
    shard_index INTEGER NOT NULL DEFAULT 0,
    shard_total INTEGER NOT NULL DEFAULT 1,
    epoch INTEGER NOT NULL,
    assigned_node TEXT NULL,
    executor_address TEXT NULL,
    status TEXT NOT NULL,
    due_at INTEGER NOT NULL,
    followup INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    dispatched_at INTEGER NULL,
    started_at INTEGER NULL,
    finished_at INTEGER NULL,
    result_code INTEGER NULL,
    result_message TEXT NULL,
    UNIQUE (job_id, scheduled_time, kind, attempt, shard_index)
);
CREATE INDEX IF NOT EXISTS idx_fire_node ON job_fire (assigned_node, status, scheduled_time);
CREATE INDEX IF NOT EXISTS idx_fire_job ON job_fire (job_id, scheduled_time);
CREATE INDEX IF NOT EXISTS idx_fire_status ON job_fire (status, scheduled_time);
CREATE INDEX IF NOT EXISTS idx_fire_followup ON job_fire (followup, id);

CREATE TABLE IF NOT EXISTS api_token (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    role TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    last_used_at INTEGER NULL,
    revoked_at INTEGER NULL
);
