//! Remembering which protocol an `auto` BMC speaks, so the probe runs once per BMC, not once per command.
//!
//! The lead implements [`ProtocolMemory`] on the store's `bmc_protocols` table; [`MemoryProtocolMemory`]
//! serves tests and one-shot CLI runs.

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
}

/// In-process memory.
#[derive(Debug, Default)]
pub struct MemoryProtocolMemory(Mutex<HashMap<String, BmcProtocol>>);

impl MemoryProtocolMemory {
    pub fn new() -> Self {
        Self::default()
    }
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, BmcProtocol>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
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
}
