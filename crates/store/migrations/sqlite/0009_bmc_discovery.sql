-- What discovery learnt about each BMC, so a new process skips it: the IPMI cipher suite it last accepted
-- (no Get Channel Cipher Suites round trip), its Redfish service root document and system path (no GET of
-- the root or the Systems collection). Any row may be stale: clients drop it on failure and rediscover.
CREATE TABLE bmc_discovery (
    device          TEXT PRIMARY KEY NOT NULL,
    ipmi_suite      BIGINT,
    redfish_url     TEXT,
    redfish_root    TEXT,
    redfish_system  TEXT,
    updated_at      BIGINT NOT NULL
);
