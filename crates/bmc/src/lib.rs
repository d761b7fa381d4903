//! # lifeline-bmc: one interface over Redfish and IPMI
//!
//! The operator's hands when the frontend is down: power (confirmed, in the fence-agent sense), health,
//! event log and inventory of any BMC, whichever protocol it speaks, plus fleet sweeps and a credential
//! hygiene audit. Built on `lifeline-ipmi` (lanplus client) and `lifeline-redfish` (lenient client).
//!
//! Shape:
//! - [`BmcTarget`]: what the caller knows about one BMC (from the inventory, password resolved).
//! - [`BmcPool`]: the process-wide limits (fan-out semaphore, per-BMC power lock) and the caller's hooks
//!   ([`AuditSink`], [`ProtocolMemory`], the Redfish pin store in [`BmcOptions::tls`]); [`Bmc`] is a handle
//!   on one target within it.
//! - [`Bmc::power`] returns a [`PowerReport`] (requested vs. observed, timings, whether anything was sent);
//!   [`power`] documents what "confirmed" means per protocol.
//! - [`BmcPool::sweep`] streams [`SweepRow`]s (over [`KeptSessions`] when the options carry them); [`BmcPool::hygiene_audit`] returns [`HygieneRow`]s.
//!
//! This crate knows nothing of the store or the inventory format: the lead implements [`AuditSink`] and
//! [`ProtocolMemory`] on the store, and `lifeline_redfish::PinStore` for TLS pins.

pub mod accounts;
pub mod audit;
mod below;
pub mod bios;
pub mod bmc_reset;
pub mod boot;
mod conn;
pub mod error;
pub mod events;
pub mod fanout;
pub mod firmware;
pub mod fru;
mod gpu_logs;
pub mod health;
pub mod hygiene;
pub mod info;
pub mod kept;
mod kept_ipmi;
mod kept_redfish;
pub mod marks;
pub mod media;
pub mod memory;
pub mod options;
mod pool;
mod pool_learn;
pub mod power;
mod sdr_cache;
pub mod subscribe;
pub mod sweep;
pub mod target;
pub mod verdict;

pub use accounts::{AccountInfo, AccountList, LoginCheck};
pub use audit::{AuditId, AuditIntent, AuditOutcome, AuditRow, AuditSink, MemoryAuditSink};
pub use below::{GpuCount, GpuHealth};
pub use bios::{BiosShow, BiosStaged};
pub use bmc_reset::BmcResetReport;
pub use boot::{BootConfirmation, BootMode, BootReport, BootRequest, BootSettings, BootShow, BootTarget};
pub use error::{BmcError, BoxError, error_chain};
pub use events::{EventEntry, EventLog, LogSource};
pub use fanout::{fanout_for_fleet, raise_nofile_limit};
pub use fru::Inventory;
pub use health::{HealthSummary, ResourceHealth, SensorReading, Thresholds};
pub use hygiene::{DEFAULT_CREDENTIALS, HygieneOptions, HygieneRow};
pub use info::{BmcInfo, FirmwareVersion, FruView, SdrList, SdrRow};
pub use kept::{KeepOptions, KeptSessions, KeptStats};
pub use kept_ipmi::StaleIpmi;
pub use kept_redfish::{Reclaimed, SessionLedger, SharedLedger};
pub use marks::{LogMark, LogWindow, Marks};
pub use media::{ImageCredentials, MediaReport, MediaRequest, MediaShow, MediaSlot};
pub use memory::{Discovery, MemoryProtocolMemory, ProtocolMemory, RedfishDiscovery, RedfishResourcePaths};
pub use options::{BmcOptions, PowerOptions, TlsPolicy};
pub use pool::{Bmc, BmcPool};
pub use power::{Confirmation, PowerReport, Transition};
pub use sweep::{SweepOptions, SweepProgress, SweepRow};
pub use target::{BmcTarget, IPMI_PORT, REDFISH_PORT};
pub use verdict::{ComponentHealth, Verdict};
