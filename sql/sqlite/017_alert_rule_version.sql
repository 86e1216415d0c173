-- alert_rule.version and test deliveries; see sql/mysql/017_alert_rule_version.sql.

ALTER TABLE alert_rule ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
