//! Remembering which protocol an `auto` BMC speaks, so the probe runs once per BMC, not once per command;
//! and what discovery learnt about each BMC ([`Discovery`]: its IPMI cipher suite, its Redfish service root
//! and system path), so a new process does not rediscover it (one round trip less per IPMI session, two
//! GETs less per Redfish connection); and where its event logs and chassis are ([`RedfishResourcePaths`]:
//! a health sweep with events then reads each document in one round trip instead of navigating to it).
//!
//! The engine implements [`ProtocolMemory`] on the store's `bmc_protocols` and `bmc_discovery` tables;
//! [`MemoryProtocolMemory`] serves tests and one-shot CLI runs. The discovery methods have defaults that
//! remember nothing, so a memory without them is still correct, only slower.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use lifeline_types::BmcProtocol;

use crate::error::BoxError;

/// Where `auto` decisions live between runs. Only `Redfish` or `Ipmi` is ever stored.
#[async_trait]
pub trait ProtocolMemory: Send + Sync {
    async fn recall(&self, bmc: &str) -> Result<Option<BmcProtocol>, BoxError>;
    async fn remember(&self, bmc: &str, protocol: BmcProtocol) -> Result<(), BoxError>;
    /// Drop a decision (the BMC stopped answering that protocol, or an operator asks to re-probe).
    async fn forget(&self, bmc: &str) -> Result<(), BoxError>;

    /// Everything discovered about every BMC (read once per pool: one query, not one per BMC).
    async fn recall_discoveries(&self) -> Result<HashMap<String, Discovery>, BoxError> {
        Ok(HashMap::new())
    }
    /// Replace what is known about `bmc` (an empty [`Discovery`] forgets it).
    async fn remember_discovery(&self, bmc: &str, discovery: &Discovery) -> Result<(), BoxError> {
        let _ = (bmc, discovery);
        Ok(())
    }

    /// The Redfish resources every BMC was last read at beyond its root and system (one query).
    async fn recall_redfish_resources(&self) -> Result<HashMap<String, RedfishResourcePaths>, BoxError> {
        Ok(HashMap::new())
    }
    /// Replace them for `bmc` (an empty [`RedfishResourcePaths`] forgets them).
    async fn remember_redfish_resources(
        &self,
        bmc: &str,
        paths: &RedfishResourcePaths,
    ) -> Result<(), BoxError> {
        let _ = (bmc, paths);
        Ok(())
    }
}

/// What an earlier connection learnt about one BMC. Safe to reuse: a remembered cipher suite that fails is
/// forgotten and the BMC asked again; a Redfish root or path that fails (404, another root) is dropped and
/// rediscovered; the TLS pin is checked on every handshake regardless.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Discovery {
    /// The IPMI cipher suite the BMC last accepted (its id).
    pub ipmi_suite: Option<u8>,
    pub redfish: Option<RedfishDiscovery>,
}

impl Discovery {
    pub fn is_empty(&self) -> bool {
        self.ipmi_suite.is_none() && self.redfish.is_none()
    }
}

/// A BMC's Redfish service root and the system Lifeline uses on it.
#[derive(Debug, Clone, PartialEq)]
pub struct RedfishDiscovery {
    /// The base URL this was learnt from (a BMC whose address or port changed starts afresh).
    pub url: String,
    /// The service root document.
    pub root: serde_json::Value,
    /// `@odata.id` of the computer system.
    pub system: Option<String>,
}

/// Where a BMC's health sweep reads beyond the system, so a new process goes straight there instead of
/// navigating (Managers, their LogServices, each service, then its Entries: four round trips in a row on
/// every sweep, each costing the BMC's latency). Safe to reuse: a path that fails (404, not the document it
/// was) drops the whole record and the BMC is navigated again in the same visit.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RedfishResourcePaths {
    /// The base URL these were found at (a BMC whose address or port changed starts afresh).
    #[serde(default)]
    pub url: String,
    /// The event log services read (their documents, trimmed to identity, type and `Entries`).
    #[serde(default)]
    pub logs: Vec<serde_json::Value>,
    /// The chassis whose status the health rollup read (the system had no `HealthRollup`).
    #[serde(default)]
    pub chassis: Vec<String>,
}

impl RedfishResourcePaths {
    pub fn is_empty(&self) -> bool {
        self.logs.is_empty() && self.chassis.is_empty()
    }
}

/// In-process memory (share one between pools to stand for a store that outlives a process).
#[derive(Debug, Default)]
pub struct MemoryProtocolMemory(
    Mutex<HashMap<String, BmcProtocol>>,
    Mutex<HashMap<String, Discovery>>,
    Mutex<HashMap<String, RedfishResourcePaths>>,
);

impl MemoryProtocolMemory {
    pub fn new() -> Self {
        Self::default()
    }
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, BmcProtocol>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
    fn discoveries(&self) -> std::sync::MutexGuard<'_, HashMap<String, Discovery>> {
        self.1.lock().unwrap_or_else(|p| p.into_inner())
    }
    fn resources(&self) -> std::sync::MutexGuard<'_, HashMap<String, RedfishResourcePaths>> {
        self.2.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait]
impl ProtocolMemory for MemoryProtocolMemory {
    async fn recall(&self, bmc: &str) -> Result<Option<BmcProtocol>, BoxError> {
        Ok(self.map().get(bmc).copied())
    }
    async fn remember(&self, bmc: &str, protocol: BmcProtocol) -> Result<(), BoxError> {
        self.map().insert(bmc.to_owned(), protocol);
        Ok(())
    }
    async fn forget(&self, bmc: &str) -> Result<(), BoxError> {
        self.map().remove(bmc);
        Ok(())
    }
    async fn recall_discoveries(&self) -> Result<HashMap<String, Discovery>, BoxError> {
        Ok(self.discoveries().clone())
    }
    async fn remember_discovery(&self, bmc: &str, discovery: &Discovery) -> Result<(), BoxError> {
        let mut m = self.discoveries();
        if discovery.is_empty() {
            m.remove(bmc);
        } else {
            m.insert(bmc.to_owned(), discovery.clone());
        }
        Ok(())
    }
    async fn recall_redfish_resources(&self) -> Result<HashMap<String, RedfishResourcePaths>, BoxError> {
        Ok(self.resources().clone())
    }
    async fn remember_redfish_resources(
        &self,
        bmc: &str,
        paths: &RedfishResourcePaths,
    ) -> Result<(), BoxError> {
        let mut m = self.resources();
        if paths.is_empty() {
            m.remove(bmc);
        } else {
            m.insert(bmc.to_owned(), paths.clone());
        }
        Ok(())
    }
}
