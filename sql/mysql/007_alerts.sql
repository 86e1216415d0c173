-- Alerts (docs/architecture/alerts.md; trigger::Alerter, store::AlertRepository).
-- alert_rule: a webhook to call when a fire of a job (job_id) or of any job (job_id NULL) ends
--   with one of `events` (comma-separated: failed, timeout, lost, misfire), once the job has
--   `consecutive_failures` failed/timeout/lost fires in a row (1 = every one). `secret` keys the
--   HMAC-SHA256 signature of each delivery; the API never returns it. no_success_within_ms
--   (NULL = none): the did-not-run SLO, event no_success, raised for an enabled job whose last
--   succeeded fire finished (or, without one, which was created) longer ago than that.
-- alert_delivery: one webhook call to make, created by the master in the fenced transaction
--   that evaluated the fire; UNIQUE (rule_id, event, job_id, fire_id) makes that creation
--   exactly-once across failovers. For no_success, fire_id is the episode key: the job's latest
--   succeeded fire id, 0 when it has none (never NULL: a NULL would not collide in the index),
--   so one breach episode gets one delivery and the next success starts a new episode. Delivered at least once (the id is sent as X-Sched-Delivery for dedupe);
--   status pending -> delivered | failed, with attempts, next_attempt_at and the last error.
-- job.pause_after_failures: the master pauses the job (enabled 0, version + 1) once it has this
--   many failed/timeout/lost runs in a row, and raises the alert event `paused`; 0 = never.
-- job_fire.idx_fire_finished: the alerter's cursor over ended fires (finished_at, id).
-- Re-runnable: tables IF NOT EXISTS, the index only when missing (MySQL 8 has no CREATE INDEX
-- IF NOT EXISTS).

CREATE TABLE IF NOT EXISTS alert_rule (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    name VARCHAR(191) NOT NULL,
    job_id BIGINT NULL,
    events VARCHAR(64) NOT NULL,
    consecutive_failures INT NOT NULL DEFAULT 1,
    no_success_within_ms BIGINT NULL,
    url VARCHAR(2048) NOT NULL,
    secret VARCHAR(255) NOT NULL,
    enabled INT NOT NULL DEFAULT 1,
    created_at BIGINT NOT NULL,
    KEY idx_alert_rule_job (job_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS alert_delivery (
    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    rule_id BIGINT NOT NULL,
    job_id BIGINT NOT NULL,
    fire_id BIGINT NOT NULL,
    event VARCHAR(16) NOT NULL,
    payload TEXT NOT NULL,
    status VARCHAR(16) NOT NULL,
    attempts INT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    last_error VARCHAR(512) NULL,
    created_at BIGINT NOT NULL,
    delivered_at BIGINT NULL,
    UNIQUE KEY uk_alert_delivery (rule_id, event, job_id, fire_id),
    KEY idx_alert_delivery_due (status, next_attempt_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE job ADD COLUMN pause_after_failures INT NOT NULL DEFAULT 0', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'job' AND column_name = 'pause_after_failures');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'CREATE INDEX idx_fire_finished ON job_fire (finished_at, id)', 'DO 0') FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = 'job_fire' AND index_name = 'idx_fire_finished');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;
