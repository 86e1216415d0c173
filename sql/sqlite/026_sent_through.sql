-- trigger_node.sent_through: see sql/mysql/026_sent_through.sql.

ALTER TABLE trigger_node ADD COLUMN sent_through INTEGER;
