-- job_fire_log: the tail of a fire's log, shipped by the executor with its result and stored in
-- the transaction that applied that result (store::FireLogs, docs/architecture/store.md "Fire logs").
-- One row per fire (a retry's result replaces it). `log` is UTF-8 text of at most 256 KiB
-- (store::FireLogs::kMaxLogBytes); `truncated_bytes` counts the bytes cut from its front, by the
-- executor and by the store together; `stored_at` is the database clock in epoch ms. Rows are
-- deleted with their fires by the retention purge.

CREATE TABLE IF NOT EXISTS job_fire_log (
    fire_id BIGINT NOT NULL PRIMARY KEY,
    log MEDIUMTEXT NOT NULL,
    truncated_bytes BIGINT NOT NULL DEFAULT 0,
    stored_at BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
