-- BMC credentials Lifeline rotates (`lifeline bmc rotate`), one row per generation, the secret sealed with
-- the seal key (AES-256-GCM, hex of nonce || ciphertext; never plaintext). A rotation writes its new secret
-- as `pending` BEFORE touching the BMC and keeps the `active` one until a login proves which of the two
-- the BMC holds: then the proven one is `active`, the other `retired` (superseded) or `failed` (never set).
CREATE TABLE bmc_credentials (
    id          BIGSERIAL PRIMARY KEY,
    name        TEXT NOT NULL,
    device      TEXT NOT NULL,
    username    TEXT NOT NULL,
    state       TEXT NOT NULL,
    sealed      TEXT NOT NULL,
    request_id  TEXT,
    note        TEXT,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE INDEX bmc_credentials_lookup ON bmc_credentials (name, device, state);

-- Events that may arrive twice (a Redfish push and the same record in the next SEL poll, or a redelivery)
-- carry a key; one row per (device, key). Events without a key are never deduplicated.
ALTER TABLE events ADD COLUMN dedup_key TEXT;
CREATE UNIQUE INDEX events_dedup ON events (device, dedup_key);
