//! Switch counters on a schedule: each read of a switch is compared with its previous read, and the
//! counters that rose past their threshold (`lifeline_netcfg::counters::Thresholds`) are evidence on their
//! ports. Why deltas: a counter is a running total since the switch (or an operator) last cleared it; its
//! value says nothing about now, and a value lower than the previous read is a reset — the new value is
//! the new baseline, never a negative rise.
//!
//! [`CounterWatch`] is pure (the reads and their times are handed in), so the server's schedule and the
//! tests drive it alike; [`crate::Lifeline::read_switch_counters`] does the reading.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use lifeline_netcfg::counters::{Evidence, Rising, Snapshot, Thresholds, rising};

use super::{PortEvidence, clock, ports_in_words};
use crate::context::Lifeline;
use crate::error::EngineError;

/// Every kind of counter evidence, for what a quiet read clears.
pub const KINDS: [Evidence; 5] =
    [Evidence::LinkFlap, Evidence::Pause, Evidence::PfcWatchdog, Evidence::Errors, Evidence::Drops];

/// What one read of one switch says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CounterVerdict {
    /// One per kind of counter that rose, with every port it rose on.
    pub evidence: Vec<PortEvidence>,
    /// The kinds (`switch-link-flap`, …) that rose on no port since the previous read: a fault of that
    /// kind on the switch is no longer seen. Empty after a first read (nothing to compare with).
    pub quiet: Vec<&'static str>,
}

/// The previous read of every switch.
#[derive(Debug, Default)]
pub struct CounterWatch {
    last: HashMap<String, Snapshot>,
    pub thresholds: Thresholds,
}

impl CounterWatch {
    pub fn new(thresholds: Thresholds) -> CounterWatch {
        CounterWatch { last: HashMap::new(), thresholds }
    }

    /// Compares `now` with the switch's previous read and keeps it as the next baseline.
    pub fn read(&mut self, switch: &str, now: Snapshot, at_ms: i64) -> CounterVerdict {
        let Some(before) = self.last.insert(switch.to_owned(), now) else { return CounterVerdict::default() };
        let now = &self.last[switch];
        let rises = rising(&before, now, &self.thresholds);
        let mut by: BTreeMap<&'static str, Vec<&Rising>> = BTreeMap::new();
        for r in &rises {
            by.entry(r.evidence.kind()).or_default().push(r);
        }
        let quiet = KINDS.iter().map(|e| e.kind()).filter(|k| !by.contains_key(k)).collect();
        let evidence = by
            .into_iter()
            .map(|(kind, rs)| {
                let mut ports: Vec<String> = rs.iter().map(|r| r.port.clone()).collect();
                super::sort_ports(&mut ports);
                // In the ports' reading order, as the port list is.
                let what: Vec<String> = ports
                    .iter()
                    .flat_map(|p| rs.iter().filter(move |r| &r.port == p))
                    .map(|r| r.describe())
                    .collect();
                PortEvidence {
                    kind: kind.to_owned(),
                    switch: switch.to_owned(),
                    message: format!(
                        "{switch} counters at {}: {} on {} ({})",
                        clock(at_ms),
                        kind.trim_start_matches("switch-"),
                        ports_in_words(&ports),
                        what.join("; ")
                    ),
                    ports,
                    at_ms,
                    detail: serde_json::json!({ "source": "switch-counters", "rising": rs }),
                    restore: None,
                }
            })
            .collect();
        CounterVerdict { evidence, quiet }
    }

    /// Forgets a switch (it left the inventory): its next read is a first read.
    pub fn forget(&mut self, switch: &str) {
        self.last.remove(switch);
    }
}

/// One switch's counters read, or why not.
#[derive(Debug)]
pub struct SwitchRead {
    pub switch: String,
    pub at_ms: i64,
    pub result: Result<lifeline_netcfg::counters::Read, EngineError>,
}

