-- Initial schema (MySQL 8 / MariaDB 10.6+). See docs/architecture/data-model.md.
-- Times: schedule and heartbeat data in epoch milliseconds (*_ms, or the job/fire *_time
-- columns); lease data in epoch microseconds of the database clock (*_us).
-- Every statement is re-runnable: MySQL DDL commits implicitly, so a migrator that dies
-- half-way must be able to run this file again.

CREATE TABLE IF NOT EXISTS scheduler_lock (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    namespace VARCHAR(191) NOT NULL,
    owner VARCHAR(191) NULL,
    epoch BIGINT NOT NULL DEFAULT 0,
    version BIGINT NOT NULL DEFAULT 0,
    lease_until_us BIGINT NOT NULL DEFAULT 0,
    update_time_us BIGINT NOT NULL DEFAULT 0,
    create_time_us BIGINT NOT NULL DEFAULT 0,
    UNIQUE KEY uk_lock_namespace (namespace)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS trigger_node (
    node_id VARCHAR(191) NOT NULL PRIMARY KEY,
    address VARCHAR(255) NOT NULL,
    capacity INT NOT NULL DEFAULT 0,
    started_at_ms BIGINT NOT NULL,
    last_heartbeat_ms BIGINT NOT NULL,
    state VARCHAR(16) NOT NULL,
    KEY idx_node_heartbeat (last_heartbeat_ms)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS executor_instance (
    app VARCHAR(128) NOT NULL,
    address VARCHAR(255) NOT NULL,
    handlers TEXT NOT NULL,
    capacity INT NOT NULL DEFAULT 0,
    running INT NOT NULL DEFAULT 0,
    last_heartbeat_ms BIGINT NOT NULL,
    registered_at_ms BIGINT NOT NULL,
    PRIMARY KEY (app, address),
    KEY idx_executor_heartbeat (last_heartbeat_ms)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS job (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    name VARCHAR(191) NOT NULL,
    app VARCHAR(128) NOT NULL,
    handler VARCHAR(128) NOT NULL,
    params TEXT NOT NULL,
    schedule_type VARCHAR(16) NOT NULL,
    schedule_expr VARCHAR(255) NOT NULL,
    time_zone VARCHAR(64) NOT NULL DEFAULT 'UTC',
    misfire_policy VARCHAR(16) NOT NULL DEFAULT 'fire-once-now',
    routing VARCHAR(32) NOT NULL DEFAULT 'round-robin',
    block_strategy VARCHAR(16) NOT NULL DEFAULT 'serial',
    concurrency_limit INT NOT NULL DEFAULT 1,
    timeout_ms BIGINT NOT NULL DEFAULT 0,
    retry_max INT NOT NULL DEFAULT 0,
    retry_backoff_ms BIGINT NOT NULL DEFAULT 1000,
    shard_total INT NOT NULL DEFAULT 1,
    at_least_once TINYINT NOT NULL DEFAULT 0,
    enabled TINYINT NOT NULL DEFAULT 1,
    next_fire_time BIGINT NULL,
    last_fire_time BIGINT NULL,
    version BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    description VARCHAR(1024) NOT NULL DEFAULT '',
    UNIQUE KEY uk_job_app_name (app, name),
    KEY idx_job_due (enabled, next_fire_time)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS job_fire (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    job_id BIGINT NOT NULL,
    scheduled_time BIGINT NOT NULL,
    kind VARCHAR(16) NOT NULL,
    attempt INT NOT NULL DEFAULT 0,
    shard_index INT NOT NULL DEFAULT 0,
    shard_total INT NOT NULL DEFAULT 1,
    epoch BIGINT NOT NULL,
    assigned_node VARCHAR(191) NULL,
    executor_address VARCHAR(255) NULL,
    status VARCHAR(16) NOT NULL,
    due_at BIGINT NOT NULL,
    followup TINYINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    dispatched_at BIGINT NULL,
    started_at BIGINT NULL,
    finished_at BIGINT NULL,
    result_code INT NULL,
    result_message TEXT NULL,
    UNIQUE KEY uk_fire_once (job_id, scheduled_time, kind, attempt, shard_index),
    KEY idx_fire_node (assigned_node, status, scheduled_time),
    KEY idx_fire_job (job_id, scheduled_time),
    KEY idx_fire_status (status, scheduled_time),
    KEY idx_fire_followup (followup, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS api_token (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    name VARCHAR(128) NOT NULL,
    token_hash CHAR(64) NOT NULL,
    role VARCHAR(16) NOT NULL,
    created_at BIGINT NOT NULL,
    last_used_at BIGINT NULL,
    revoked_at BIGINT NULL,
    UNIQUE KEY uk_token_hash (token_hash)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
