-- Firmware rollouts (`lifeline firmware apply PLAN`): the plan as applied, each wave's state and each BMC's
-- state, written before and after every step, so a rollout killed mid-way (kill -9, a crash, a reboot of
-- the jump host) resumes where it stopped: a BMC whose push was sent is read back (and its task polled)
-- before anything is sent again, and a wave that failed stops every later wave.
CREATE TABLE firmware_rollouts (
    -- The plan's id (a digest of what it would change).
    id          TEXT PRIMARY KEY NOT NULL,
    component   TEXT NOT NULL,
    version     TEXT NOT NULL,
    -- The plan document as JSON text (what was reviewed is what is applied).
    plan        TEXT NOT NULL,
    -- planned | running | done | failed
    state       TEXT NOT NULL,
    actor       TEXT NOT NULL,
    detail      TEXT,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);

CREATE TABLE firmware_waves (
    rollout     TEXT NOT NULL,
    wave        BIGINT NOT NULL,
    -- pending | running | done | failed | skipped
    state       TEXT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (rollout, wave)
);

CREATE TABLE firmware_targets (
    rollout     TEXT NOT NULL,
    target      TEXT NOT NULL,
    wave        BIGINT NOT NULL,
    -- pending | pushed | resetting | done | failed | skipped
    state       TEXT NOT NULL,
    -- The BMC's task monitor once the push was accepted (polled again on resume).
    task        TEXT,
    before_version TEXT,
    after_version  TEXT,
    detail      TEXT,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (rollout, target)
);
