//! Lifeline's lenient Redfish client.
//!
//! Why our own layer on reqwest rather than a generated SDK: BMCs deviate from the schema in small ways, and
//! an out-of-band control plane must degrade one field on one BMC, never fail a fleet sweep. Documents are
//! read field by field ([`doc`], [`model`]), vendor deviations are data ([`quirks`]), certificates are pinned
//! on first use ([`tls`]), sessions stay within each BMC's limit and are logged out (`session` module).
//!
//! The pure parts (model, quirks, reset planning, SSE parser) build without the `client` feature, so the
//! simulator can share the schema subset without depending on the client.

pub mod bios_model;
pub mod bmc_model;
pub mod component_model;
pub mod doc;
pub mod gpu_events;
mod log_model;
pub mod media_model;
pub mod model;
pub mod power;
pub mod psu;
pub mod quirks;
pub mod sse;
pub mod update_model;

#[cfg(feature = "client")]
mod client;
#[cfg(feature = "client")]
pub mod error;
#[cfg(feature = "client")]
mod events;
#[cfg(feature = "client")]
mod prelogin;
#[cfg(feature = "client")]
pub mod resume;
#[cfg(feature = "client")]
mod session;
#[cfg(feature = "client")]
pub mod tls;

#[cfg(feature = "client")]
pub use client::accounts::Account as ManagerAccount;
#[cfg(feature = "client")]
pub use client::since::EntryMark;
#[cfg(feature = "client")]
pub use client::{
    AuthInUse, AuthMode, BmcTarget, Client, ClientOptions, Credentials, EventLogs, FIRST_CONTACT_READS,
    HeldSession, Listing, MediaCollection, PowerOutcome, Probe, ServiceConditions, TaskPoll, TrustOutcome,
    UpdateAccepted, presented_certificate, probe_certificate, probe_service_root, trust,
};
#[cfg(feature = "client")]
pub use client::{SessionRecord, SessionRecorder, StaleSessionFreer};
pub use doc::FieldWarning;
#[cfg(feature = "client")]
pub use error::RedfishError;
#[cfg(feature = "client")]
pub use events::{EventStream, SseLimits, SubscriptionRequest};
pub use power::{ResetPlan, plan_reset};
pub use quirks::{PlatformProfile, Quirk, RuleSet};
#[cfg(feature = "client")]
pub use resume::ResumptionCache;
#[cfg(feature = "client")]
pub use tls::{MemoryPinStore, PinStore, TlsTrust, fingerprint_der};

/// Internals the fuzz targets (`crates/redfish/fuzz`) call directly; only in `cargo fuzz` builds.
#[cfg(all(fuzzing, feature = "client"))]
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::client::paging::{Paged, follow_pages};
    pub use crate::client::resolve_link;
    pub use crate::events::parse_event_data;
}
