-- api_token.created_by; see sql/mysql/019_token_created_by.sql.

ALTER TABLE api_token ADD COLUMN created_by VARCHAR(191) NULL;