impl Lifeline {
    /// Reads the counters of every named switch over SSH, at most `concurrency` at once, each within
    /// `timeout` (connect, every command, and the session's close). `ports` gives the ports of a switch
    /// the inventory cables rails to (the per-port commands of Cumulus need them). One switch that cannot
    /// be read costs its own row only.
    pub async fn read_switch_counters(
        &self,
        switches: &[String],
        ports: impl Fn(&str) -> Vec<String>,
        concurrency: usize,
        timeout: Duration,
    ) -> Result<Vec<SwitchRead>, EngineError> {
        let pins: Arc<dyn lifeline_netcfg::HostKeyPins> = self.backup_context(false).await?.pins;
        let ports = &ports;
        let rows = futures::stream::iter(switches.iter().cloned())
            .map(|name| {
                let pins = pins.clone();
                async move {
                    let result = async {
                        let mut t = self.switch(&name)?;
                        // The whole read, connect to close, within `timeout` (read_counters enforces it).
                        t.ssh.timeouts.total = timeout;
                        lifeline_netcfg::counters::read_counters(&t, pins, &ports(&name))
                            .await
                            .map_err(|e| EngineError::failed_by(&name, "reading counters", e))
                    }
                    .await;
                    SwitchRead { switch: name, at_ms: lifeline_store::now_ms(), result }
                }
            })
            .buffer_unordered(concurrency.max(1))
            .collect::<Vec<_>>()
            .await;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use lifeline_netcfg::counters::{Counter, PortCounters};

    use super::*;

    fn snap(rows: &[(&str, Counter, u64)]) -> Snapshot {
        let mut s = Snapshot::default();
        s.merge(
            rows.iter()
                .map(|(p, c, v)| PortCounters {
                    port: (*p).to_owned(),
                    counters: [(*c, *v)].into_iter().collect(),
                    last_flap: None,
                })
                .collect(),
        );
        s
    }

    fn flaps() -> Counter {
        Counter::LinkFlaps
    }

    #[test]
    fn a_first_read_is_a_baseline_and_a_rise_is_evidence_on_its_port() {
        let mut w = CounterWatch::default();
        let first = w.read("leaf-a", snap(&[("Ethernet8", flaps(), 3), ("Ethernet16", flaps(), 7)]), 1_000);
        assert_eq!(first, CounterVerdict::default());
        let v = w.read("leaf-a", snap(&[("Ethernet8", flaps(), 5), ("Ethernet16", flaps(), 7)]), 61_000);
        assert_eq!(v.evidence.len(), 1, "{v:#?}");
        let e = &v.evidence[0];
        assert_eq!(
            (e.kind.as_str(), e.switch.as_str(), e.ports.clone()),
            ("switch-link-flap", "leaf-a", vec!["Ethernet8".to_owned()])
        );
        assert!(
            e.message.starts_with("leaf-a counters at 00:01:01: link-flap on Ethernet8 ("),
            "{}",
            e.message
        );
        assert!(!v.quiet.contains(&"switch-link-flap") && v.quiet.contains(&"switch-port-errors"), "{v:#?}");
    }

    #[test]
    fn a_reset_counter_is_a_new_baseline_not_a_rise() {
        let mut w = CounterWatch::default();
        w.read("leaf-a", snap(&[("Ethernet8", flaps(), 900)]), 0);
        // Cleared on the switch: lower than before. No evidence, and the next read compares with 2.
        let v = w.read("leaf-a", snap(&[("Ethernet8", flaps(), 2)]), 1);
        assert!(v.evidence.is_empty(), "{v:#?}");
        assert!(v.quiet.contains(&"switch-link-flap"));
        let v = w.read("leaf-a", snap(&[("Ethernet8", flaps(), 4)]), 2);
        assert_eq!(v.evidence.len(), 1, "{v:#?}");
        assert!(v.evidence[0].message.contains("(2 -> 4)"), "{}", v.evidence[0].message);
    }

    #[test]
    fn switches_are_compared_with_themselves_only() {
        let mut w = CounterWatch::default();
        w.read("leaf-a", snap(&[("Ethernet8", flaps(), 1)]), 0);
        assert_eq!(w.read("leaf-b", snap(&[("Ethernet8", flaps(), 50)]), 1), CounterVerdict::default());
        w.forget("leaf-a");
        assert_eq!(w.read("leaf-a", snap(&[("Ethernet8", flaps(), 60)]), 2), CounterVerdict::default());
    }
}
