-- Probation and lemons (docs/faults.md). A node Lifeline re-admits is watched for a while: a fault or a
-- failing check within the window is a recurrence, which re-drains it and counts against it; a node whose
-- recurrences pass a threshold is a lemon and is not re-admitted again without a human's word.

-- One row per node re-admitted by Lifeline: its newest probation.
CREATE TABLE probation (
    device        TEXT PRIMARY KEY NOT NULL,
    readmitted_at BIGINT NOT NULL,
    until_at      BIGINT NOT NULL,
    -- The report that justified the re-admission.
    report_digest TEXT,
    -- `on` (watched), `passed` (the window ended without a recurrence), `recurred`.
    state         TEXT NOT NULL,
    checks        BIGINT NOT NULL,
    last_check_at BIGINT
);

-- Every recurrence, kept as the node's history (the score is read from it, never stored apart).
CREATE TABLE recurrences (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    device        TEXT NOT NULL,
    at            BIGINT NOT NULL,
    -- What recurred: a fault kind (`rail-down`, `console-kernel-panic`, …) or `probation-check`.
    cause         TEXT NOT NULL,
    fault_id      BIGINT,
    -- The re-admission it followed.
    readmitted_at BIGINT NOT NULL,
    detail_json   TEXT NOT NULL
);
CREATE INDEX recurrences_device ON recurrences (device, at);

-- A human's word that a lemon may be re-admitted once (who, why); used by the next re-admission.
CREATE TABLE lemon_releases (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    device        TEXT NOT NULL,
    released_by   TEXT NOT NULL,
    reason        TEXT NOT NULL,
    at            BIGINT NOT NULL,
    used_at       BIGINT
);
CREATE INDEX lemon_releases_device ON lemon_releases (device, used_at);
