//! Errors of the console crate, one enum per concern, each naming the console (target) it is about.

use std::time::Duration;

/// Opening or using a BMC console link.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error(
        "{console}: SOL payload instance {instance} is already active in another session (use steal to take it over)"
    )]
    PayloadBusy { console: String, instance: u8 },
    #[error("{console}: IPMI error during {stage}")]
    Ipmi {
        console: String,
        stage: &'static str,
        #[source]
        source: lifeline_ipmi::Error,
    },
    #[error("{console}: SSH error during {stage}")]
    Ssh {
        console: String,
        stage: &'static str,
        #[source]
        source: russh::Error,
    },
    #[error("{console}: cannot connect to {addr}")]
    Connect {
        console: String,
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{console}: SSH host key {presented} does not match the pinned {pinned}")]
    HostKeyMismatch { console: String, pinned: String, presented: String },
    #[error("{console}: SSH authentication as `{user}` rejected")]
    AuthRejected { console: String, user: String },
    #[error("{console}: {stage} took longer than {}", lifeline_types::Human(*after))]
    Timeout { console: String, stage: &'static str, after: Duration },
    #[error("{console}: the console link is closed")]
    Closed { console: String },
    #[error("{console}: SOL payload instance {instance} was taken away (now owned by session {owner:#010x})")]
    PayloadLost { console: String, instance: u8, owner: u32 },
    #[error("{console}: {what} is not supported by this transport")]
    Unsupported { console: String, what: &'static str },
}

impl TransportError {
    pub fn console(&self) -> &str {
        match self {
            Self::PayloadBusy { console, .. }
            | Self::Ipmi { console, .. }
            | Self::Ssh { console, .. }
            | Self::Connect { console, .. }
            | Self::HostKeyMismatch { console, .. }
            | Self::AuthRejected { console, .. }
            | Self::Timeout { console, .. }
            | Self::Closed { console }
            | Self::Unsupported { console, .. }
            | Self::PayloadLost { console, .. } => console,
        }
    }
    pub fn is_busy(&self) -> bool {
        matches!(self, Self::PayloadBusy { .. })
    }
}

/// Console manager operations (attach, write, take-over).
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    #[error("{console}: no such console")]
    UnknownConsole { console: String },
    #[error("{console}: console name must be a plain file name")]
    BadName { console: String },
    #[error("{console}: `{holder}` holds the write lock (attach read-only or take over explicitly)")]
    WriterBusy { console: String, holder: String },
    #[error("{console}: `{viewer}` is read-only")]
    NotWriter { console: String, viewer: String },
    #[error("{console}: could not open the BMC console")]
    Open {
        console: String,
        #[source]
        source: TransportError,
    },
    #[error("{console}: the console session has stopped")]
    Stopped { console: String },
    #[error("console log")]
    Log(#[from] LogError),
}

/// Console log files and their index.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("{path}: console log I/O")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{console}: console log index")]
    Index {
        console: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("{console}: console name must be a plain file name")]
    BadName { console: String },
}
