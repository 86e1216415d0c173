-- web_session: browser sessions of people signed in through single sign-on (store/web_session.hpp,
-- docs/architecture/trust-model.md "Single sign-on"), shared by every web process of a cluster so
-- that a restart signs nobody out and no load balancer needs sticky sessions.
--   id_hash       SHA-256 (hex) of the cookie's value; the value itself is stored nowhere
--   subject, issuer  the person's `sub` and the provider's `iss`
--   name          the name audit entries record (email, else name, else preferred_username, else sub)
--   role          the role their groups mapped to at sign-in
--   created_ms, last_seen_ms, expires_ms  sign-in, last use (written at most once a minute per
--                 session) and the absolute end (sign-in + session-absolute), epoch ms
-- Rows are deleted on sign-out, when a sign-in makes room, and once ended (idle or past
-- expires_ms) by the next sign-in.

CREATE TABLE IF NOT EXISTS web_session (
    id_hash CHAR(64) CHARACTER SET ascii NOT NULL PRIMARY KEY,
    subject VARCHAR(255) NOT NULL,
    issuer VARCHAR(512) NOT NULL,
    name VARCHAR(191) NOT NULL,
    role VARCHAR(16) NOT NULL,
    created_ms BIGINT NOT NULL,
    last_seen_ms BIGINT NOT NULL,
    expires_ms BIGINT NOT NULL,
    KEY idx_web_session_subject (subject, created_ms),
    KEY idx_web_session_expires (expires_ms),
    KEY idx_web_session_seen (last_seen_ms)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
