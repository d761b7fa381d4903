-- Several `lifeline serve` replicas on one database (PostgreSQL) share the unattended work.
--
-- `replicas`: membership. Each replica upserts its row every few seconds; a row whose `expires_at` has passed
-- is a dead (or paused) replica, and its share of the sweeps and consoles moves to the others.
CREATE TABLE replicas (
    id          TEXT PRIMARY KEY NOT NULL,
    started_at  BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    info_json   TEXT NOT NULL
);

-- `replica_work`: one row per unit of work owned by one replica at a time: a scheduled backup slot
-- (`slot:JOB@SLOT_MS`, claimed once and marked done once, so every slot runs exactly once), an always-on
-- console logger (`console:NAME`, never done) or a runbook run (`run:ID`). Claimed by an atomic upsert that
-- succeeds only when the row is absent or expired and not done; `fence` grows with every new holder, and
-- renewals and the done mark name it, so a replica that was paused past its expiry cannot finish work it lost.
CREATE TABLE replica_work (
    key         TEXT PRIMARY KEY NOT NULL,
    holder      TEXT NOT NULL,
    fence       BIGINT NOT NULL,
    acquired_at BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    done_at     BIGINT,
    outcome     TEXT
);
CREATE INDEX replica_work_holder ON replica_work (holder);
