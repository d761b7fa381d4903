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

/// The `[server]` threshold keys with their values (none: the default), for `config check`.
pub fn threshold_keys(s: &crate::config::ServeSection) -> [(&'static str, Option<u64>); 5] {
    [
        ("switch-flap-threshold", s.switch_flap_threshold),
        ("switch-error-threshold", s.switch_error_threshold),
        ("switch-drop-threshold", s.switch_drop_threshold),
        ("switch-pause-threshold", s.switch_pause_threshold),
        ("switch-watchdog-threshold", s.switch_watchdog_threshold),
    ]
}

/// The thresholds `[server]` configures, each key not given at its default.
pub fn thresholds(s: &crate::config::ServeSection) -> Thresholds {
    let d = Thresholds::default();
    Thresholds {
        flaps: s.switch_flap_threshold.unwrap_or(d.flaps),
        errors: s.switch_error_threshold.unwrap_or(d.errors),
        drops: s.switch_drop_threshold.unwrap_or(d.drops),
        pause: s.switch_pause_threshold.unwrap_or(d.pause),
        watchdog: s.switch_watchdog_threshold.unwrap_or(d.watchdog),
    }
}

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

    /// Sets the read `now` is compared with: the switch's previous read, whichever replica made it
    /// (kept in the store). Replaces what this watch remembers.
    pub fn baseline(&mut self, switch: &str, before: Snapshot) {
        self.last.insert(switch.to_owned(), before);
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

    fn config(text: &str) -> crate::config::ServerConfig {
        toml::from_str(text).unwrap()
    }

    /// The same two reads under the default thresholds and under `[server]`'s: a pause rise of 50,000
    /// frames and one flap are evidence or not as the configuration says.
    #[test]
    fn a_configured_threshold_changes_the_verdict() {
        let before = snap(&[("Ethernet8", Counter::PfcRx(3), 1_000), ("Ethernet16", flaps(), 4)]);
        let now = snap(&[("Ethernet8", Counter::PfcRx(3), 51_000), ("Ethernet16", flaps(), 5)]);
        let verdict = |cfg: &str| {
            let mut w = CounterWatch::new(thresholds(&config(cfg).server));
            w.baseline("leaf-a", before.clone());
            let v = w.read("leaf-a", now.clone(), 0);
            v.evidence.into_iter().map(|e| (e.kind, e.ports)).collect::<Vec<_>>()
        };
        let p = |x: &str| vec![x.to_owned()];
        // Defaults: a storm is 100,000 pause frames; one flap counts.
        assert_eq!(verdict(""), [("switch-link-flap".to_owned(), p("Ethernet16"))]);
        assert_eq!(
            verdict("[server]\nswitch-pause-threshold = 50000\nswitch-flap-threshold = 2\n"),
            [("switch-pfc-storm".to_owned(), p("Ethernet8"))]
        );
        assert_eq!(verdict("[server]\nswitch-pause-threshold = 50001\nswitch-flap-threshold = 2\n"), []);
        assert_eq!(thresholds(&config("").server), Thresholds::default());
        let t = thresholds(&config("[server]\nswitch-error-threshold = 7\nswitch-drop-threshold = 9\nswitch-watchdog-threshold = 4\n").server);
        assert_eq!((t.errors, t.drops, t.watchdog, t.flaps, t.pause), (7, 9, 4, 1, 100_000));
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
