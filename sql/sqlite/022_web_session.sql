-- web_session: browser sessions; see sql/mysql/022_web_session.sql.

CREATE TABLE IF NOT EXISTS web_session (
    id_hash TEXT NOT NULL PRIMARY KEY,
    subject TEXT NOT NULL,
    issuer TEXT NOT NULL,
    name TEXT NOT NULL,
    role TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    last_seen_ms INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_web_session_subject ON web_session (subject, created_ms);
CREATE INDEX IF NOT EXISTS idx_web_session_expires ON web_session (expires_ms);
CREATE INDEX IF NOT EXISTS idx_web_session_seen ON web_session (last_seen_ms);
