//! The figures operators alert on, read for `/metrics` at scrape time: how old each switch's newest backup
//! is, runs by state, console log bytes on disk, and the sweep's coverage (the share of the inventory's BMCs
//! that some replica read recently). Fleet-wide from the store, so every replica reports the same numbers.

use std::time::Duration;

pub use lifeline_store::FleetGauges;

use crate::context::Lifeline;
use crate::error::Result;

/// [`FleetGauges`] and the sweep's coverage over the inventory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorGauges {
    /// Runs by state, each switch's newest backup, console log bytes.
    pub fleet: FleetGauges,
    /// BMCs the inventory names.
    pub bmcs: usize,
    /// Of those, the ones with a sweep observation within the window.
    pub swept: usize,
}

impl OperatorGauges {
    /// `swept / bmcs`; 1 for an inventory without BMCs (nothing left unswept).
    pub fn coverage(&self) -> f64 {
        if self.bmcs == 0 { 1.0 } else { self.swept as f64 / self.bmcs as f64 }
    }
}

impl Lifeline {
    /// `window`: how recent a sweep must be to count (a few sweep intervals).
    pub async fn operator_gauges(&self, window: Duration) -> Result<OperatorGauges> {
        let store = self.store().await?;
        let gauges = store.fleet_gauges().await?;
        let since = lifeline_store::now_ms() - i64::try_from(window.as_millis()).unwrap_or(i64::MAX);
        let swept: std::collections::HashSet<String> = store.swept_since(since).await?.into_iter().collect();
        let inv = self.inventory()?;
        let bmcs: Vec<&str> =
            inv.devices.iter().filter(|d| d.bmc.is_some()).map(|d| d.name.as_str()).collect();
        let covered = bmcs.iter().filter(|n| swept.contains(**n)).count();
        Ok(OperatorGauges { fleet: gauges, bmcs: bmcs.len(), swept: covered })
    }
}
