-- Cluster-wide concurrency; see sql/mysql/013_concurrency.sql.

CREATE TABLE IF NOT EXISTS concurrency_slot (
    scope TEXT NOT NULL,
    slot INTEGER NOT NULL,
    fire_id INTEGER NULL,
    taken_at INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (scope, slot)
);
