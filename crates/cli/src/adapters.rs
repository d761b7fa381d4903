//! The store behind the engine crates' traits: audit rows, TLS pins, the protocol `auto` chose.
//!
//! The engine crates do not depend on the store (so they stay testable and reusable); the binary joins them.

use async_trait::async_trait;
use lifeline_bmc::{AuditId, AuditIntent, AuditOutcome, AuditSink, BoxError, ProtocolMemory};
use lifeline_store::{AuditEntry, PinKind, Store};
use lifeline_types::{BmcProtocol, Fingerprint};

/// Writes the bmc crate's intent and outcome rows into the audit log, tagged with the acting user.
#[derive(Debug, Clone)]
pub struct StoreAudit {
    pub store: Store,
    pub actor: String,
}

#[async_trait]
impl AuditSink for StoreAudit {
    async fn intent(&self, rec: &AuditIntent) -> Result<AuditId, BoxError> {
        let id = self
            .store
            .audit(&AuditEntry {
                actor: self.actor.clone(),
                action: rec.action.clone(),
                target: rec.bmc.clone(),
                outcome: "started".into(),
                detail: rec.detail.clone(),
                request_id: rec.request_id.clone(),
            })
            .await?;
        Ok(AuditId(id))
    }

    async fn outcome(&self, rec: &AuditOutcome) -> Result<(), BoxError> {
        let mut detail = rec.detail.clone();
        if let serde_json::Value::Object(m) = &mut detail {
            m.insert("intent".into(), rec.intent.0.into());
        }
        self.store
            .audit(&AuditEntry {
                actor: self.actor.clone(),
                action: rec.action.clone(),
                target: rec.bmc.clone(),
                outcome: if rec.ok { "ok".into() } else { "failed".into() },
                detail,
                request_id: None,
            })
            .await?;
        Ok(())
    }
}

/// TLS pins (trust on first use) for Redfish BMCs, kept in the store.
#[derive(Debug, Clone)]
pub struct StorePins(pub Store);

#[async_trait]
impl lifeline_redfish::PinStore for StorePins {
    async fn get_pin(&self, bmc: &str) -> Result<Option<Fingerprint>, BoxError> {
        Ok(self.0.pin(PinKind::Tls, bmc).await?)
    }

    async fn set_pin(&self, bmc: &str, pin: Fingerprint) -> Result<(), BoxError> {
        Ok(self.0.set_pin(PinKind::Tls, bmc, pin).await?)
    }
}

/// Which protocol `auto` settled on, per BMC.
#[derive(Debug, Clone)]
pub struct StoreMemory(pub Store);

#[async_trait]
impl ProtocolMemory for StoreMemory {
    async fn recall(&self, bmc: &str) -> Result<Option<BmcProtocol>, BoxError> {
        // An unreadable value (written by a newer version, say) means "probe again", not an error.
        Ok(self.0.remembered_protocol(bmc).await?.and_then(|p| p.parse().ok()))
    }

    async fn remember(&self, bmc: &str, protocol: BmcProtocol) -> Result<(), BoxError> {
        Ok(self.0.remember_protocol(bmc, protocol.as_str()).await?)
    }

    async fn forget(&self, bmc: &str) -> Result<(), BoxError> {
        Ok(self.0.forget_protocol(bmc).await?)
    }
}
