-- job_fire's secondary indexes: one holds `status` instead of two, and the one that repeated the
-- unique key's first columns is gone; see sql/mysql/023_fire_indexes.sql.

CREATE INDEX IF NOT EXISTS idx_fire_state ON job_fire (status, assigned_node, scheduled_time);
CREATE INDEX IF NOT EXISTS idx_fire_time ON job_fire (scheduled_time);
DROP INDEX IF EXISTS idx_fire_node;
DROP INDEX IF EXISTS idx_fire_status;

