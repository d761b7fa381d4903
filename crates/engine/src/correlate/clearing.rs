//! Shared console faults resolved by their members' own evidence going away. A `shared-rail-down` on a
//! leaf (or a `shared-console-*` on a rack or PDU) is one fault standing for N members' faults that were
//! never raised; it is gone only when each member's own evidence is gone, proven on that member: its rail
//! seen up on its console after the link down (`rdma3: Link up`, `mlx5_3: Port: 1 Link ACTIVE`), or, for
//! a console fault of a boot, a clean boot of the member after its line
//! ([`crate::fault_rules::console::clears`], the rule that resolves a node's own console fault).
//!
//! The [`Ledger`] keeps, per member unit, the newest failing observation and the newest clearing evidence;
//! [`Ledger::progress`] reads a shared fault's member list (its detail, as the fault intake records it) and
//! says which members are proven clear. The fault is resolvable only when every member is: never on a
//! partial set, never on the absence of news (a member with no evidence after its failure keeps it open),
//! and a member that failed again after its evidence cleared keeps it open too.

use std::collections::HashMap;

use serde::Serialize;

use super::{Observation, Unit};
use crate::fault_rules::console::{self as rules, CleanBoot, LinkUp, RAIL_DOWN};

/// The member kind whose shared fault the members' own evidence resolves (`shared-rail-down` ->
/// `rail-down`, `shared-console-kernel-panic` -> `console-kernel-panic`); `None` for the sweep's kinds
/// (resolved by a sweep round, [`super::sweep::members_cleared`]) and for `console-link-down`, a link the
/// inventory does not list (nothing names it up again).
pub fn member_kind(shared_kind: &str) -> Option<&str> {
    let k = shared_kind.strip_prefix("shared-")?;
    let link = format!("{}{}", rules::CONSOLE_PREFIX, lifeline_console::scan::FindingKind::LinkDown.as_str());
    (k == RAIL_DOWN || (k.starts_with(rules::CONSOLE_PREFIX) && k != link)).then_some(k)
}

/// What proved one member's evidence gone.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemberCleared {
    pub device: String,
    pub rail: Option<String>,
    /// The member's kind (`rail-down`, `console-kernel-panic`).
    pub kind: String,
    /// `link-up` or `clean-boot`.
    pub by: &'static str,
    /// The console line(s) that prove it, with their times.
    pub evidence: String,
    /// When the evidence was seen (the link-up line, the clean boot's kernel start).
    pub at_ms: i64,
}

/// A shared fault's members against the evidence held: those proven clear, of how many.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Progress {
    pub cleared: Vec<MemberCleared>,
    pub members: usize,
}

impl Progress {
    /// Every member proven clear (and there is at least one).
    pub fn all(&self) -> bool {
        self.members > 0 && self.cleared.len() == self.members
    }
}

/// The newest failing and clearing evidence per member unit; see the module documentation. Bounded by
/// the inventory (one entry per unit and kind).
#[derive(Debug, Default)]
pub struct Ledger {
    failing: HashMap<(Unit, String), i64>,
    link_up: HashMap<Unit, LinkUp>,
    boots: HashMap<String, CleanBoot>,
}

