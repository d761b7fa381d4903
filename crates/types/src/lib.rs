//! Domain vocabulary shared by every Lifeline crate.
//!
//! This crate exists so that the protocol crates, the store, the inventory and the server agree on what a
//! device name, a fabric or a power state *is* without depending on each other. It does no I/O.

mod audit;
mod credential;
mod device;
mod duration;
mod error_chain;
mod fault_kind;
mod fingerprint;
mod lifecycle;
mod state;

pub use audit::{AuditAction, AuditOutcome, LoggedAction};
pub use credential::{CredentialRef, CredentialRefError};
pub use device::{BmcProtocol, ConfigSource, DeviceName, DeviceNameError, Fabric, Platform, Role, Tier};
pub use duration::Human;
pub use error_chain::error_chain;
pub use fault_kind::FaultKind;
pub use fingerprint::{Fingerprint, FingerprintError};
pub use lifecycle::{FaultState, RunState, StepState};
pub use state::{Health, PowerAction, PowerState};

/// Implements `Display`, `FromStr` and the kebab-case names for a fieldless enum, once, so that the CLI,
/// the inventory and the JSON output all spell a value the same way.
#[macro_export]
macro_rules! kebab_enum {
    // `$text` is a token tree, not a `literal` fragment: a `literal` reaches derive macros wrapped in an
    // invisible group, which `utoipa`'s derive does not read as the `rename`, so the OpenAPI document
    // listed the variants' Rust names (`WaitingApproval`) where the JSON says `waiting-approval`.
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($(#[$vmeta:meta])* $variant:ident => $text:tt),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        $vis enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The canonical (kebab-case) spelling.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            /// The accepted spellings, for error messages.
            pub fn expected() -> String {
                [$($text),+].join(", ")
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::UnknownVariant;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err($crate::UnknownVariant {
                        kind: stringify!($name),
                        value: s.to_owned(),
                        expected: $name::expected(),
                    }),
                }
            }
        }
    };
}

/// A word that is not one of an enum's spellings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} `{value}` (expected one of: {expected})")]
pub struct UnknownVariant {
    pub kind: &'static str,
    pub value: String,
    pub expected: String,
}
