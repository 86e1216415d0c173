-- Concurrency keys (docs/architecture/concurrency.md "Concurrency keys"; store::ConcurrencyKeyRepository).
-- concurrency_key: a limit shared by every job that names it (job.concurrency_key).
--   max_running: at most this many fires of those jobs dispatching or running at once, cluster-wide
--     (seats: concurrency_slot scope "key:<name>").
--   rate_starts, rate_window_ms: at most rate_starts starts of those jobs' fires per rate_window_ms
--     (0, 0: no rate limit; the last starts' times: concurrency_slot scope "rate:<name>").
-- job.concurrency_key: the key's name; '' = none.
-- Re-runnable like 008.

CREATE TABLE IF NOT EXISTS concurrency_key (
    name VARCHAR(64) NOT NULL PRIMARY KEY,
    max_running INT NOT NULL,
    rate_starts INT NOT NULL DEFAULT 0,
    rate_window_ms BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

SET @sched_ddl = (SELECT IF(COUNT(*) = 0, 'ALTER TABLE job ADD COLUMN concurrency_key VARCHAR(64) NOT NULL DEFAULT ''''', 'DO 0') FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'job' AND column_name = 'concurrency_key');
PREPARE sched_stmt FROM @sched_ddl;
EXECUTE sched_stmt;
DEALLOCATE PREPARE sched_stmt;
