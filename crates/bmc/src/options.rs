//! Knobs of a [`crate::BmcPool`]: limits and timeouts in one place, so that every network call has a bound
//! an operator can read and change.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use lifeline_ipmi::client::Timing;
use lifeline_redfish::{ClientOptions, MemoryPinStore, PinStore};

use crate::kept::KeptSessions;

/// How Redfish certificates are trusted.
#[derive(Clone)]
pub enum TlsPolicy {
    /// Trust on first use, pins kept in `store` (the store crate implements [`PinStore`]); a target's
    /// inventory pin wins.
    Pin(Arc<dyn PinStore>),
    /// Verify against CA certificates in a PEM file (test peers with their own CA).
    CaFile(PathBuf),
}

impl std::fmt::Debug for TlsPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TlsPolicy::Pin(_) => f.write_str("Pin(..)"),
            TlsPolicy::CaFile(p) => f.debug_tuple("CaFile").field(p).finish(),
        }
    }
}

/// Timing of confirmed power actions.
#[derive(Debug, Clone)]
pub struct PowerOptions {
    /// Longest wait for the requested state after the action was sent.
    pub timeout: Duration,
    /// Interval between power-state reads while confirming.
    pub poll_interval: Duration,
    /// For a power cycle whose off phase is observable (IPMI chassis cycle, Redfish PowerCycle): how long
    /// to watch for the off phase before accepting "acknowledged and on" as the weaker confirmation.
    pub cycle_grace: Duration,
    /// IPMI cycle (power down, then up): time left off between Off confirmed and power up, so that
    /// capacitors drain and the BMC's own power-cycle interval is respected.
    pub cycle_off_time: Duration,
    /// Poll interval while watching for the off phase of a Redfish `PowerCycle`, for the first 3 s after the
    /// request (an off phase can be shorter than `poll_interval`; later ones are long enough for it).
    pub fast_poll_interval: Duration,
    /// When the requested state is On and the host still reads Off this long after the power-up was sent,
    /// send it again (power-up is idempotent; a lossy link may have eaten it).
    pub power_up_retry_after: Duration,
    /// At most this many resends per request.
    pub power_up_retries: u32,
}

impl Default for PowerOptions {
    fn default() -> Self {
        PowerOptions {
            timeout: Duration::from_secs(300),
            poll_interval: Duration::from_millis(250),
            cycle_grace: Duration::from_secs(10),
            cycle_off_time: Duration::from_secs(2),
            fast_poll_interval: Duration::from_millis(20),
            power_up_retry_after: Duration::from_secs(20),
            power_up_retries: 3,
        }
    }
}

#[derive(Debug, Clone)]
pub struct BmcOptions {
    /// BMCs talked to at once across the whole pool (sweeps, audits, power actions).
    pub fanout: usize,
    /// Connections (IPMI sessions, Redfish clients) open at once to one BMC: below every vendor's session
    /// limit (iLO: 4 in our simulator, 8 on some iDRACs), so concurrent callers queue instead of being
    /// refused.
    pub per_bmc_connections: usize,
    /// IPMI retransmission policy (bounds every IPMI request).
    pub ipmi_timing: Timing,
    /// Redfish client options (request, connect and queue timeouts, session limit).
    pub redfish: ClientOptions,
    pub tls: TlsPolicy,
    /// Bound of each probe step of `auto` (Redfish service root, IPMI Get Channel Auth Caps).
    pub probe_timeout: Duration,
    /// Bound of one whole read operation on one BMC (connect + reads + close).
    pub op_timeout: Duration,
    pub power: PowerOptions,
    /// Kept IPMI sessions for sweeps (a long-lived process: the server); `None` (the default, one-shot
    /// commands): every operation logs in and closes. Shared by every pool built from these options.
    pub kept: Option<KeptSessions>,
    /// Where the Redfish sessions of a pool that keeps none (one-shot commands) are written down while
    /// they are open, and where a BMC at its session limit finds the ones dead processes of ours left
    /// (see [`crate::SharedLedger`]); `None`: neither. A pool that keeps sessions uses the kept sessions'
    /// ledger instead (they are written down when kept).
    pub ledger: Option<crate::SharedLedger>,
}

impl Default for BmcOptions {
    fn default() -> Self {
        let redfish = ClientOptions {
            request_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(3),
            queue_timeout: Duration::from_secs(30),
            ..ClientOptions::default()
        };
        BmcOptions {
            fanout: 256,
            per_bmc_connections: 2,
            ipmi_timing: Timing::default(),
            redfish,
            tls: TlsPolicy::Pin(Arc::new(MemoryPinStore::new())),
            probe_timeout: Duration::from_secs(2),
            op_timeout: Duration::from_secs(60),
            power: PowerOptions::default(),
            kept: None,
            ledger: None,
        }
    }
}
