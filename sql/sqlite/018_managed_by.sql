-- managed_by; see sql/mysql/018_managed_by.sql.

ALTER TABLE job ADD COLUMN managed_by VARCHAR(191) NULL;
ALTER TABLE workflow ADD COLUMN managed_by VARCHAR(191) NULL;
