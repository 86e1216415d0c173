-- fence_writes; see sql/mysql/015_fence_writes.sql (only fenced transactions on Galera bump it).

ALTER TABLE scheduler_lock ADD COLUMN fence_writes INTEGER NOT NULL DEFAULT 0;
