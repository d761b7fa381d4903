//! One error enum for the Redfish client, because the caller (the `bmc` crate, the CLI) must tell an
//! operator *which* BMC and *which* URL failed, and whether retrying is safe. Causes stay in `#[source]`.

use std::path::PathBuf;
use std::time::Duration;

use lifeline_types::{Fingerprint, PowerAction};

/// Boxed cause for errors coming from a caller-supplied component (a pin store) or an untyped parser.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

#[derive(Debug, thiserror::Error)]
pub enum RedfishError {
    #[error("{bmc}: invalid URL `{url}`")]
    Url {
        bmc: String,
        url: String,
        #[source]
        source: BoxError,
    },
    #[error("{bmc}: link `{link}` points away from the BMC ({base}); refusing to send credentials there")]
    ForeignLink { bmc: String, base: String, link: String },
    #[error("{bmc}: building the HTTP client")]
    Build {
        bmc: String,
        #[source]
        source: BoxError,
    },
    #[error("{bmc}: {method} {url} failed")]
    Http {
        bmc: String,
        method: &'static str,
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("{bmc}: {method} {url} timed out after {after:?}")]
    Timeout { bmc: String, method: &'static str, url: String, after: Duration },
    #[error("{bmc}: {method} {url} returned HTTP {status}{}", message.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
    Status { bmc: String, method: &'static str, url: String, status: u16, message: Option<String> },
    #[error("{bmc}: {url}: reply is not a JSON document")]
    Json {
        bmc: String,
        url: String,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "{bmc}: TLS certificate changed: pinned {pinned}, presented {presented}; refusing to connect \
         (if the replacement was intended, re-pin with `lifeline bmc trust {bmc}`)"
    )]
    CertificateChanged { bmc: String, pinned: Fingerprint, presented: Fingerprint },
    #[error(
        "{bmc}: the inventory pins {inventory} but the BMC presents {presented}; update the inventory pin"
    )]
    InventoryPinMismatch { bmc: String, inventory: Fingerprint, presented: Fingerprint },
    #[error(
        "{bmc}: the BMC presents {presented}, not the confirmed {expected}; nothing was pinned (look again \
         and confirm what is presented now)"
    )]
    NotConfirmed { bmc: String, expected: Fingerprint, presented: Fingerprint },
    #[error("{bmc}: no TLS certificate was presented by {url}")]
    NoCertificate { bmc: String, url: String },
    #[error("{bmc}: certificate pin store")]
    PinStore {
        bmc: String,
        #[source]
        source: BoxError,
    },
    #[error("{bmc}: reading CA file {}", path.display())]
    CaFile {
        bmc: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{bmc}: CA file {} holds no usable certificate", path.display())]
    CaEmpty { bmc: String, path: PathBuf },
    #[error("{bmc}: login at {url} refused with HTTP {status}")]
    Login { bmc: String, url: String, status: u16 },
    #[error(
        "{bmc}: the BMC is at its session limit{}: it refused a login at {url} with HTTP {status} ({message}); {}",
        limit_words(*listed),
        freed_words(*freed)
    )]
    SessionLimit {
        bmc: String,
        url: String,
        status: u16,
        /// The BMC's own words (its extended info's message, else the error's).
        message: String,
        /// Sessions the BMC listed when it refused (read with HTTP Basic, which opens none): its limit.
        listed: Option<usize>,
        /// Stale sessions of Lifeline's own deleted there before the one retry.
        freed: usize,
    },
    #[error("{bmc}: waited {after:?} for one of {limit} request slots/sessions")]
    Busy { bmc: String, limit: usize, after: Duration },
    #[error("{bmc}: {what} not found in {url}")]
    Missing { bmc: String, url: String, what: &'static str },
    #[error(
        "{bmc}: no reset type performs `{action}` (BMC allows {allowed:?}, known unsupported {unsupported:?})"
    )]
    NoResetType { bmc: String, action: PowerAction, allowed: Vec<String>, unsupported: Vec<String> },
    #[error(
        "{bmc}: reset `{reset_type}` posted to {url} but its outcome is unknown; read the power state before \
         retrying"
    )]
    ActionOutcomeUnknown {
        bmc: String,
        url: String,
        reset_type: String,
        #[source]
        source: Box<RedfishError>,
    },
    #[error("{bmc}: power state did not reach {wanted} within {after:?} (last seen {last})")]
    PowerWait {
        bmc: String,
        wanted: lifeline_types::PowerState,
        last: lifeline_types::PowerState,
        after: Duration,
    },
    #[error("{bmc}: event stream {url} sent nothing for {after:?}")]
    SseIdle { bmc: String, url: String, after: Duration },
    #[error("{bmc}: event stream {url}")]
    Sse {
        bmc: String,
        url: String,
        #[source]
        source: crate::sse::SseError,
    },
    #[error("{bmc}: event stream {url} reached its limit of {limit} bytes")]
    SseByteLimit { bmc: String, url: String, limit: usize },
    #[error("{bmc}: {method} {url}: the reply passed the limit of {limit} bytes")]
    BodyTooLarge { bmc: String, method: &'static str, url: String, limit: usize },
    #[error("{bmc}: the client was closed")]
    Closed { bmc: String },
    #[error("{bmc}: reading the firmware image {path}")]
    Image {
        bmc: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl RedfishError {
    /// The BMC this error is about (every variant names one).
    pub fn bmc(&self) -> &str {
        use RedfishError::*;
        match self {
            Url { bmc, .. }
            | ForeignLink { bmc, .. }
            | Build { bmc, .. }
            | Http { bmc, .. }
            | Timeout { bmc, .. }
            | Status { bmc, .. }
            | Json { bmc, .. }
            | CertificateChanged { bmc, .. }
            | InventoryPinMismatch { bmc, .. }
            | NotConfirmed { bmc, .. }
            | NoCertificate { bmc, .. }
            | PinStore { bmc, .. }
            | CaFile { bmc, .. }
            | CaEmpty { bmc, .. }
            | Login { bmc, .. }
            | SessionLimit { bmc, .. }
            | Busy { bmc, .. }
            | Missing { bmc, .. }
            | NoResetType { bmc, .. }
            | ActionOutcomeUnknown { bmc, .. }
            | PowerWait { bmc, .. }
            | SseIdle { bmc, .. }
            | Sse { bmc, .. }
            | SseByteLimit { bmc, .. }
            | BodyTooLarge { bmc, .. }
            | Image { bmc, .. }
            | Closed { bmc } => bmc,
        }
    }

    /// HTTP status, when the BMC answered with one.
    pub fn status(&self) -> Option<u16> {
        match self {
            RedfishError::Status { status, .. }
            | RedfishError::Login { status, .. }
            | RedfishError::SessionLimit { status, .. } => Some(*status),
            _ => None,
        }
    }
}

fn limit_words(listed: Option<usize>) -> String {
    listed.map(|n| format!(" (limit: {n} sessions, all open)")).unwrap_or_default()
}

fn freed_words(freed: usize) -> String {
    let then = "close sessions other tools hold there, or wait for the BMC's session timeout";
    match freed {
        0 => format!("Lifeline had no stale session of its own there to delete; {then}"),
        n => format!("Lifeline deleted {n} stale session(s) of its own there and tried once more; {then}"),
    }
}
