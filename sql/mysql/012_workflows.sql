-- Workflows (docs/workflows.md; store::WorkflowRepository).
-- workflow: a named DAG of steps with its own schedule (the job vocabulary: schedule_type,
--   schedule_expr, time_zone, misfire_policy), max_concurrent_runs (overlap policy, 1..100),
--   run_timeout_ms (0 = none), paused, next_fire_time (NULL while paused or without a next time)
--   and version (optimistic concurrency, + 1 on every edit, as job.version).
-- workflow_step: a step is an existing job (job_id); a job is a step of at most one workflow
--   (uk_workflow_step_job: a step's fires are keyed by the job, docs/workflows.md "Fire keys").
--   ordinal keeps the order the definition gave.
-- workflow_edge: parent -> child with edge_condition on-success | on-failure | always
--   (`condition` is a reserved word in MySQL).
-- workflow_run: one run per (workflow, scheduled time), created once across failover
--   (uk_workflow_run_once); definition is the JSON of the steps and edges the run follows
--   (workflow_version's), so an edit applies to later runs only; generation counts re-runs,
--   from_step names the step the last re-run started from.
-- job_fire.workflow_run_id / workflow_step: the run and step a fire belongs to (NULL for a
--   fire of no workflow); the existing fire inserts name their columns and leave these NULL.
-- Re-runnable: tables IF NOT EXISTS, columns and the index only when missing.

CREATE TABLE IF NOT EXISTS workflow (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    name VARCHAR(191) NOT NULL,
    description VARCHAR(1024) NOT NULL DEFAULT '',
    schedule_type VARCHAR(16) NOT NULL,
    schedule_expr VARCHAR(255) NOT NULL,
    time_zone VARCHAR(64) NOT NULL DEFAULT 'UTC',
    misfire_policy VARCHAR(16) NOT NULL DEFAULT 'fire-once-now',
    max_concurrent_runs INT NOT NULL DEFAULT 1,
    run_timeout_ms BIGINT NOT NULL DEFAULT 0,
    paused TINYINT NOT NULL DEFAULT 0,
    next_fire_time BIGINT NULL,
    version BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE KEY uk_workflow_name (name),
    KEY idx_workflow_due (next_fire_time)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS workflow_step (
    workflow_id BIGINT NOT NULL,
    name VARCHAR(64) NOT NULL,
    job_id BIGINT NOT NULL,
    ordinal INT NOT NULL,
    PRIMARY KEY (workflow_id, name),
    UNIQUE KEY uk_workflow_step_job (job_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS workflow_edge (
    workflow_id BIGINT NOT NULL,
    parent VARCHAR(64) NOT NULL,
    child VARCHAR(64) NOT NULL,
    edge_condition VARCHAR(16) NOT NULL,
    ordinal INT NOT NULL,
    PRIMARY KEY (workflow_id, parent, child)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS workflow_run (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    workflow_id BIGINT NOT NULL,
    scheduled_time BIGINT NOT NULL,
    kind VARCHAR(16) NOT NULL,
    status VARCHAR(16) NOT NULL,
    reason VARCHAR(512) NULL,
    params TEXT NULL,
    workflow_version BIGINT NOT NULL,
    definition MEDIUMTEXT NOT NULL,
    generation INT NOT NULL DEFAULT 0,
    from_step VARCHAR(64) NULL,
    created_by VARCHAR(191) NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    started_at BIGINT NULL,
    ended_at BIGINT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE KEY uk_workflow_run_once (workflow_id, scheduled_time),
    KEY idx_workflow_run_status (status, id),
    KEY idx_workflow_run_workflow (workflow_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE job_fire ADD COLUMN workflow_run_id BIGINT NULL', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'job_fire' AND column_name = 'workflow_run_id');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE job_fire ADD COLUMN workflow_step VARCHAR(64) NULL', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'job_fire' AND column_name = 'workflow_step');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'CREATE INDEX idx_fire_workflow_run ON job_fire (workflow_run_id)', 'DO 0') FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = 'job_fire' AND index_name = 'idx_fire_workflow_run');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;
