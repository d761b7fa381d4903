-- Each node's BIOS drift from the golden profile of its role, as the scheduled read last found it: the API
-- and the web console's fleet view show it without asking every BMC on each page load.
CREATE TABLE bios_drift (
    device  TEXT PRIMARY KEY,
    role    TEXT,
    -- How many attributes the profile names for this node.
    checked BIGINT NOT NULL,
    -- The attributes not as the profile wants them: a JSON array of {attribute, want, current, pending}.
    drift   TEXT NOT NULL,
    -- Why the read failed (then `drift` is the previous read's, or `[]`).
    error   TEXT,
    read_at BIGINT NOT NULL
);
