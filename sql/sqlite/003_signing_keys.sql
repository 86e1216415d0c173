-- Per-app signing secrets for the calls nodes make to executors (docs/protocol.md "Security");
-- see sql/mysql/003_signing_keys.sql.

CREATE TABLE IF NOT EXISTS signing_key (
    app TEXT NOT NULL,
    generation INTEGER NOT NULL,
    key_id TEXT NOT NULL UNIQUE,
    secret TEXT NOT NULL,
    active_from_ms INTEGER NOT NULL,
    created_at_ms INTEGER NOT NULL,
    PRIMARY KEY (app, generation)
);
