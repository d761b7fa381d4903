-- Trust-on-first-use pins: TLS leaf certificates of BMCs, SSH host keys of switches.
CREATE TABLE pins (
    kind        TEXT NOT NULL,
    subject     TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    pinned_at   BIGINT NOT NULL,
    PRIMARY KEY (kind, subject)
);

-- Switch configuration versions; the blobs themselves live content-addressed under the data directory.
CREATE TABLE config_versions (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    device          TEXT NOT NULL,
    version         BIGINT NOT NULL,
    blob_sha256     TEXT NOT NULL,
    normalized_sha256 TEXT NOT NULL,
    size            BIGINT NOT NULL,
    platform        TEXT NOT NULL,
    fetched_at      BIGINT NOT NULL,
    UNIQUE (device, version)
);

-- Which protocol `auto` settled on for a BMC, so the next call does not probe again.
CREATE TABLE bmc_protocols (
    device      TEXT PRIMARY KEY NOT NULL,
    protocol    TEXT NOT NULL,
    decided_at  BIGINT NOT NULL
);
