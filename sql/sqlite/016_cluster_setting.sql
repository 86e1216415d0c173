-- cluster_setting; see sql/mysql/016_cluster_setting.sql.

CREATE TABLE IF NOT EXISTS cluster_setting (
    name VARCHAR(64) NOT NULL PRIMARY KEY,
    value VARCHAR(255) NOT NULL,
    updated_at BIGINT NOT NULL
);

-- held_since_us; see sql/mysql/016_cluster_setting.sql.

ALTER TABLE scheduler_lock ADD COLUMN held_since_us INTEGER NOT NULL DEFAULT 0;
