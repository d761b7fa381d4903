//! Errors of the BMC layer. One enum, because the CLI and the sweep must tell an operator *which* BMC failed,
//! over *which* protocol, and whether an action may have happened; causes stay in `#[source]`.

use std::time::Duration;

use lifeline_types::BmcProtocol;

/// Boxed cause from a caller-supplied component (audit sink, protocol memory).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

#[derive(Debug, thiserror::Error)]
pub enum BmcError {
    #[error("{bmc}: IPMI request failed")]
    Ipmi {
        bmc: String,
        #[source]
        source: lifeline_ipmi::Error,
    },
    #[error("{bmc}: Redfish request failed")]
    Redfish {
        bmc: String,
        #[source]
        source: lifeline_redfish::RedfishError,
    },
    #[error("{bmc}: cannot resolve `{address}`")]
    Resolve {
        bmc: String,
        address: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{bmc}: neither Redfish (TCP {redfish_port}) nor IPMI (UDP {ipmi_port}) answered the probe")]
    NoProtocol {
        bmc: String,
        redfish_port: u16,
        ipmi_port: u16,
        #[source]
        source: Box<BmcError>,
    },
    #[error("{bmc}: {what} timed out after {after:?}")]
    Timeout { bmc: String, what: &'static str, after: Duration },
    #[error("{bmc}: audit log unavailable; refusing to {action} without an audit record")]
    AuditUnavailable {
        bmc: String,
        action: String,
        #[source]
        source: BoxError,
    },
    #[error("{bmc}: protocol memory")]
    ProtocolMemory {
        bmc: String,
        #[source]
        source: BoxError,
    },
    #[error("{bmc}: {what} is not available over {protocol}")]
    Unsupported { bmc: String, protocol: BmcProtocol, what: &'static str },
    #[error("{bmc}: the BMC lists no computer system{}", wanted.as_deref().map(|w| format!(" named `{w}`")).unwrap_or_default())]
    NoSystem { bmc: String, wanted: Option<String> },
    #[error("{bmc}: power action {request_id} is already running")]
    InFlight { bmc: String, request_id: String },
    /// The BMC answered, but does not offer what was asked (a boot target not in its AllowableValues, no
    /// `#Manager.Reset` action, a reset type it does not list).
    #[error("{bmc}: {what}")]
    NotOffered { bmc: String, what: String },
    #[error("{bmc}: no account named `{user}` on the BMC")]
    NoAccount { bmc: String, user: String },
    /// The BMC refused a new IPMI session for want of a free slot, after the sessions dead processes of
    /// ours left there (if any) were closed.
    #[error(
        "{bmc}: the BMC is at its IPMI session limit (every session slot it has is open): it refused a new session; {}",
        ipmi_freed_words(stale)
    )]
    IpmiSessionLimit {
        bmc: String,
        /// What closing the stale sessions of ours recorded there did.
        stale: crate::StaleIpmi,
        #[source]
        source: lifeline_ipmi::Error,
    },
}

fn ipmi_freed_words(s: &crate::StaleIpmi) -> String {
    let then = "close sessions other tools hold there, or wait for the BMC's session timeout";
    let tried = s.freed() + s.refused + s.failed;
    match (tried, s.freed()) {
        (0, _) => format!("Lifeline had no stale session of its own recorded there; {then}"),
        (n, 0) => format!(
            "{n} stale session(s) of Lifeline's own are recorded there but none could be closed (no free slot for \
             the session that closes them, or the BMC refused); {then}"
        ),
        (_, f) => {
            format!("{f} stale session(s) of Lifeline's own were closed there and it still refused; {then}")
        }
    }
}

impl BmcError {
    pub fn bmc(&self) -> &str {
        use BmcError::*;
        match self {
            Ipmi { bmc, .. }
            | Redfish { bmc, .. }
            | Resolve { bmc, .. }
            | NoProtocol { bmc, .. }
            | Timeout { bmc, .. }
            | AuditUnavailable { bmc, .. }
            | ProtocolMemory { bmc, .. }
            | Unsupported { bmc, .. }
            | NoSystem { bmc, .. }
            | NotOffered { bmc, .. }
            | InFlight { bmc, .. }
            | NoAccount { bmc, .. }
            | IpmiSessionLimit { bmc, .. } => bmc,
        }
    }

    /// Whether the BMC refused a new IPMI session for want of a free slot (RMCP+ status 0x01 or 0x0B).
    pub(crate) fn is_out_of_sessions(&self) -> bool {
        match self {
            BmcError::Ipmi { source, .. } => source.is_session_limit(),
            BmcError::IpmiSessionLimit { .. } => true,
            BmcError::NoProtocol { source, .. } => source.is_out_of_sessions(),
            _ => false,
        }
    }

    /// Whether the failure says the BMC is not there at all (so `auto` may try the other protocol), as
    /// opposed to a BMC that answered and refused (bad password, changed certificate).
    pub(crate) fn is_unreachable(&self) -> bool {
        use lifeline_redfish::RedfishError as R;
        match self {
            BmcError::Ipmi { source, .. } => {
                matches!(source, lifeline_ipmi::Error::Timeout { .. } | lifeline_ipmi::Error::Io { .. })
            }
            BmcError::Redfish { source, .. } => match source {
                R::Http { .. } | R::Timeout { .. } | R::Json { .. } => true,
                // Something answers HTTP but it is not a Redfish service root.
                R::Status { status, .. } => matches!(status, 404 | 405 | 501),
                _ => false,
            },
            BmcError::Timeout { .. } | BmcError::Resolve { .. } => true,
            _ => false,
        }
    }
}

/// `error: cause: cause…` on one line, for tables and JSON rows (the one definition, in lifeline-types).
pub use lifeline_types::error_chain;
