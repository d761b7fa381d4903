-- BMC sessions Lifeline keeps open between requests (Redfish session tokens), written when opened and
-- deleted when closed, so a process that dies (kill -9, a crash) leaves no session on the BMC for good: on
-- start each process reclaims (reuses) or deletes the sessions its dead predecessors left. A BMC has few
-- session slots (an iDRAC 8); one leaked per crash locks Lifeline out after a few crashes.
CREATE TABLE bmc_sessions (
    bmc         TEXT NOT NULL,
    -- The session resource's path (`@odata.id`, where DELETE goes).
    session_uri TEXT NOT NULL,
    -- The X-Auth-Token, sealed by the engine (a session token is a credential while it lives).
    token       TEXT NOT NULL,
    -- The holder name of the process that opened it (`ACTOR (pid PID on HOST) #TAG`).
    owner       TEXT NOT NULL,
    opened_at   BIGINT NOT NULL,
    PRIMARY KEY (bmc, session_uri)
);
CREATE INDEX bmc_sessions_owner ON bmc_sessions (owner);

-- One row rewritten by `/readyz`: a store that answers reads but refuses writes (a full disk) cannot record
-- actions, and readiness must say so.
CREATE TABLE write_probe (
    id  BIGINT PRIMARY KEY NOT NULL,
    at  BIGINT NOT NULL
);
