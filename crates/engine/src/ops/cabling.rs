//! `inventory verify-cabling`: the inventory's rail → leaf/port map against the LLDP neighbours every
//! leaf reports, mismatches named (swapped rails, a node on the wrong leaf, an unplugged port), and the
//! cabling fault rule applied to the store's fault records.
//!
//! Reading is bounded like a backup run: a few switches at a time, each under its own total time limit,
//! one switch that cannot be read never hides the others (its cables are reported as not checked).

use std::collections::{BTreeMap, BTreeSet};

use futures::StreamExt;
use lifeline_netcfg::lldp::{self, CablingReport, Expected, Mismatch};
use lifeline_types::Platform;
use serde::Serialize;

use crate::context::Lifeline;
use crate::error::Result;
use crate::fault_rules::cabling::{CABLING, verdict};

/// Switches read at once (each is one SSH session on the management network).
const CONCURRENCY: usize = 8;

/// What one switch said.
#[derive(Debug, Clone, Serialize)]
pub struct SwitchRead {
    pub switch: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform: Option<Platform>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<&'static str>,
    /// Neighbours listed (absent when the switch could not be read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub neighbors: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The `cabling` fault records changed by this run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FaultChanges {
    pub raised: Vec<String>,
    pub resolved: Vec<String>,
}

/// The result of `verify-cabling`.
#[derive(Debug, Clone, Serialize)]
pub struct CablingRun {
    pub switches: Vec<SwitchRead>,
    /// Cables the inventory describes (rails with a leaf and a port).
    pub cables: usize,
    /// Cables on switches that were read.
    pub checked: usize,
    pub ok: usize,
    pub mismatches: Vec<Mismatch>,
    pub faults: FaultChanges,
}

impl CablingRun {
    /// Clean: every switch read and every cable where the inventory says.
    pub fn clean(&self) -> bool {
        self.mismatches.is_empty() && self.switches.iter().all(|s| s.error.is_none())
    }
}

impl Lifeline {
    /// The cables the inventory describes: every rail with a leaf and a port.
    pub fn expected_cabling(&self) -> Result<Vec<Expected>> {
        let inv = self.inventory()?;
        Ok(inv
            .devices
            .iter()
            .flat_map(|d| {
                d.rails.iter().filter_map(move |r| {
                    Some(Expected {
                        switch: r.leaf.clone()?,
                        port: r.port.clone()?,
                        device: d.name.to_string(),
                        nic: r.netdev.clone().unwrap_or_else(|| r.hca.clone()),
                        hca: r.hca.clone(),
                    })
                })
            })
            .collect())
    }

    /// Reads every leaf the inventory cables a rail to, compares, and raises or resolves `cabling`
    /// faults by the rule.
    pub async fn verify_cabling(&self) -> Result<CablingRun> {
        let expected = self.expected_cabling()?;
        let leaves: BTreeSet<String> = expected.iter().map(|e| e.switch.clone()).collect();
        let pins = self.backup_context(false).await?.pins;
        let reads: Vec<(SwitchRead, Option<Vec<lldp::Neighbor>>)> = futures::stream::iter(leaves)
            .map(|name| {
                let pins = pins.clone();
                async move {
                    let target = match self.switch(&name) {
                        Ok(t) => t,
                        Err(e) => {
                            let r = SwitchRead {
                                switch: name,
                                platform: None,
                                command: None,
                                neighbors: None,
                                error: Some(e.to_string()),
                            };
                            return (r, None);
                        }
                    };
                    let platform = Some(target.platform);
                    match lldp::read_neighbors(&target, pins).await {
                        Ok(read) => {
                            let r = SwitchRead {
                                switch: name,
                                platform,
                                command: Some(read.command),
                                neighbors: Some(read.neighbors.len()),
                                error: None,
                            };
                            (r, Some(read.neighbors))
                        }
                        Err(e) => {
                            let (command, _) = lldp::command(target.platform);
                            let r = SwitchRead {
                                switch: name,
                                platform,
                                command: Some(command),
                                neighbors: None,
                                error: Some(e.to_string()),
                            };
                            (r, None)
                        }
                    }
                }
            })
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
        let mut switches = Vec::new();
        let mut seen = BTreeMap::new();
        for (r, ns) in reads {
            if let Some(ns) = ns {
                seen.insert(r.switch.clone(), ns);
            }
            switches.push(r);
        }
        switches.sort_by(|a, b| a.switch.cmp(&b.switch));
        let report: CablingReport = lldp::compare(&expected, &seen);
        let read: BTreeSet<String> = seen.keys().cloned().collect();
        let faults = self.apply_cabling_rule(&expected, &report, &read).await?;
        Ok(CablingRun {
            switches,
            cables: expected.len(),
            checked: report.checked,
            ok: report.ok,
            mismatches: report.mismatches,
            faults,
        })
    }

    async fn apply_cabling_rule(
        &self,
        expected: &[Expected],
        report: &CablingReport,
        read: &BTreeSet<String>,
    ) -> Result<FaultChanges> {
        let v = verdict(expected, report, read);
        let store = self.store().await?;
        let mut changes = FaultChanges::default();
        for (device, f) in &v.raise {
            store.fault_raise(CABLING, device, f.severity, &f.message, &f.detail).await?;
            changes.raised.push(device.clone());
        }
        for device in &v.clear {
            if store.fault_resolve(CABLING, device).await? > 0 {
                changes.resolved.push(device.clone());
            }
        }
        Ok(changes)
    }
}
