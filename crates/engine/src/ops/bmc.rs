//! Reading BMCs (health, event log) and the BMC-level actions that are not power: SEL clear, certificate
//! trust, the credential hygiene audit.

use lifeline_bmc::{EventLog, HealthSummary, HygieneOptions, HygieneRow};
use lifeline_types::{AuditAction, Health};
use serde::Serialize;

use crate::audit::Outcome;
use crate::context::Lifeline;
use crate::error::{EngineError, Result};
use crate::ops::{Acted, Row};
use crate::targets::BmcSelection;

/// `sel --clear` on one BMC.
#[derive(Debug, Clone, Serialize)]
pub struct SelCleared {
    pub bmc: String,
    pub cleared: bool,
}

/// `bmc trust` on one BMC (the re-pin itself: [`crate::ops::trust`]).
#[derive(Debug, Clone, Serialize)]
pub struct Trusted {
    pub bmc: String,
    pub previous: Option<lifeline_types::Fingerprint>,
    pub current: lifeline_types::Fingerprint,
}

impl Lifeline {
    /// Sensors and the health rollup of each BMC; each reading is also kept as an observation.
    pub async fn health(&self, sel: &BmcSelection) -> Result<Vec<Row<HealthSummary>>> {
        let store = self.store().await?.clone();
        let store = &store;
        self.each_bmc(sel, |bmc| async move {
            let h = bmc.health().await?;
            if let Err(e) = store.observe(bmc.name(), "health", &serde_json::json!(h)).await {
                tracing::warn!(bmc = %bmc.name(), "observation not stored: {e}");
            }
            Ok(h)
        })
        .await
    }

    /// The newest `newest` entries of each BMC's event log.
    pub async fn sel(&self, sel: &BmcSelection, newest: usize) -> Result<Vec<Row<EventLog>>> {
        self.each_bmc(sel, |bmc| async move { bmc.events(newest).await }).await
    }

    /// Clears each BMC's event log (audited by the bmc crate, under the target's lease).
    pub async fn sel_clear(&self, sel: &BmcSelection) -> Result<Vec<Row<Acted<SelCleared>>>> {
        let pool = self.bmc_pool().await?;
        let mut rows = Vec::new();
        for b in &sel.bmcs {
            let bmc = pool.bmc(b.target.clone());
            let name = bmc.name().to_owned();
            let r = self
                .guarded(&name, AuditAction::SelClear, |_| async {
                    bmc.clear_events()
                        .await
                        .map(|()| SelCleared { bmc: name.clone(), cleared: true })
                        .map_err(|source| EngineError::Bmc { target: name.clone(), source })
                })
                .await;
            rows.push(Row::new("bmc", name, r));
        }
        Ok(rows)
    }

    /// Default credentials, IPMI cipher 0 / anonymous, bad certificates; one audit row per BMC.
    pub async fn bmc_hygiene(&self, sel: &BmcSelection, max_attempts: usize) -> Result<Vec<HygieneRow>> {
        if sel.bmcs.iter().any(|b| b.role.is_none()) {
            return Err(EngineError::bad_argument(
                "`audit bmc` tries default passwords and therefore only runs against inventory BMCs, not --bmc URLs",
            ));
        }
        let pool = self.bmc_pool().await?;
        let audit = self.audit().await?;
        let opts = HygieneOptions { max_failures_per_bmc: max_attempts, ..HygieneOptions::default() };
        let targets = sel.bmcs.iter().map(|b| b.target.clone()).collect();
        let rows = pool.hygiene_audit(targets, &opts).await;
        for row in &rows {
            let outcome = if row.worst() == Health::Ok { Outcome::Ok } else { Outcome::Failed };
            audit
                .record(
                    AuditAction::AuditBmc,
                    &row.bmc,
                    outcome,
                    None,
                    serde_json::json!({ "verdict": row.worst(), "attempts": row.attempts.len(), "failed_attempts": row.failed_attempts, "findings": row.findings }),
                )
                .await?;
        }
        Ok(rows)
    }
}
