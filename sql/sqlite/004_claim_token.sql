-- job_fire.claim_token: the random token of the slave's group claim; see
-- sql/mysql/004_claim_token.sql.

ALTER TABLE job_fire ADD COLUMN claim_token INTEGER NULL;
