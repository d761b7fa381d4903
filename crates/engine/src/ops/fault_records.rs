//! Fault records as stored: what the fault intake raised, read and acknowledged by operators and resolved
//! by the run that proved the fault gone.
//!
//! Why apart from `fault_rules`: the rules decide what a fault is from an observation; these operations
//! only keep and read the records, for every front end alike.

pub use lifeline_store::FaultRow;
use lifeline_types::AuditAction;

use crate::audit::Outcome;
use crate::context::Lifeline;
use crate::error::{EngineError, Result};

impl Lifeline {
    /// Newest first; `state` filters (`open`, `acked`, `resolved`).
    pub async fn faults(&self, state: Option<&str>, limit: i64) -> Result<Vec<FaultRow>> {
        Ok(self.store().await?.faults(state, limit).await?)
    }

    pub async fn fault_record(&self, id: i64) -> Result<Option<FaultRow>> {
        Ok(self.store().await?.fault(id).await?)
    }

    /// Acknowledges an open fault as this context's actor, audited; the fault as it is now. A fault that
    /// is not open is refused.
    pub async fn fault_ack(&self, id: i64) -> Result<FaultRow> {
        let store = self.store().await?;
        let audit = self.audit().await?;
        let f = store
            .fault(id)
            .await?
            .ok_or_else(|| EngineError::NotFound { target: id.to_string(), what: "no such fault".into() })?;
        if !store.fault_ack(id, audit.actor()).await? {
            return Err(EngineError::Refused {
                target: f.device,
                reason: format!("fault {id} is {}, not open", f.state),
            });
        }
        audit
            .record(
                AuditAction::FaultAck,
                &f.device,
                Outcome::Ok,
                None,
                serde_json::json!({ "fault": id, "kind": f.kind }),
            )
            .await?;
        store
            .fault(id)
            .await?
            .ok_or_else(|| EngineError::NotFound { target: id.to_string(), what: "no such fault".into() })
    }

    /// Resolves the open faults of `kind` on `device`; returns how many were open.
    pub async fn fault_resolve(&self, kind: &str, device: &str) -> Result<u64> {
        Ok(self.store().await?.fault_resolve(kind, device).await?)
    }
}
