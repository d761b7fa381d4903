-- Booleans are BIGINT 0/1: the portable form across SQLite and PostgreSQL through sqlx's Any driver.
-- Whether a sealed raw copy (with secrets) of a config version was kept.
ALTER TABLE config_versions ADD COLUMN raw_sealed BIGINT NOT NULL DEFAULT 0;

-- Console log files (the bytes live under the data directory; this is their index).
CREATE TABLE console_logs (
    console     TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    path        TEXT NOT NULL,
    first_ms    BIGINT NOT NULL,
    last_ms     BIGINT,
    bytes       BIGINT NOT NULL,
    closed      BIGINT NOT NULL,
    removed     BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (console, seq)
);
