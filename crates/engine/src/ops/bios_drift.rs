//! BIOS drift kept per node: the scheduled read under `lifeline serve` (`[server] bios-drift-interval`)
//! reads every Redfish BMC's `Bios` against the golden profile of its role, a few at once, and stores each
//! node's drift, so the API and the web console's fleet view show drifted nodes without asking every BMC
//! on each page load. The read is `bios diff`'s ([`super::bios`]): one definition of drift.
//!
//! IPMI-only BMCs have no BIOS settings to read and are left out (`bios show` says so in words for one).

use std::time::Duration;

use futures::StreamExt;
pub use lifeline_store::BiosDriftRow;
use lifeline_types::BmcProtocol;

use crate::context::Lifeline;
use crate::error::{EngineError, Result};
use crate::ops::Row;
use crate::ops::bios::{BiosDiff, BiosProfile, diff_of};
use crate::targets::{BmcSelection, SelectedBmc};

impl Lifeline {
    /// Reads each Redfish BMC of `sel` against `profile` (`bios diff`'s drift), at most `concurrency` at
    /// once, each within `timeout` (the shared BMC pool keeps every BMC within its own connection limits,
    /// beside the sweeps and the operators' requests), and stores each node's drift or why it was not read.
    pub async fn bios_read_drift(
        &self,
        sel: &BmcSelection,
        profile: &BiosProfile,
        concurrency: usize,
        timeout: Duration,
    ) -> Result<Vec<Row<BiosDiff>>> {
        let pool = self.bmc_pool().await?;
        let store = self.store().await?.clone();
        let redfish: Vec<SelectedBmc> =
            sel.bmcs.iter().filter(|b| b.target.protocol != BmcProtocol::Ipmi).cloned().collect();
        let reads: Vec<(SelectedBmc, Result<BiosDiff>)> = futures::stream::iter(redfish)
            .map(|b| {
                let bmc = pool.bmc(b.target.clone());
                async move {
                    let name = b.name().to_owned();
                    let r = match tokio::time::timeout(timeout, bmc.bios_show()).await {
                        Ok(Ok(s)) => Ok(diff_of(&b, profile, &s)),
                        Ok(Err(source)) => Err(EngineError::Bmc { target: name, source }),
                        Err(_) => Err(EngineError::Failed {
                            target: name,
                            what: format!("no BIOS read within {}", humantime::format_duration(timeout)),
                            source: None,
                        }),
                    };
                    (b, r)
                }
            })
            .buffer_unordered(concurrency.max(1))
            .collect()
            .await;
        let mut rows = Vec::with_capacity(reads.len());
        for (b, r) in reads {
            let role = b.role.as_ref().map(|r| r.to_string());
            match &r {
                Ok(d) => {
                    let drift = serde_json::to_value(&d.drift)
                        .map_err(|e| EngineError::internal("BIOS drift as JSON", e))?;
                    let checked = i64::try_from(d.checked).unwrap_or(i64::MAX);
                    store.set_bios_drift(b.name(), role.as_deref(), checked, &drift).await?;
                }
                Err(e) => store.set_bios_drift_error(b.name(), role.as_deref(), &e.chain()).await?,
            }
            rows.push(Row::new("bmc", b.name(), r));
        }
        rows.sort_by(|a, b| a.target.cmp(&b.target));
        Ok(rows)
    }

    /// The stored drift of every node read (`device`: that node's only).
    pub async fn bios_drifts(&self, device: Option<&str>) -> Result<Vec<BiosDriftRow>> {
        Ok(self.store().await?.bios_drifts(device).await?)
    }

    /// Forgets the stored drift of nodes not in `keep` (gone from the inventory, or IPMI-only now).
    pub async fn bios_drift_forget_others(&self, keep: &[String]) -> Result<u64> {
        Ok(self.store().await?.retain_bios_drift(keep).await?)
    }
}
