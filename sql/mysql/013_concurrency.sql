-- Cluster-wide concurrency (docs/architecture/concurrency.md; store::FireClaims::Admit).
-- concurrency_slot: the seats of a limit. scope names the limit ("job:<id>" for a job's
--   concurrency_limit); slot 0 .. limit-1. A seat is taken by the fire in fire_id when the slave
--   claims it, and free again once that fire is final, missing, or NULL: nothing clears it on the
--   fire's end, the next claim reads the holder's status. taken_at: the claim time (epoch ms).
--   Claims write the seat they take, so two claims of one seat conflict (a row lock on one
--   server, a certification failure across Galera nodes) and only one commits.
-- Re-runnable: the table IF NOT EXISTS.

CREATE TABLE IF NOT EXISTS concurrency_slot (
    scope VARCHAR(191) NOT NULL,
    slot INT NOT NULL,
    fire_id BIGINT NULL,
    taken_at BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (scope, slot)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
