-- Runbook runs: one row per run of a runbook on one target. The runbook's text is kept with the run so that
-- a resumed run follows the definition it started with, even if the file changed since.
CREATE TABLE runbook_runs (
    id            TEXT PRIMARY KEY NOT NULL,
    runbook       TEXT NOT NULL,
    target        TEXT NOT NULL,
    rack          TEXT,
    role          TEXT,
    actor         TEXT NOT NULL,
    vars_json     TEXT NOT NULL,
    definition    TEXT NOT NULL,
    digest        TEXT NOT NULL,
    -- running, waiting-approval, succeeded, failed, escalated, aborted, refused
    state         TEXT NOT NULL,
    -- the index of the step to run next (or the one waiting for approval)
    next_step     BIGINT NOT NULL,
    reason        TEXT,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    ended_at      BIGINT
);
CREATE INDEX runbook_runs_target ON runbook_runs (target, state);
CREATE INDEX runbook_runs_state ON runbook_runs (state);

-- The journal: append-only rows written before (intent) and after (outcome) every step, plus the
-- executor's decisions (resume, approval wait, escalation). Evidence is kept with its digest.
CREATE TABLE runbook_journal (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id        TEXT NOT NULL,
    step_index    BIGINT NOT NULL,
    step          TEXT NOT NULL,
    attempt       BIGINT NOT NULL,
    -- intent, outcome, decision, run
    phase         TEXT NOT NULL,
    state         TEXT NOT NULL,
    at            BIGINT NOT NULL,
    request_id    TEXT,
    detail_json   TEXT NOT NULL,
    evidence_json TEXT NOT NULL
);
CREATE INDEX runbook_journal_run ON runbook_journal (run_id, id);

-- Approvals of steps marked `approve = "required"` (and of steps whose outcome could not be known).
CREATE TABLE runbook_approvals (
    run_id        TEXT NOT NULL,
    step_index    BIGINT NOT NULL,
    attempt       BIGINT NOT NULL,
    approver      TEXT NOT NULL,
    -- run (do the step), skip (the operator says it is done)
    decision      TEXT NOT NULL,
    at            BIGINT NOT NULL,
    PRIMARY KEY (run_id, step_index, attempt)
);
