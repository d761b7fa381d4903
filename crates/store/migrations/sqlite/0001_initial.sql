-- Devices synced from the inventory (the inventory file is the source of truth; this is its shadow so that
-- observations, events and audit rows can refer to devices and survive a device's removal).
CREATE TABLE devices (
    name        TEXT PRIMARY KEY NOT NULL,
    role        TEXT NOT NULL,
    site        TEXT NOT NULL,
    rack        TEXT NOT NULL,
    fabric      TEXT,
    platform    TEXT,
    bmc_address TEXT,
    bmc_protocol TEXT,
    mgmt_address TEXT,
    spec_json   TEXT NOT NULL,
    synced_at   BIGINT NOT NULL,
    removed_at  BIGINT
);

-- What Lifeline saw: power state, health, sensor readings, verification verdicts.
CREATE TABLE observations (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    device      TEXT NOT NULL,
    kind        TEXT NOT NULL,
    observed_at BIGINT NOT NULL,
    value_json  TEXT NOT NULL
);
CREATE INDEX observations_device_kind ON observations (device, kind, observed_at);

-- Things that happened: BMC SEL entries, faults, recoveries.
CREATE TABLE events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    device      TEXT,
    at          BIGINT NOT NULL,
    source      TEXT NOT NULL,
    severity    TEXT NOT NULL,
    message     TEXT NOT NULL,
    data_json   TEXT NOT NULL
);
CREATE INDEX events_device_at ON events (device, at);

-- Every action Lifeline takes or refuses, who asked, and how it ended. Rows are only ever inserted.
CREATE TABLE audit_log (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    at          BIGINT NOT NULL,
    actor       TEXT NOT NULL,
    action      TEXT NOT NULL,
    target      TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    detail_json TEXT NOT NULL,
    request_id  TEXT
);
CREATE INDEX audit_log_target_at ON audit_log (target, at);
