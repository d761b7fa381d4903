//! Client errors. Every variant names the BMC so one failure in a fleet sweep is
//! attributable; causes hang off `#[source]` and are not repeated in the message.

use crate::wire::{DecodeError, cc, rakp};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{bmc}: socket error")]
    Io {
        bmc: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{bmc}: no reply to {what} after {after:?}")]
    Timeout { bmc: String, what: &'static str, after: Duration },
    #[error("{bmc}: {cmd} failed with completion code {code:#04x} ({})", cc::describe(*code))]
    CompletionCode { bmc: String, cmd: &'static str, code: u8 },
    #[error("{bmc}: authentication failed: {reason}")]
    Auth { bmc: String, reason: &'static str },
    #[error("{bmc}: {stage} refused with status {status:#04x} ({})", rakp::status::describe(*status))]
    SessionRefused { bmc: String, stage: &'static str, status: u8 },
    #[error("{bmc}: no common cipher suite (tried {tried:?})")]
    NoCipherSuite { bmc: String, tried: Vec<u8> },
    #[error("{bmc}: BMC does not support IPMI 2.0 (RMCP+)")]
    NoIpmi2 { bmc: String },
    #[error("{bmc}: malformed {what}")]
    Decode {
        bmc: String,
        what: &'static str,
        #[source]
        source: DecodeError,
    },
    #[error("{bmc}: SOL payload instance {instance} is already active in another session")]
    PayloadAlreadyActive { bmc: String, instance: u8 },
    #[error("{bmc}: {cmd} was sent but its reply was lost; the outcome is unknown")]
    Unconfirmed { bmc: String, cmd: &'static str },
    #[error("{bmc}: SOL {what}")]
    Sol { bmc: String, what: &'static str },
    #[error("{bmc}: session is closed")]
    Closed { bmc: String },
}

impl Error {
    pub fn bmc(&self) -> &str {
        match self {
            Self::Io { bmc, .. }
            | Self::Timeout { bmc, .. }
            | Self::CompletionCode { bmc, .. }
            | Self::Auth { bmc, .. }
            | Self::SessionRefused { bmc, .. }
            | Self::NoCipherSuite { bmc, .. }
            | Self::NoIpmi2 { bmc }
            | Self::Decode { bmc, .. }
            | Self::PayloadAlreadyActive { bmc, .. }
            | Self::Unconfirmed { bmc, .. }
            | Self::Sol { bmc, .. }
            | Self::Closed { bmc } => bmc,
        }
    }

    /// The BMC refused a new session for want of a free slot (RMCP+ Open Session or RAKP 2 status 0x01
    /// "insufficient resources to create a session", or 0x0B "... at the requested role"): its session
    /// table is full.
    pub fn is_session_limit(&self) -> bool {
        matches!(
            self,
            Self::SessionRefused {
                status: rakp::status::NO_RESOURCES | rakp::status::NO_RESOURCES_FOR_ROLE,
                ..
            }
        )
    }

    /// The completion code, if the BMC answered with an error one.
    pub fn completion_code(&self) -> Option<u8> {
        match self {
            Self::CompletionCode { code, .. } => Some(*code),
            _ => None,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