fn ts(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

impl Ledger {
    /// A failing observation (what the correlator is given): a later clearing must be newer than it.
    pub fn failing(&mut self, o: &Observation) {
        let at = self.failing.entry((o.unit.clone(), o.kind.clone())).or_insert(o.at_ms);
        *at = (*at).max(o.at_ms);
    }

    pub fn link_up(&mut self, up: LinkUp) {
        let unit = Unit { device: up.device.clone(), rail: Some(up.rail.clone()) };
        match self.link_up.get(&unit) {
            Some(old) if old.at > up.at => {}
            _ => {
                self.link_up.insert(unit, up);
            }
        }
    }

    pub fn clean_boot(&mut self, b: CleanBoot) {
        match self.boots.get(&b.device) {
            Some(old) if old.kernel_at > b.kernel_at => {}
            _ => {
                self.boots.insert(b.device.clone(), b);
            }
        }
    }

    /// Whether one member's own evidence (of `kind`, last seen at `at_ms` or later if observed again) is
    /// proven gone, and by what.
    pub fn member(&self, device: &str, rail: Option<&str>, kind: &str, at_ms: i64) -> Option<MemberCleared> {
        let unit = Unit { device: device.to_owned(), rail: rail.map(str::to_owned) };
        let seen = self.failing.get(&(unit.clone(), kind.to_owned())).map_or(at_ms, |t| (*t).max(at_ms));
        let cleared = |by, evidence, at_ms| MemberCleared {
            device: device.to_owned(),
            rail: unit.rail.clone(),
            kind: kind.to_owned(),
            by,
            evidence,
            at_ms,
        };
        if kind == RAIL_DOWN {
            let up = self.link_up.get(&unit).filter(|u| u.at.timestamp_millis() > seen)?;
            return Some(cleared(
                "link-up",
                format!("{}: {}", ts(up.at), up.line.trim()),
                up.at.timestamp_millis(),
            ));
        }
        let boot = self.boots.get(device).filter(|b| rail.is_none() && rules::clears(kind, seen, b))?;
        Some(cleared(
            "clean-boot",
            format!(
                "kernel started {}: {}; ready {}: {}",
                ts(boot.kernel_at),
                boot.kernel.trim(),
                ts(boot.ready_at),
                boot.ready.trim()
            ),
            boot.kernel_at.timestamp_millis(),
        ))
    }

    /// A shared fault's members (its detail's `members`: `device`, `rail`, `kind`, `at_ms`) against the
    /// evidence held. A member entry that cannot be read counts as not cleared.
    pub fn progress(&self, detail: &serde_json::Value) -> Progress {
        let members = detail.get("members").and_then(|m| m.as_array()).map(Vec::as_slice).unwrap_or_default();
        let cleared = members
            .iter()
            .filter_map(|m| {
                let device = m.get("device")?.as_str()?;
                let kind = m.get("kind")?.as_str()?;
                let at_ms = m.get("at_ms")?.as_i64()?;
                self.member(device, m.get("rail").and_then(|r| r.as_str()), kind, at_ms)
            })
            .collect();
        Progress { cleared, members: members.len() }
    }
}

/// Whether a shared fault's detail lists `device` among its members.
pub fn has_member(detail: &serde_json::Value, device: &str) -> bool {
    detail
        .get("members")
        .and_then(|m| m.as_array())
        .is_some_and(|m| m.iter().any(|x| x.get("device").and_then(|d| d.as_str()) == Some(device)))
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};

    use super::*;

    fn t(ms: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(ms).unwrap()
    }

    fn up(device: &str, rail: &str, ms: i64) -> LinkUp {
        LinkUp {
            device: device.into(),
            rail: rail.into(),
            line: format!("mlx5_core 0000:12:00.0 rdma1: Link up ({device})"),
            at: t(ms),
        }
    }

    fn boot(device: &str, kernel_ms: i64) -> CleanBoot {
        CleanBoot {
            device: device.into(),
            kernel: "Linux version 6.1.0-18-amd64".into(),
            kernel_at: t(kernel_ms),
            ready: "Reached target multi-user.target - Multi-User System.".into(),
            ready_at: t(kernel_ms + 20_000),
        }
    }

    fn rail_down(device: &str, at_ms: i64) -> Observation {
        Observation {
            kind: RAIL_DOWN.into(),
            unit: Unit { device: device.into(), rail: Some("mlx5_1".into()) },
            severity: "warning".into(),
            message: String::new(),
            at_ms,
            detail: serde_json::Value::Null,
        }
    }

    /// A shared fault's detail as the fault intake writes it.
    fn detail(kind: &str, rail: Option<&str>, members: &[(&str, i64)]) -> serde_json::Value {
        let m: Vec<_> = members
            .iter()
            .map(|(d, at)| serde_json::json!({ "device": d, "rail": rail, "kind": kind, "message": "", "at_ms": at }))
            .collect();
        serde_json::json!({ "source": "correlation", "members": m })
    }

    #[test]
    fn a_shared_rail_fault_clears_only_when_every_members_link_is_seen_up() {
        let d = detail(RAIL_DOWN, Some("mlx5_1"), &[("n1", 1_000), ("n2", 1_100), ("n3", 1_200)]);
        let mut l = Ledger::default();
        assert!(!l.progress(&d).all(), "no news is no proof");
        assert_eq!(l.progress(&d).members, 3);
        l.link_up(up("n1", "mlx5_1", 5_000));
        l.link_up(up("n2", "mlx5_1", 5_100));
        let p = l.progress(&d);
        assert_eq!((p.cleared.len(), p.all()), (2, false), "two of three: {p:?}");
        // Another rail of n3 up, or n3's rail up before it went down, prove nothing about n3's rail.
        l.link_up(up("n3", "mlx5_0", 5_200));
        assert!(!l.progress(&d).all());
        let mut early = Ledger::default();
        early.link_up(up("n3", "mlx5_1", 900));
        assert!(early.member("n3", Some("mlx5_1"), RAIL_DOWN, 1_200).is_none());
        l.link_up(up("n3", "mlx5_1", 5_300));
        let p = l.progress(&d);
        assert!(p.all(), "{p:?}");
        assert_eq!(p.cleared[2].by, "link-up");
        assert!(p.cleared[2].evidence.contains("Link up (n3)"), "{p:?}");
    }

    #[test]
    fn a_member_that_failed_again_after_its_link_came_up_keeps_the_fault_open() {
        let d = detail(RAIL_DOWN, Some("mlx5_1"), &[("n1", 1_000), ("n2", 1_000)]);
        let mut l = Ledger::default();
        l.failing(&rail_down("n1", 1_000));
        l.link_up(up("n1", "mlx5_1", 2_000));
        l.link_up(up("n2", "mlx5_1", 2_000));
        assert!(l.progress(&d).all());
        // n1 flaps down again: its newest evidence is a failure.
        l.failing(&rail_down("n1", 3_000));
        assert!(!l.progress(&d).all());
        // An older link-up line arriving late does not replace the newer one.
        l.link_up(up("n1", "mlx5_1", 1_500));
        assert!(!l.progress(&d).all());
        l.link_up(up("n1", "mlx5_1", 4_000));
        assert!(l.progress(&d).all());
    }

    #[test]
    fn a_shared_console_fault_clears_with_a_clean_boot_of_every_member() {
        let kind = "console-kernel-panic";
        let d = detail(kind, None, &[("n1", 10_000), ("n2", 10_000)]);
        let mut l = Ledger::default();
        l.clean_boot(boot("n1", 20_000));
        // n2's boot started before its panic line: that boot printed it, it proves nothing.
        l.clean_boot(boot("n2", 9_000));
        assert_eq!(l.progress(&d).cleared.len(), 1);
        l.clean_boot(boot("n2", 30_000));
        let p = l.progress(&d);
        assert!(p.all(), "{p:?}");
        assert_eq!(p.cleared[0].by, "clean-boot");
        // A boot never proves a link up.
        let rail = detail(RAIL_DOWN, Some("mlx5_1"), &[("n1", 10_000), ("n2", 10_000)]);
        assert!(l.progress(&rail).cleared.is_empty());
    }

    #[test]
    fn which_shared_kinds_the_members_evidence_resolves() {
        assert_eq!(member_kind("shared-rail-down"), Some(RAIL_DOWN));
        assert_eq!(member_kind("shared-console-kernel-panic"), Some("console-kernel-panic"));
        assert_eq!(member_kind("shared-console-link-down"), None, "nothing names that link up");
        assert_eq!(member_kind("shared-bmc-unreachable"), None, "a sweep round resolves it");
        assert_eq!(member_kind("rail-down"), None);
        assert!(has_member(&detail(RAIL_DOWN, None, &[("n1", 0)]), "n1"));
        assert!(!has_member(&detail(RAIL_DOWN, None, &[("n1", 0)]), "n2"));
        assert!(!Progress { cleared: Vec::new(), members: 0 }.all(), "no members prove nothing");
    }
}
