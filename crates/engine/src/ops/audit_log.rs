//! Reading the audit log: who did what, when, and how it ended.

pub use lifeline_store::{AuditEntry, AuditRow};

use crate::context::Lifeline;
use crate::error::Result;

impl Lifeline {
    /// Newest first; `target` filters to one device.
    pub async fn audit_log(&self, target: Option<&str>, limit: i64) -> Result<Vec<AuditRow>> {
        Ok(self.store().await?.audit_log(target, limit).await?)
    }
}
