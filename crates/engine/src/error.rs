//! The engine's errors and their one classification. Front ends never pick an exit code or an HTTP status
//! by hand: they ask [`EngineError::class`] and map the [`ErrorClass`] in one place each (the CLI's
//! `exit.rs`, the server's error response).

use serde::Serialize;

/// What kind of failure this is, from the caller's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorClass {
    /// The request itself is wrong: bad arguments, bad configuration, a credential that does not resolve.
    Usage,
    /// It names something that does not exist (device, version, run).
    NotFound,
    /// A rule said no: not confirmed, not Lifeline's drain, a guard.
    Refused,
    /// The work was attempted and did not succeed (BMC refused, switch unreachable, verification failed).
    Failed,
    /// Someone else is acting on the target right now, or a replayed request's outcome is unknown.
    Conflict,
    /// Lifeline itself cannot work: the store, the audit log, the runtime.
    Unavailable,
}

impl ErrorClass {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Usage => "usage",
            ErrorClass::NotFound => "not-found",
            ErrorClass::Refused => "refused",
            ErrorClass::Failed => "failed",
            ErrorClass::Conflict => "conflict",
            ErrorClass::Unavailable => "unavailable",
        }
    }
}

/// Who holds a busy target, for conflict messages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Holder {
    pub holder: String,
    pub action: String,
    pub request_id: String,
    pub since: chrono::DateTime<chrono::Utc>,
    pub expires: chrono::DateTime<chrono::Utc>,
}

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("{path}:{line}:{col}: {message}")]
    Config { path: std::path::PathBuf, line: usize, col: usize, message: String },
    #[error("cannot read {path}")]
    ConfigRead {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no inventory given: pass --inventory FILE or set LIFELINE_INVENTORY{hint}")]
    NoInventory { hint: String },
    #[error("cannot read the inventory")]
    InventoryRead(#[source] lifeline_inventory::InventoryError),
    #[error("the inventory is invalid")]
    InventoryInvalid(#[source] lifeline_inventory::InventoryError),
    #[error("cannot select targets")]
    Select(#[source] lifeline_inventory::SelectError),
    #[error("no device `{name}` in the inventory")]
    UnknownDevice { name: String },
    #[error("{what}")]
    NoTargets { what: String },
    #[error("{message}")]
    BadArgument { message: String },
    #[error("nothing was contacted because:\n  {}", problems.join("\n  "))]
    Credentials { problems: Vec<String> },
    #[error("the store is unavailable")]
    Store(#[source] lifeline_store::StoreError),
    #[error("the audit log cannot be written ({what}); nothing was done")]
    AuditUnavailable {
        what: String,
        #[source]
        source: BoxError,
    },
    #[error(
        "{target} is busy: {} is running {} since {} (request {}); retry later or pass --wait DURATION",
        holder.holder, holder.action, holder.since.format("%H:%M:%S"), holder.request_id
    )]
    Busy { target: String, holder: Holder },
    #[error(
        "request {request_id} ({action} on {target}) is still in progress (started at {started}); retry with \
         the same request id to get its outcome"
    )]
    InProgress { request_id: String, target: String, action: String, started: chrono::DateTime<chrono::Utc> },
    #[error(
        "request {request_id} ({action} on {target}) was started at {started} and its outcome is unknown \
         (the process that ran it stopped); check the target's state and use a new request id"
    )]
    UnknownOutcome {
        request_id: String,
        target: String,
        action: String,
        started: chrono::DateTime<chrono::Utc>,
    },
    #[error(
        "request {request_id} was used for {previous} on {previous_target}; a request id names one action"
    )]
    RequestIdReused { request_id: String, previous: String, previous_target: String },
    #[error("{target}: {reason}")]
    Refused { target: String, reason: String },
    /// A re-pin confirmed a fingerprint other than the one presented now: nothing was pinned.
    #[error(
        "{target}: presents {presented}, not the confirmed {expected} (pinned now: {}); nothing was pinned: look \
         again and confirm what is presented now",
        pinned.map_or_else(|| "nothing".to_owned(), |p| p.to_string())
    )]
    NotConfirmed {
        target: String,
        expected: lifeline_types::Fingerprint,
        presented: lifeline_types::Fingerprint,
        pinned: Option<lifeline_types::Fingerprint>,
    },
    #[error("{target}")]
    Bmc {
        target: String,
        #[source]
        source: lifeline_bmc::BmcError,
    },
    #[error("{target}: {what}")]
    Failed {
        target: String,
        what: String,
        #[source]
        source: Option<BoxError>,
    },
    #[error("{target}: {what}")]
    NotFound { target: String, what: String },
    #[error("{what}")]
    Internal {
        what: String,
        #[source]
        source: Option<BoxError>,
    },
}

