-- alert_rule.managed_by; see sql/mysql/019_alert_rule_managed_by.sql.

ALTER TABLE alert_rule ADD COLUMN managed_by VARCHAR(191) NULL;
