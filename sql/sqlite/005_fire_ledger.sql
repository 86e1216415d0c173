-- The fire ledger; see sql/mysql/005_fire_ledger.sql for what the columns mean.

ALTER TABLE job_fire ADD COLUMN reason TEXT NULL;
ALTER TABLE job_fire ADD COLUMN skipped_until INTEGER NULL;
ALTER TABLE job_fire ADD COLUMN skipped_count INTEGER NULL;
