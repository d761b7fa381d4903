//! `inventory verify-cabling`: the inventory's rail → leaf/port map against the LLDP neighbours every
//! leaf reports, mismatches named (swapped rails, a node on the wrong leaf, an unplugged port), and the
//! cabling fault rule applied to the store's fault records.
//!
//! The node's end of each cable comes from the agents' reports (`lifeline-agent` carries lldpd's JSON
//! under `lldp`, the server keeps each report as an `agent` observation): each NIC's neighbour is
//! compared with the inventory and with the switch's end, and the two ends disagreeing is a finding of
//! its own ([`lldp::sides`]).
//!
//! Reading is bounded like a backup run: a few switches at a time, each under its own total time limit,
//! one switch that cannot be read never hides the others (its cables are reported as not checked).

use std::collections::{BTreeMap, BTreeSet};

use futures::StreamExt;
use lifeline_netcfg::lldp::{self, CablingReport, Expected, Format, Mismatch, NodeFinding};
use lifeline_types::Platform;
use serde::Serialize;

use crate::context::Lifeline;
use crate::error::Result;
use crate::fault_rules::cabling::{CABLING, verdict};

/// Switches read at once (each is one SSH session on the management network).
const CONCURRENCY: usize = 8;
/// An agent report older than this says nothing about the cabling now (agents report every few minutes).
pub const NODE_REPORT_MAX_AGE_MS: i64 = 3600 * 1000;

/// What one node's agent reported of its NICs' LLDP neighbours.
#[derive(Debug, Clone, Serialize)]
pub struct NodeRead {
    pub device: String,
    /// When the report arrived (ms since the epoch).
    pub reported_at_ms: i64,
    /// How the agent read them (`lldpcli -f json show neighbors details`, or `file:PATH`).
    pub source: String,
    /// Neighbours heard (absent when the agent could not read them, or the report is too old).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub neighbors: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The node side of a run: each report used, and what the nodes' ends say.
#[derive(Debug, Clone, Default, Serialize)]
pub struct NodeSide {
    pub reports: Vec<NodeRead>,
    /// Cables whose node reported its NICs' neighbours.
    pub checked: usize,
    /// Of those, the ones whose NIC hears the inventory's switch and port.
    pub ok: usize,
    /// The two ends disagreeing, or the node's end alone where the switch was not read.
    pub findings: Vec<NodeFinding>,
}

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
    /// Ids of the records this run opened (not repeats): what a server hands to its fault policy.
    #[serde(skip)]
    pub opened: Vec<i64>,
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
    pub nodes: NodeSide,
    pub faults: FaultChanges,
}

impl CablingRun {
    /// Clean: every switch read and every cable where the inventory says.
    pub fn clean(&self) -> bool {
        self.mismatches.is_empty()
            && self.nodes.findings.is_empty()
            && self.switches.iter().all(|s| s.error.is_none())
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
        let (reports, heard) = self.node_lldp(&expected).await?;
        let sides = lldp::compare_sides(&expected, &seen, &heard);
        let read: BTreeSet<String> = seen.keys().cloned().collect();
        let faults = self.apply_cabling_rule(&expected, &report, &sides, &read).await?;
        Ok(CablingRun {
            switches,
            cables: expected.len(),
            checked: report.checked,
            ok: report.ok,
            mismatches: report.mismatches,
            nodes: NodeSide { reports, checked: sides.checked, ok: sides.ok, findings: sides.findings },
            faults,
        })
    }

    /// The newest agent report of every cabled device that carries an LLDP read: what each NIC hears.
    async fn node_lldp(
        &self,
        expected: &[Expected],
    ) -> Result<(Vec<NodeRead>, BTreeMap<String, Vec<lldp::Neighbor>>)> {
        let cabled: BTreeSet<&str> = expected.iter().map(|e| e.device.as_str()).collect();
        let now = lifeline_store::now_ms();
        let mut reads = Vec::new();
        let mut heard = BTreeMap::new();
        for o in self.store().await?.latest_observations("agent").await? {
            if !cabled.contains(o.device.as_str()) {
                continue;
            }
            let Some((read, neighbors)) = node_read(&o.device, o.observed_at_ms, &o.value, now) else {
                continue;
            };
            if let Some(ns) = neighbors {
                heard.insert(o.device.clone(), ns);
            }
            reads.push(read);
        }
        reads.sort_by(|a, b| a.device.cmp(&b.device));
        Ok((reads, heard))
    }

    async fn apply_cabling_rule(
        &self,
        expected: &[Expected],
        report: &CablingReport,
        sides: &lldp::NodeSideReport,
        read: &BTreeSet<String>,
    ) -> Result<FaultChanges> {
        let v = verdict(expected, report, sides, read);
        let store = self.store().await?;
        let mut changes = FaultChanges::default();
        for (device, f) in &v.raise {
            let (row, new) = store.fault_raise(CABLING, device, f.severity, &f.message, &f.detail).await?;
            if new {
                changes.opened.push(row.id);
            }
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

/// One agent observation's LLDP read (`value.report.lldp`); `None` when the report carries none.
fn node_read(
    device: &str,
    at_ms: i64,
    value: &serde_json::Value,
    now_ms: i64,
) -> Option<(NodeRead, Option<Vec<lldp::Neighbor>>)> {
    let l = value.get("report")?.get("lldp")?;
    let text = |k: &str| l.get(k).and_then(|v| v.as_str()).map(str::to_owned);
    let mut read = NodeRead {
        device: device.to_owned(),
        reported_at_ms: at_ms,
        source: text("source").unwrap_or_default(),
        neighbors: None,
        error: text("error"),
    };
    let age = now_ms.saturating_sub(at_ms);
    if age > NODE_REPORT_MAX_AGE_MS {
        read.error = Some(format!(
            "the newest report is {} old (more than {}): not used",
            lifeline_types::Human(std::time::Duration::from_millis(age.max(0) as u64)),
            lifeline_types::Human(std::time::Duration::from_millis(NODE_REPORT_MAX_AGE_MS as u64)),
        ));
        return Some((read, None));
    }
    let Some(output) = text("output") else { return Some((read, None)) };
    let ns = lldp::parse(Format::LldpdJson, &output);
    read.neighbors = Some(ns.len());
    Some((read, Some(ns)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_report_carries_the_node_end_and_an_old_one_is_not_used() {
        let out = include_str!("../../../netcfg/src/lldp/testdata/lldpd-node.json");
        let v = serde_json::json!({ "passed": true, "report": { "lldp": {
            "source": "lldpcli -f json show neighbors details", "output": out } } });
        let (r, ns) = node_read("gpu-node-01", 1_000, &v, 2_000).unwrap();
        assert_eq!((r.neighbors, r.error.as_deref()), (Some(2), None));
        assert_eq!(ns.unwrap()[1].port_descr.as_deref(), Some("Ethernet8"));
        let (r, ns) = node_read("gpu-node-01", 0, &v, NODE_REPORT_MAX_AGE_MS + 1).unwrap();
        assert!(ns.is_none() && r.error.unwrap().contains("not used"));
        let failed = serde_json::json!({ "report": { "lldp": { "source": "lldpcli", "error": "lldpcli not found" } } });
        let (r, ns) = node_read("n", 0, &failed, 0).unwrap();
        assert!(ns.is_none() && r.error.as_deref() == Some("lldpcli not found"));
        assert!(node_read("n", 0, &serde_json::json!({ "report": {} }), 0).is_none());
    }
}