impl EngineError {
    pub fn class(&self) -> ErrorClass {
        use EngineError::*;
        match self {
            Config { .. }
            | ConfigRead { .. }
            | NoInventory { .. }
            | InventoryRead(_)
            | NoTargets { .. }
            | BadArgument { .. }
            | Credentials { .. }
            | RequestIdReused { .. } => ErrorClass::Usage,
            Select(_) | UnknownDevice { .. } | NotFound { .. } => ErrorClass::NotFound,
            InventoryInvalid(_) | Bmc { .. } | Failed { .. } => ErrorClass::Failed,
            Refused { .. } => ErrorClass::Refused,
            Busy { .. } | UnknownOutcome { .. } | InProgress { .. } | NotConfirmed { .. } => {
                ErrorClass::Conflict
            }
            Store(_) | AuditUnavailable { .. } | Internal { .. } => ErrorClass::Unavailable,
        }
    }

    pub fn failed(target: impl Into<String>, what: impl Into<String>) -> Self {
        EngineError::Failed { target: target.into(), what: what.into(), source: None }
    }

    pub fn failed_by(target: impl Into<String>, what: impl Into<String>, e: impl Into<BoxError>) -> Self {
        EngineError::Failed { target: target.into(), what: what.into(), source: Some(e.into()) }
    }

    pub fn bad_argument(message: impl Into<String>) -> Self {
        EngineError::BadArgument { message: message.into() }
    }

    pub fn internal(what: impl Into<String>, e: impl Into<BoxError>) -> Self {
        EngineError::Internal { what: what.into(), source: Some(e.into()) }
    }

    /// One line: the error and its causes.
    pub fn chain(&self) -> String {
        error_chain(self)
    }

    /// What goes into a result row or an HTTP body.
    pub fn report(&self) -> ErrorReport {
        ErrorReport { class: self.class(), message: self.chain() }
    }
}

impl From<lifeline_store::StoreError> for EngineError {
    fn from(e: lifeline_store::StoreError) -> Self {
        EngineError::Store(e)
    }
}

/// A serialisable error: class and the whole chain in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorReport {
    pub class: ErrorClass,
    pub message: String,
}

/// The error and its causes on one line, `: `-separated, repeated messages folded (lifeline-types' one
/// definition).
pub use lifeline_types::error_chain;

pub type Result<T, E = EngineError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_folds_repeats_and_classes_are_stable() {
        let e = EngineError::failed_by("leaf1", "backup", std::io::Error::other("connection refused"));
        assert_eq!(e.chain(), "leaf1: backup: connection refused");
        assert_eq!(e.class(), ErrorClass::Failed);
        let busy = EngineError::Busy {
            target: "n1".into(),
            holder: Holder {
                holder: "cli:root pid 7".into(),
                action: "power.cycle".into(),
                request_id: "r1".into(),
                since: chrono::DateTime::from_timestamp(0, 0).unwrap(),
                expires: chrono::DateTime::from_timestamp(30, 0).unwrap(),
            },
        };
        assert_eq!(busy.class(), ErrorClass::Conflict);
        assert!(busy.to_string().contains("cli:root pid 7 is running power.cycle"), "{busy}");
    }
}
