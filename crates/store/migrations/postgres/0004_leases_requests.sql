-- Cross-process exclusion: one action per target (BMC, switch, node) at a time, whoever asks (two CLI
-- processes, a CLI and a server, two replicas). A lease is taken by an atomic upsert that only succeeds when
-- the row is absent or expired; `fence` grows with every new holder so a holder that lost its lease cannot
-- renew or release someone else's.
CREATE TABLE leases (
    target      TEXT PRIMARY KEY NOT NULL,
    holder      TEXT NOT NULL,
    request_id  TEXT NOT NULL,
    action      TEXT NOT NULL,
    acquired_at BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    fence       BIGINT NOT NULL
);

-- Idempotency: one row per request id; a replayed request returns the first outcome instead of acting again.
CREATE TABLE requests (
    request_id  TEXT PRIMARY KEY NOT NULL,
    target      TEXT NOT NULL,
    action      TEXT NOT NULL,
    actor       TEXT NOT NULL,
    state       TEXT NOT NULL,
    outcome_json TEXT,
    started_at  BIGINT NOT NULL,
    finished_at BIGINT
);
CREATE INDEX requests_target_finished ON requests (target, finished_at);
