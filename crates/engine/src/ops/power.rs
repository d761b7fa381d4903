//! Power: read the state of many BMCs, or act on them (confirmed, one action per request, one actor per
//! target at a time).

use futures::StreamExt;
use lifeline_bmc::PowerReport;
use lifeline_types::{PowerAction, PowerState};
use serde::Serialize;

use crate::context::Lifeline;
use crate::error::{EngineError, Result};
use crate::ops::{Acted, Row};
use crate::targets::BmcSelection;

/// `power status` for one BMC.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct PowerStatus {
    pub bmc: String,
    pub power: PowerState,
}

/// A power action's result on one BMC.
pub type PowerOutcome = Acted<PowerReport>;

impl PowerOutcome {
    /// Whether the requested state was confirmed (a replay answers from the stored report).
    pub fn confirmed(&self) -> bool {
        match self {
            Acted::Fresh(r) | Acted::Delayed { value: r, .. } => r.confirmed,
            Acted::Replayed { outcome, .. } => {
                outcome.get("confirmed").and_then(|v| v.as_bool()).unwrap_or(false)
                    || outcome.pointer("/outcome/confirmed").and_then(|v| v.as_bool()).unwrap_or(false)
            }
        }
    }
}

impl Lifeline {
    pub async fn power_status(&self, sel: &BmcSelection) -> Result<Vec<Row<PowerStatus>>> {
        self.each_bmc(sel, |bmc| async move {
            let power = bmc.power_state().await?;
            Ok(PowerStatus { bmc: bmc.name().to_owned(), power })
        })
        .await
    }

    /// Acts on every selected BMC; rows come back in selection order. How long to wait for the state is
    /// the pool's `power.timeout` ([`Lifeline::with_bmc_options`]).
    pub async fn power(&self, sel: &BmcSelection, action: PowerAction) -> Result<Vec<Row<PowerOutcome>>> {
        let pool = self.bmc_pool().await?;
        let verb = lifeline_types::AuditAction::power(action);
        let rows = futures::stream::iter(sel.bmcs.iter().cloned())
            .map(|b| {
                let bmc = pool.bmc(b.target);
                async move {
                    let name = bmc.name().to_owned();
                    let r = self
                        .guarded(&name, verb, |request_id| async move {
                            bmc.power(action, Some(request_id))
                                .await
                                .map_err(|source| EngineError::Bmc { target: bmc.name().to_owned(), source })
                        })
                        .await;
                    Row::new("bmc", name, r)
                }
            })
            .buffer_unordered(crate::ops::PER_BMC_CONCURRENCY)
            .collect::<Vec<_>>()
            .await;
        Ok(order(rows, &sel.names()))
    }
}

/// Puts rows back in the order the targets were named.
pub(crate) fn order<T>(mut rows: Vec<Row<T>>, names: &[&str]) -> Vec<Row<T>> {
    rows.sort_by_key(|r| names.iter().position(|n| *n == r.target).unwrap_or(usize::MAX));
    rows
}
