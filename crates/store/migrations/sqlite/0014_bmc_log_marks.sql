-- Per-log high-water marks of BMC event logs: the newest entry a sweep has read from each log of a device,
-- so the next sweep hands the fault rules exactly what is new since (the whole window, not only the newest
-- few entries a sweep shows).
CREATE TABLE bmc_log_marks (
    device   TEXT NOT NULL,
    -- The log's label: where it lives and its id (`Systems/1/IML`, `Managers/1/IEL`; `SEL` over IPMI).
    log      TEXT NOT NULL,
    -- The newest entry read: its id and, when it has one, its time (ms since the epoch).
    entry_id TEXT NOT NULL,
    created  BIGINT,
    read_at  BIGINT NOT NULL,
    PRIMARY KEY (device, log)
);
