-- trigger_node.sent_through: the latest due time (epoch ms) up to which the node may have sent
-- fires the master planned already claimed for it (status `dispatching`, no claim token). The
-- node raises it before it sends any such fire due later, so a fire of a dead node due after it
-- was never sent and is handed to another node; one due at or before it is judged `lost`
-- (docs/architecture/slave.md "Planned fires"). NULL: a node of a build before this migration;
-- the master plans only `pending` fires for it.

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE trigger_node ADD COLUMN sent_through BIGINT NULL', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'trigger_node' AND column_name = 'sent_through');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;
