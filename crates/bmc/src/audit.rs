//! The audit hook: every action on a BMC is written down before it is attempted (intent) and after
//! (outcome), with structured detail. The lead implements [`AuditSink`] on the store's audit log.
//!
//! Rule: no action without its audit row. If the intent cannot be written, the action is refused
//! ([`crate::BmcError::AuditUnavailable`]); an outcome that cannot be written is logged and reported, since
//! the action has already happened and cannot be undone.

use std::sync::Mutex;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use lifeline_types::AuditAction;
use serde::Serialize;

use crate::error::BoxError;

/// Identifier the sink hands back for an intent, quoted by its outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct AuditId(pub i64);

/// Written before acting.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditIntent {
    pub at: DateTime<Utc>,
    /// Target name (inventory device name).
    pub bmc: String,
    /// `power.cycle`, `sel.clear`, `hygiene.login`: the audit log's closed set.
    pub action: AuditAction,
    /// Caller's idempotency key, if any.
    pub request_id: Option<String>,
    pub detail: serde_json::Value,
}

/// Written after acting (or after deciding not to).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditOutcome {
    pub at: DateTime<Utc>,
    pub intent: AuditId,
    pub bmc: String,
    pub action: AuditAction,
    /// The action did what was asked (for power: the target state was confirmed).
    pub ok: bool,
    pub detail: serde_json::Value,
}

#[async_trait]
pub trait AuditSink: Send + Sync {
    async fn intent(&self, rec: &AuditIntent) -> Result<AuditId, BoxError>;
    async fn outcome(&self, rec: &AuditOutcome) -> Result<(), BoxError>;
}

/// One row of [`MemoryAuditSink`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum AuditRow {
    Intent { id: AuditId, rec: AuditIntent },
    Outcome(AuditOutcome),
}

/// In-memory audit log (tests, `lifeline demo`).
#[derive(Debug, Default)]
pub struct MemoryAuditSink(Mutex<Vec<AuditRow>>);

impl MemoryAuditSink {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn rows(&self) -> Vec<AuditRow> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

#[async_trait]
impl AuditSink for MemoryAuditSink {
    async fn intent(&self, rec: &AuditIntent) -> Result<AuditId, BoxError> {
        let mut rows = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let id = AuditId(rows.len() as i64 + 1);
        rows.push(AuditRow::Intent { id, rec: rec.clone() });
        Ok(id)
    }
    async fn outcome(&self, rec: &AuditOutcome) -> Result<(), BoxError> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(AuditRow::Outcome(rec.clone()));
        Ok(())
    }
}
