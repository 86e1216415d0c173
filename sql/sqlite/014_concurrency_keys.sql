-- Concurrency keys; see sql/mysql/014_concurrency_keys.sql.

CREATE TABLE IF NOT EXISTS concurrency_key (
    name TEXT NOT NULL PRIMARY KEY,
    max_running INTEGER NOT NULL,
    rate_starts INTEGER NOT NULL DEFAULT 0,
    rate_window_ms INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

ALTER TABLE job ADD COLUMN concurrency_key TEXT NOT NULL DEFAULT '';
