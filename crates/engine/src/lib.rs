//! # lifeline-engine: the service core every front end shares
//!
//! The CLI, the server and the runbook executor are thin: they build one [`Lifeline`] context (configuration,
//! inventory, store, the acting identity, the long-lived BMC pool) and call its typed operations in `ops/`,
//! each returning a `Serialize` result. Cross-cutting rules live here once:
//! - [`audit::AuditService`]: an intent row before every action and an outcome row after, with actor and
//!   request id;
//! - [`lease`]: per-target leases in the store, so two processes or replicas never act on one target at
//!   once; [`Lifeline::guarded`] adds request-id idempotency (a replay returns the first outcome);
//! - [`outcome_wal`]: an action's outcome is kept in a local slot when the store refuses it, so an action
//!   that ran is never answered "not done";
//! - [`error::EngineError::class`]: the one classification front ends map to exit codes and HTTP statuses.
//!
//! The store adapters for the protocol crates' traits ([`adapters`]) and the sealing of raw switch configs
//! ([`seal`]) live here too, so no front end carries storage code.

pub mod adapters;
pub mod audit;
pub mod bmc_sessions;
pub mod budget;
pub mod config;
pub mod config_check;
pub mod config_reference;
mod context;
pub mod correlate;
pub mod discover;
pub mod error;
pub mod event_gate;
pub mod event_listener;
pub mod event_tls;
pub mod fault_rules;
#[cfg(feature = "test-hooks")]
pub mod hooks;
pub mod image_serve;
pub mod lease;
pub mod netbox;
pub mod ops;
pub mod outcome_wal;
pub mod probation;
pub mod seal;
pub mod switch_evidence;
pub mod targets;

pub use audit::{AuditService, Outcome};
pub use config::{
    FaultPolicy, LoadedConfig, Paths, PolicyMode, ServeSection, ServerConfig, Settings, Webhook,
};
pub use context::{Identity, Lifeline, cli_actor};
pub use error::{EngineError, ErrorClass, ErrorReport, error_chain};
pub use ops::{Acted, Row};
pub use targets::{BmcSelection, BmcUrl, SelectedBmc};
