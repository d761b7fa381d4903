//! Sweep faults through correlation. When the OOB switch a set of BMCs hangs off dies, or a PDU or a rack
//! feed drops, one sweep sees N `bmc-unreachable` (or N `health-critical` power-supply alerts): the part
//! they share is blamed with the same score as the console's findings ([`super::Correlator`]), and the N
//! node runbooks are not started. A round (every replica's sweep of one slot, [`super::rounds`]) is a
//! complete batch, so its observations are decided at once ([`super::Correlator::flush`]), not after a hold.
//!
//! Which parts may explain which kind is a choice about physics, kept here in one table:
//! - `bmc-unreachable`: the OOB switch the BMC is cabled to, its PDUs, its rack (a BMC on standby power
//!   goes dark with its feed). Preferred in that order when two explain the same BMCs equally: the OOB
//!   switch is the one part whose loss makes a BMC unreachable and nothing else;
//! - `health-critical`, `sel-critical`: its PDUs, its rack (power-supply and power-loss alerts on every
//!   node of one feed). Never the OOB switch: a switch cannot make a BMC report a critical sensor.
//!
//! A shared sweep fault is resolved when a sweep reads every member again and the member kind's rule
//! proves it gone on each ([`members_cleared`]): the same "the fault's own evidence is gone" rule the
//! runbooks' `fault-cleared` post-condition uses.

use std::collections::HashMap;

use super::{ComponentKind, Observation, Unit};
use crate::fault_rules::{BMC_UNREACHABLE, Finding, HEALTH_CRITICAL, SEL_CRITICAL};

/// The sweep kinds that go through correlation (the others, `gpu-missing`, are about one node's parts).
pub const CORRELATED: [&str; 3] = [BMC_UNREACHABLE, HEALTH_CRITICAL, SEL_CRITICAL];

const UNREACHABLE_PARTS: &[ComponentKind] =
    &[ComponentKind::OobSwitch, ComponentKind::Pdu, ComponentKind::Rack];
const POWER_PARTS: &[ComponentKind] = &[ComponentKind::Pdu, ComponentKind::Rack];

/// The kinds of part that may explain an observation of `kind`, most preferred first; `None`: every
/// part its unit depends on (the console's findings).
pub fn explaining(kind: &str) -> Option<&'static [ComponentKind]> {
    match kind {
        BMC_UNREACHABLE => Some(UNREACHABLE_PARTS),
        HEALTH_CRITICAL | SEL_CRITICAL => Some(POWER_PARTS),
        _ => None,
    }
}

/// The rank of `part` for `kind` when two parts explain equally (lower first); 0 for every part of a kind
/// without a table.
pub fn preference(kind: &str, part: ComponentKind) -> usize {
    explaining(kind).and_then(|a| a.iter().position(|k| *k == part)).unwrap_or(0)
}

/// The observation a sweep finding makes, for correlation; `None` for a kind that is not correlated.
pub fn observation(device: &str, f: &Finding, at_ms: i64) -> Option<Observation> {
    CORRELATED.contains(&f.kind).then(|| Observation {
        kind: f.kind.to_owned(),
        unit: Unit { device: device.to_owned(), rail: None },
        severity: f.severity.to_owned(),
        message: f.message.clone(),
        at_ms,
        // The detail the finding's own fault has always carried (`errors`, `alerts`, `entries`).
        detail: f.detail.clone(),
    })
}

/// Whether a shared sweep fault's own evidence is gone: its `detail` (as the fault intake records it:
/// `members` with `device` and `kind`) against one sweep's verdicts (`cleared`: device -> the kinds its
/// row proved gone). Every member must have been read and proven clear of the member kind; a member the
/// round did not read (a BMC left out, a replica's batch not yet taken) keeps the fault open.
pub fn members_cleared(detail: &serde_json::Value, cleared: &HashMap<String, Vec<&'static str>>) -> bool {
    let Some(members) = detail.get("members").and_then(|m| m.as_array()) else { return false };
    !members.is_empty()
        && members.iter().all(|m| {
            let (Some(device), Some(kind)) =
                (m.get("device").and_then(|d| d.as_str()), m.get("kind").and_then(|k| k.as_str()))
            else {
                return false;
            };
            cleared.get(device).is_some_and(|kinds| kinds.contains(&kind))
        })
}

