-- `lifeline serve`: local users (argon2id hashes), browser sessions, API tokens, fault records and the
-- scheduler's memory of which slot ran last. Secrets are never stored: sessions and tokens by SHA-256.
CREATE TABLE users (
    name          TEXT PRIMARY KEY NOT NULL,
    role          TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    disabled      BIGINT NOT NULL,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL
);

CREATE TABLE web_sessions (
    id_hash     TEXT PRIMARY KEY NOT NULL,
    username    TEXT NOT NULL,
    csrf        TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL
);
CREATE INDEX web_sessions_user ON web_sessions (username);

CREATE TABLE api_tokens (
    id          TEXT PRIMARY KEY NOT NULL,
    token_hash  TEXT NOT NULL,
    username    TEXT NOT NULL,
    role        TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT,
    revoked_at  BIGINT
);

-- One open record per (kind, device) at a time; a repeat bumps `count` instead of adding a row.
CREATE TABLE faults (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    kind        TEXT NOT NULL,
    device      TEXT NOT NULL,
    severity    TEXT NOT NULL,
    state       TEXT NOT NULL,
    message     TEXT NOT NULL,
    detail_json TEXT NOT NULL,
    count       BIGINT NOT NULL,
    opened_at   BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    acked_by    TEXT,
    acked_at    BIGINT
);
CREATE INDEX faults_state ON faults (state, kind, device);

-- The newest schedule slot (Unix ms) each scheduled job has run, so a restart runs a missed slot once.
CREATE TABLE schedule_state (
    job         TEXT PRIMARY KEY NOT NULL,
    last_slot   BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
