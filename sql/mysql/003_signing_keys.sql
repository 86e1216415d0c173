-- Per-app signing secrets for the calls nodes make to executors (docs/protocol.md "Security").
-- At most two rows per app: the key nodes sign with and, during a rotation, the next one
-- (active_from_ms in the future) or the previous one (still accepted by executors).
-- `secret` is stored as is: nodes need it to compute HMACs (a hash would not do), so whoever
-- reads this table can sign calls to that app's executors (docs/protocol.md "Secrets at rest").
-- Re-runnable: MySQL DDL commits implicitly.

CREATE TABLE IF NOT EXISTS signing_key (
    app VARCHAR(128) NOT NULL,
    generation BIGINT NOT NULL,
    key_id VARCHAR(64) NOT NULL,
    secret VARCHAR(128) NOT NULL,
    active_from_ms BIGINT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    PRIMARY KEY (app, generation),
    UNIQUE KEY uk_signing_key_id (key_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
