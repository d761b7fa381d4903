-- Where a BMC's health sweep read beyond its Redfish root and system (the event log services and the
-- chassis whose status the rollup needed), as JSON, so a new process reads them directly instead of
-- navigating four levels of links on every sweep. Any row may be stale: clients drop it when a path fails
-- and navigate again.
CREATE TABLE bmc_redfish_paths (
    device      TEXT PRIMARY KEY NOT NULL,
    paths       TEXT NOT NULL,
    updated_at  BIGINT NOT NULL
);
