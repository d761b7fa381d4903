//! Lifeline's store: one API over SQLite (embedded, zero setup) and PostgreSQL (shared by replicas).
//!
//! Queries are runtime queries through sqlx's `Any` driver, so the workspace builds on a fresh machine with
//! no database and no offline query cache. Time is stored as Unix milliseconds (`BIGINT`) and structured
//! data as JSON text: both portable across the two backends. Migrations are embedded in the binary, one
//! directory per dialect, and run when the store opens (`schema` looks at them and applies them on an
//! operator's word; `backup` copies a live SQLite store).

mod audit;
mod backup;
mod bios_drift;
mod changes;
mod credentials;
mod devices;
mod discovery;
mod error;
mod events;
mod files;
mod firmware;
mod gauges;
mod leases;
mod log_marks;
mod open;
mod pins;
mod probation;
mod records;
mod replicas;
mod runs;
mod schema;
mod sessions;
mod users;

pub use audit::{AuditEntry, AuditRow};
pub use backup::BackupSummary;
pub use bios_drift::BiosDriftRow;
pub use credentials::CredentialRow;
pub use devices::{DeviceRecord, SyncSummary};
pub use discovery::DiscoveryRow;
pub use error::StoreError;
pub use events::{EventRow, NewEvent, Observation};
pub use firmware::{RolloutRow, RolloutTargetRow};
pub use gauges::FleetGauges;
pub use leases::{LeaseAttempt, LeaseRow, RequestRow};
pub use log_marks::LogMarkRow;
pub use open::{Backend, Store};
pub use pins::PinKind;
pub use probation::{LemonReleaseRow, ProbationRow, RecurrenceRow};
pub use records::{ConfigVersionRow, ConsoleLogRow};
pub use replicas::{ReplicaRow, WorkClaim, WorkRow};
pub use runs::{ACTIVE_RUN_STATES, ApprovalRow, JournalRow, NewJournal, RunRow};
pub use schema::{MigrationRow, MigrationState, SchemaStatus};
pub use sessions::{BmcSessionRow, IPMI_SESSION_PREFIX, ipmi_session_id, ipmi_session_uri};
pub use users::{FaultRow, SessionRow, TokenRow, UserRow};

/// Milliseconds since the Unix epoch, the store's one time representation.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}
