//! Switch-side evidence beside the observations: what a leaf said about a port (its counters rose, its
//! config changed there, [`crate::switch_evidence`]) is kept for the correlation window and attached to
//! every rail verdict on that port — a member's own fault or the shared fault of its leaf or port group.
//! Evidence that arrives after the rail fault was raised re-reports that fault with it, once; the same
//! evidence read again (a port that keeps flapping) only refreshes it.

use lifeline_netcfg::counters::port_key;

use super::{ComponentKind, Correlator, Unit, Verdict};
use crate::switch_evidence::PortEvidence;

impl Correlator {
    /// Takes one piece of switch evidence; returns the verdicts it changes (re-reported with it).
    pub fn evidence(&mut self, e: PortEvidence) -> Vec<Verdict> {
        let same = |x: &PortEvidence| x.kind == e.kind && x.switch == e.switch && x.ports == e.ports;
        if let Some(x) = self.evidence.iter_mut().find(|x| same(x)) {
            // Seen again: fresher words and time, nothing new to tell.
            *x = e;
            return Vec::new();
        }
        let mut out = Vec::new();
        for i in 0..self.groups.len() {
            let g = &self.groups[i];
            if g.members.keys().any(|u| self.touches(&e, u)) {
                out.push(Verdict::Shared(self.report(i, Vec::new(), Vec::new(), false)));
            }
        }
        for o in &self.alone {
            if self.touches(&e, &o.unit) {
                out.push(Verdict::Own(o.clone()));
            }
        }
        self.evidence.push(e);
        out
    }

    /// Every piece of evidence held about the units of `v`, oldest first.
    pub fn evidence_for(&self, v: &Verdict) -> Vec<PortEvidence> {
        let units: Vec<&Unit> = match v {
            Verdict::Own(o) => vec![&o.unit],
            Verdict::Shared(s)
                if matches!(s.component.kind, ComponentKind::Leaf | ComponentKind::LeafPortGroup) =>
            {
                s.members.iter().map(|m| &m.unit).collect()
            }
            Verdict::Shared(_) => Vec::new(),
        };
        let mut out: Vec<PortEvidence> =
            self.evidence.iter().filter(|e| units.iter().any(|u| self.touches(e, u))).cloned().collect();
        out.sort_by_key(|e| e.at_ms);
        out
    }

    /// Whether `e` names the leaf port `unit`'s rail is cabled to.
    fn touches(&self, e: &PortEvidence, unit: &Unit) -> bool {
        let Some(rail) = unit.rail.as_deref() else { return false };
        let (Some(leaf), Some(port)) =
            (self.topology.leaf(&unit.device, rail), self.topology.port(&unit.device, rail))
        else {
            return false;
        };
        let port = port_key(port);
        leaf == e.switch && e.ports.iter().any(|p| port_key(p) == port)
    }

    /// Drops evidence older than the window at `now_ms`.
    pub(super) fn expire_evidence(&mut self, now_ms: i64, window_ms: i64) {
        self.evidence.retain(|e| now_ms - e.at_ms <= window_ms);
    }
}

/// A fault message with its evidence after it: "rail-down on 8 of 8 dependents of …; leaf-03 config changed
/// at 02:13:05: mtu 9100 → 1500 on Ethernet12–19".
pub fn with_evidence(message: &str, evidence: &[PortEvidence]) -> String {
    let mut m = message.to_owned();
    for e in evidence {
        m.push_str("; ");
        m.push_str(&e.message);
    }
    m
}