/// Whether a clean read of `kind` proves an undecided observation of it gone ([`super::Correlator::withdraw`]):
/// a state (`bmc-unreachable`, `health-critical`) is read whole again; an event-log entry (`sel-critical`)
/// happened, and a later read without a new entry does not undo it.
pub fn undone_by_a_clean_read(kind: &str) -> bool {
    matches!(kind, BMC_UNREACHABLE | HEALTH_CRITICAL)
}

/// The member kind of a shared fault kind when it is a correlated sweep kind (`shared-bmc-unreachable` ->
/// `bmc-unreachable`).
pub fn member_kind(shared_kind: &str) -> Option<&'static str> {
    let k = shared_kind.strip_prefix("shared-")?;
    CORRELATED.into_iter().find(|c| *c == k)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::{Correlator, Settings, Shared, Topology, Verdict};
    use super::*;

    /// n1..n6 in rack r1. OOB: n1, n2 on oob-a; n3..n6 on oob-b. Power: n1..n3 on pdu-1, n4..n6 on pdu-2.
    fn topology() -> Topology {
        let mut t = String::from(
            "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n[defaults.bmc]\nusername = \"a\"\n\
             credential = \"env:X\"\n[defaults.management]\nusername = \"a\"\ncredential = \"env:X\"\n\
             [[site]]\nname = \"s\"\n[[rack]]\nname = \"r1\"\nsite = \"s\"\n",
        );
        for (i, sw) in ["oob-a", "oob-b"].into_iter().enumerate() {
            t.push_str(&format!(
                "[[device]]\nname = \"{sw}\"\nrole = \"switch\"\nrack = \"r1\"\nfabric = \"oob\"\n\
                 platform = \"ios\"\nmanagement = {{ address = \"127.0.9.{}\" }}\n",
                i + 1
            ));
        }
        for n in 1..=6 {
            let oob = if n <= 2 { "oob-a" } else { "oob-b" };
            let pdu = if n <= 3 { "pdu-1" } else { "pdu-2" };
            t.push_str(&format!(
                "[[device]]\nname = \"n{n}\"\nrole = \"gpu-node\"\nrack = \"r1\"\npdus = [\"{pdu}\"]\n\
                 oob-switch = \"{oob}\"\noob-port = \"Gi1/0/{n}\"\nnvlink-domain = \"nvl-1\"\n\
                 bmc = {{ address = \"127.0.1.{n}\" }}\n"
            ));
        }
        let r = lifeline_inventory::check_str(Path::new("t.toml"), &t);
        let errors: Vec<_> = r.errors().collect();
        assert!(errors.is_empty(), "{errors:#?}");
        Topology::from_inventory(&r.inventory.unwrap())
    }

    fn finding(kind: &'static str) -> Finding {
        Finding { kind, severity: "critical", message: format!("{kind} here"), detail: serde_json::json!({}) }
    }

    /// One sweep in which `nodes` show `kind`: every observation decided at once.
    fn sweep(c: &mut Correlator, kind: &'static str, nodes: &[&str], at_ms: i64) -> Vec<Verdict> {
        for n in nodes {
            c.observe(observation(n, &finding(kind), at_ms).expect("a correlated kind"));
        }
        c.flush(at_ms)
    }

    fn shared(v: &[Verdict]) -> Vec<&Shared> {
        v.iter().filter_map(|v| if let Verdict::Shared(s) = v { Some(s) } else { None }).collect()
    }

    fn own(v: &[Verdict]) -> Vec<&str> {
        v.iter()
            .filter_map(|v| if let Verdict::Own(o) = v { Some(o.unit.device.as_str()) } else { None })
            .collect()
    }

    fn members(s: &Shared) -> Vec<&str> {
        s.members.iter().map(|m| m.unit.device.as_str()).collect()
    }

    #[test]
    fn every_bmc_behind_one_oob_switch_unreachable_is_one_fault_on_the_switch() {
        let mut c = Correlator::new(topology(), Settings::default());
        let v = sweep(&mut c, BMC_UNREACHABLE, &["n1", "n2"], 1_000);
        let s = shared(&v);
        assert_eq!(s.len(), 1, "{v:#?}");
        assert!(own(&v).is_empty(), "no member is raised alone: {v:#?}");
        assert_eq!((s[0].kind.as_str(), s[0].device.as_str()), ("shared-bmc-unreachable", "oob-a"));
        assert_eq!(s[0].component.kind, ComponentKind::OobSwitch);
        assert_eq!(members(s[0]), ["n1", "n2"]);
        // 2 of oob-a's 2 (the rack's 2 of 6 and pdu-1's 2 of 3 explain less).
        assert_eq!((s[0].score.affected, s[0].score.dependents, s[0].score.fraction), (2, 2, 1.0));
        assert!(!s[0].score.unaffected_share);
        assert!(s[0].message.contains("(all of them)"), "{}", s[0].message);
        // The next sweep sees the same BMCs still dark: nothing new to raise or act on.
        assert!(sweep(&mut c, BMC_UNREACHABLE, &["n1", "n2"], 61_000).is_empty());
    }

    #[test]
    fn one_unreachable_bmc_is_its_own_fault() {
        let mut c = Correlator::new(topology(), Settings::default());
        let v = sweep(&mut c, BMC_UNREACHABLE, &["n3"], 1_000);
        assert_eq!(own(&v), ["n3"], "{v:#?}");
        assert!(shared(&v).is_empty());
        // Again next sweep: its own fault again (the intake bumps the open record), never a group.
        assert_eq!(own(&sweep(&mut c, BMC_UNREACHABLE, &["n3"], 61_000)), ["n3"]);
    }

    #[test]
    fn below_half_of_a_switchs_bmcs_each_stands_alone() {
        let mut c = Correlator::new(topology(), Settings::default());
        let v = sweep(&mut c, BMC_UNREACHABLE, &["n2", "n3"], 1_000);
        // n2 (oob-a, pdu-1) and n3 (oob-b, pdu-1): they share pdu-1 (2 of 3) and the rack (2 of 6).
        let s = shared(&v);
        assert_eq!(s.len(), 1, "{v:#?}");
        assert_eq!(s[0].device, "pdu:pdu-1", "{v:#?}");
        let mut c = Correlator::new(topology(), Settings::default());
        let v = sweep(&mut c, BMC_UNREACHABLE, &["n1", "n4"], 1_000);
        assert_eq!(own(&v), ["n1", "n4"], "nothing they share is half affected: {v:#?}");
    }

    #[test]
    fn a_pdu_explains_power_alerts_and_an_oob_switch_never_does() {
        let mut c = Correlator::new(topology(), Settings::default());
        // The whole of pdu-2 (n4..n6) reports a critical power supply; they also share oob-b (3 of 4).
        let v = sweep(&mut c, HEALTH_CRITICAL, &["n4", "n5", "n6"], 1_000);
        let s = shared(&v);
        assert_eq!(s.len(), 1, "{v:#?}");
        assert_eq!((s[0].kind.as_str(), s[0].device.as_str()), ("shared-health-critical", "pdu:pdu-2"));
        assert_eq!(members(s[0]), ["n4", "n5", "n6"]);
        // oob-a's two nodes with a critical SEL entry: pdu-1 (2 of 3) explains them; oob-a (2 of 2) would
        // score higher, but a switch is never a candidate for a sensor's alert.
        let v = sweep(&mut c, SEL_CRITICAL, &["n1", "n2"], 2_000);
        let s = shared(&v);
        assert_eq!(s[0].component.kind, ComponentKind::Pdu, "{v:#?}");
        // Every BMC dark: the rack (6 of 6) explains the most; the NVLink domain holds all six too, but it
        // explains no sweep kind.
        let v = sweep(&mut c, BMC_UNREACHABLE, &["n1", "n2", "n3", "n4", "n5", "n6"], 3_000);
        let s = shared(&v);
        assert_eq!(s.len(), 1, "{v:#?}");
        assert_eq!(s[0].device, "rack:r1", "{v:#?}");
    }

    #[test]
    fn an_oob_switch_is_preferred_over_a_rack_that_holds_the_same_bmcs() {
        assert_eq!(preference(BMC_UNREACHABLE, ComponentKind::OobSwitch), 0);
        assert!(
            preference(BMC_UNREACHABLE, ComponentKind::Rack)
                > preference(BMC_UNREACHABLE, ComponentKind::Pdu)
        );
        // oob-a's two BMCs in a rack of their own: both parts are 2 of 2, the switch is blamed.
        let inv = "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n[defaults.bmc]\nusername = \"a\"\n\
             credential = \"env:X\"\n[defaults.management]\nusername = \"a\"\ncredential = \"env:X\"\n\
             [[site]]\nname = \"s\"\n[[rack]]\nname = \"r1\"\nsite = \"s\"\n\
             [[device]]\nname = \"oob-a\"\nrole = \"switch\"\nrack = \"r1\"\nfabric = \"oob\"\nplatform = \"ios\"\n\
             management = { address = \"127.0.9.1\" }\n\
             [[device]]\nname = \"n1\"\nrole = \"gpu-node\"\nrack = \"r1\"\noob-switch = \"oob-a\"\nbmc = { address = \"127.0.1.1\" }\n\
             [[device]]\nname = \"n2\"\nrole = \"gpu-node\"\nrack = \"r1\"\noob-switch = \"oob-a\"\nbmc = { address = \"127.0.1.2\" }\n";
        let r = lifeline_inventory::check_str(Path::new("t.toml"), inv);
        let mut c = Correlator::new(Topology::from_inventory(&r.inventory.unwrap()), Settings::default());
        let v = sweep(&mut c, BMC_UNREACHABLE, &["n1", "n2"], 1_000);
        assert_eq!(shared(&v)[0].device, "oob-a", "{v:#?}");
        // For a power alert the same two nodes are the rack's (the switch explains no sensor).
        let v = sweep(&mut c, HEALTH_CRITICAL, &["n1", "n2"], 1_000);
        assert_eq!(shared(&v)[0].device, "rack:r1", "{v:#?}");
    }

    #[test]
    fn a_bmc_that_was_alone_is_linked_when_its_switchs_others_follow() {
        let mut c = Correlator::new(topology(), Settings::default());
        assert_eq!(own(&sweep(&mut c, BMC_UNREACHABLE, &["n3"], 1_000)), ["n3"]);
        // A minute later three more of oob-b's four: 4 of 4, n3's own fault is linked, not acted on again.
        let v = sweep(&mut c, BMC_UNREACHABLE, &["n3", "n4", "n5", "n6"], 61_000);
        let s = shared(&v);
        assert_eq!(s.len(), 1, "{v:#?}");
        assert_eq!(s[0].device, "oob-b");
        assert_eq!(s[0].linked.iter().map(|u| u.device.as_str()).collect::<Vec<_>>(), ["n3"]);
        assert!(own(&v).is_empty(), "{v:#?}");
    }

    /// One round of a periodic sweep: `dark` show `kind`, `clear` were read clear of it.
    fn round(c: &mut Correlator, dark: &[&str], clear: &[&str], at_ms: i64) -> Vec<Verdict> {
        for n in dark {
            c.observe(observation(n, &finding(BMC_UNREACHABLE), at_ms).expect("a correlated kind"));
        }
        for n in clear {
            assert!(undone_by_a_clean_read(BMC_UNREACHABLE));
            c.withdraw(BMC_UNREACHABLE, n);
        }
        c.flush_round(at_ms, 2)
    }

    #[test]
    fn a_round_that_straddles_the_switchs_death_does_not_make_its_first_dark_bmc_a_fault_of_its_own() {
        let mut c = Correlator::new(topology(), Settings::default());
        // n1 visited after oob-a died, n2 before: n1 alone in its round is not yet decided.
        let v = round(&mut c, &["n1"], &["n2"], 1_000);
        assert!(v.is_empty(), "{v:#?}");
        // The next round's visits all start after: both dark, one fault on the switch, no member alone.
        let v = round(&mut c, &["n1", "n2"], &[], 12_000);
        assert!(own(&v).is_empty(), "{v:#?}");
        let s = shared(&v);
        assert_eq!((s.len(), s[0].device.as_str()), (1, "oob-a"), "{v:#?}");
        assert_eq!(members(s[0]), ["n1", "n2"]);
        assert_eq!(s[0].members[0].at_ms, 1_000, "n1 kept as first seen");
        assert!(s[0].linked.is_empty(), "nothing was raised alone to link: {v:#?}");
    }

    #[test]
    fn a_lone_dark_bmc_is_its_own_fault_after_the_next_round_and_at_once_after_that() {
        let mut c = Correlator::new(topology(), Settings::default());
        assert!(round(&mut c, &["n3"], &["n4", "n5", "n6"], 1_000).is_empty());
        let v = round(&mut c, &["n3"], &["n4", "n5", "n6"], 61_000);
        assert_eq!(own(&v), ["n3"], "{v:#?}");
        assert_eq!(c.pending(), 0, "the repeated observation was folded into the first");
        // Already decided alone: the next round's reading is its own fault again at once (a bump).
        assert_eq!(own(&round(&mut c, &["n3"], &[], 121_000)), ["n3"]);
    }

    #[test]
    fn a_new_decider_counts_the_round_the_old_one_decided() {
        // The old decider saw n3 dark and decided nothing yet; the new one carries that round's finding.
        let mut c = Correlator::new(topology(), Settings::default());
        c.carry(observation("n3", &finding(BMC_UNREACHABLE), 1_000).unwrap());
        let v = round(&mut c, &["n3"], &[], 61_000);
        assert_eq!(own(&v), ["n3"], "its second round, though the first on this decider: {v:#?}");
        assert_eq!(v.iter().filter(|v| matches!(v, Verdict::Own(o) if o.at_ms == 1_000)).count(), 1);
        // A unit already decided alone (rebuilt from the store) is not carried again.
        c.carry(observation("n3", &finding(BMC_UNREACHABLE), 2_000).unwrap());
        assert_eq!(c.pending(), 0);
    }

    #[test]
    fn a_bmc_dark_for_one_round_only_is_not_raised() {
        let mut c = Correlator::new(topology(), Settings::default());
        assert!(round(&mut c, &["n3"], &[], 1_000).is_empty());
        assert!(round(&mut c, &[], &["n3"], 61_000).is_empty());
        assert_eq!(c.pending(), 0);
        assert!(round(&mut c, &[], &[], 121_000).is_empty(), "nothing left to decide");
    }

    #[test]
    fn a_critical_event_waits_its_round_and_is_not_undone_by_a_read_without_a_new_one() {
        assert!(!undone_by_a_clean_read(SEL_CRITICAL));
        let mut c = Correlator::new(topology(), Settings::default());
        c.observe(observation("n3", &finding(SEL_CRITICAL), 1_000).unwrap());
        assert!(c.flush_round(1_000, 2).is_empty());
        // The next round reads no new entry: the server does not withdraw an event, and it stands alone.
        assert_eq!(own(&c.flush_round(61_000, 2)), ["n3"]);
    }

    #[test]
    fn a_closed_group_is_a_new_fault_when_the_part_fails_again() {
        let mut c = Correlator::new(topology(), Settings::default());
        let s = shared(&sweep(&mut c, BMC_UNREACHABLE, &["n1", "n2"], 1_000))[0].clone();
        c.close("bmc-unreachable", &s.device);
        let v = sweep(&mut c, BMC_UNREACHABLE, &["n1", "n2"], 121_000);
        let again = shared(&v);
        assert!(again.len() == 1 && again[0].new, "{v:#?}");
    }

    #[test]
    fn a_shared_fault_is_cleared_only_when_every_member_is_read_clear() {
        let detail = serde_json::json!({ "members": [
            { "device": "n1", "kind": "bmc-unreachable" }, { "device": "n2", "kind": "bmc-unreachable" },
        ]});
        let mut cleared: HashMap<String, Vec<&'static str>> = HashMap::new();
        cleared.insert("n1".into(), vec![BMC_UNREACHABLE, SEL_CRITICAL]);
        assert!(!members_cleared(&detail, &cleared), "n2 was not read");
        cleared.insert("n2".into(), vec![SEL_CRITICAL]);
        assert!(!members_cleared(&detail, &cleared), "n2 was read but is still unreachable");
        cleared.insert("n2".into(), vec![BMC_UNREACHABLE]);
        assert!(members_cleared(&detail, &cleared));
        assert!(
            !members_cleared(&serde_json::json!({ "members": [] }), &cleared),
            "no members prove nothing"
        );
        assert_eq!(member_kind("shared-bmc-unreachable"), Some(BMC_UNREACHABLE));
        assert_eq!(member_kind("shared-rail-down"), None, "console kinds are resolved elsewhere");
    }

    #[test]
    fn only_the_correlated_sweep_kinds_make_observations() {
        let gpu = Finding {
            kind: crate::fault_rules::GPU_MISSING,
            severity: "critical",
            message: String::new(),
            detail: serde_json::json!({}),
        };
        assert!(observation("n1", &gpu, 0).is_none());
        let o = observation("n1", &finding(BMC_UNREACHABLE), 5).unwrap();
        assert_eq!((o.kind.as_str(), o.unit.rail.as_deref(), o.at_ms), ("bmc-unreachable", None, 5));
    }
}
