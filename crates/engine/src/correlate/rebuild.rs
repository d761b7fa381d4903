//! A correlator's state rebuilt from the store. The open groups (a part blamed, its members) and the
//! members decided alone live in the memory of the process that decided them; when another process takes
//! over deciding — the sweep rounds' preferred replica died or the live set changed, or the decider
//! restarted — it would start empty: a BMC decided alone before would not be linked to the group its
//! switch's other BMCs form later, and an open group would not grow (a member going dark later would be
//! weighed alone against the part's other, already grouped, members).
//!
//! The store holds what is needed: each open shared fault's detail lists its `component` and `members`
//! (device, rail, kind, message, time, as the fault intake records them), and each open lone fault of a
//! correlated kind is a member decided alone. [`Correlator::rebuild`] adds what the correlator lacks and
//! drops a group whose fault another process resolved meanwhile; calling it again changes nothing.

use super::{Component, Correlator, Group, Observation, Unit};
use crate::ops::fault_records::FaultRow;

/// What a rebuild added.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rebuilt {
    /// Groups taken from open shared faults.
    pub groups: usize,
    /// Members added to groups the correlator had.
    pub members: usize,
    /// Open lone faults taken as members decided alone.
    pub alone: usize,
    /// Groups held here whose fault was resolved elsewhere.
    pub dropped: usize,
}

/// A member as a shared fault's detail lists it (`members`): what [`Correlator::rebuild`] and the shared
/// console faults' clearing ([`super::clearing`]) read back.
pub fn member_record(m: &Observation) -> serde_json::Value {
    serde_json::json!({
        "device": m.unit.device,
        "rail": m.unit.rail,
        "kind": m.kind,
        "message": m.message,
        "at_ms": m.at_ms,
    })
}

fn member(m: &serde_json::Value, severity: &str) -> Option<Observation> {
    Some(Observation {
        kind: m.get("kind")?.as_str()?.to_owned(),
        unit: Unit {
            device: m.get("device")?.as_str()?.to_owned(),
            rail: m.get("rail").and_then(|r| r.as_str()).map(str::to_owned),
        },
        severity: severity.to_owned(),
        message: m.get("message").and_then(|x| x.as_str()).unwrap_or_default().to_owned(),
        at_ms: m.get("at_ms")?.as_i64()?,
        detail: serde_json::Value::Null,
    })
}

impl Correlator {
    /// Brings the state for the member kinds `kinds` (the sweep's `bmc-unreachable`, … or the console's)
    /// in line with `unresolved` (the store's open and acknowledged fault records): each such
    /// `shared-<kind>` fault is an open group, kept open for the window from `now_ms` (its part is still
    /// blamed); a group held here whose fault is not among them was resolved elsewhere and is dropped;
    /// each open `<kind>` fault last raised within the window and not a group's member is a member decided
    /// alone, at the time it was last raised. A fault whose detail cannot be read is left out.
    pub fn rebuild(&mut self, unresolved: &[FaultRow], kinds: &[&str], now_ms: i64) -> Rebuilt {
        let window = i64::try_from(self.settings.window.as_millis()).unwrap_or(i64::MAX);
        let mut out = Rebuilt::default();
        let before = self.groups.len();
        self.groups.retain(|g| {
            !kinds.contains(&g.kind.as_str())
                || unresolved.iter().any(|f| {
                    f.kind.strip_prefix("shared-") == Some(g.kind.as_str())
                        && f.device == g.component.device()
                })
        });
        out.dropped = before - self.groups.len();
        for f in unresolved {
            let Some(kind) = f.kind.strip_prefix("shared-").filter(|k| kinds.contains(k)) else { continue };
            let Some(component) =
                f.detail.get("component").and_then(|c| serde_json::from_value::<Component>(c.clone()).ok())
            else {
                continue;
            };
            let members: Vec<Observation> = f
                .detail
                .get("members")
                .and_then(|m| m.as_array())
                .map(|m| m.iter().filter_map(|x| member(x, &f.severity)).filter(|o| o.kind == kind).collect())
                .unwrap_or_default();
            if members.is_empty() {
                continue;
            }
            let existed = self.groups.iter().position(|g| g.kind == kind && g.component == component);
            let i = match existed {
                Some(i) => i,
                None => {
                    out.groups += 1;
                    self.groups.push(Group {
                        kind: kind.to_owned(),
                        component,
                        members: Default::default(),
                        last_ms: now_ms,
                    });
                    self.groups.len() - 1
                }
            };
            for o in members {
                // A member the correlator holds as decided alone belongs to the group now.
                if let Some(p) = self.alone.iter().position(|a| a.kind == o.kind && a.unit == o.unit) {
                    let a = self.alone.remove(p);
                    self.index_remove(&a);
                }
                let g = &mut self.groups[i];
                if !g.members.contains_key(&o.unit) {
                    out.members += usize::from(existed.is_some());
                    g.members.insert(o.unit.clone(), o);
                }
            }
        }
        for f in unresolved {
            if f.state != "open" || !kinds.contains(&f.kind.as_str()) || now_ms - f.updated_at_ms > window {
                continue;
            }
            let unit = Unit {
                device: f.device.clone(),
                rail: f.detail.get("rail").and_then(|r| r.as_str()).map(str::to_owned),
            };
            let grouped = self.groups.iter().any(|g| g.kind == f.kind && g.members.contains_key(&unit));
            let known = self.alone.iter().any(|a| a.kind == f.kind && a.unit == unit);
            if grouped || known {
                continue;
            }
            let o = Observation {
                kind: f.kind.clone(),
                unit,
                severity: f.severity.clone(),
                message: f.message.clone(),
                at_ms: f.updated_at_ms,
                detail: f.detail.clone(),
            };
            self.index_add(&o);
            self.alone.push(o);
            out.alone += 1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::sweep::{CORRELATED, observation};
    use super::super::{Settings, Shared, Topology, Verdict};
    use super::*;
    use crate::fault_rules::{BMC_UNREACHABLE, Finding};

    /// n1..n4 behind oob-a, in a rack of eight (n5..n8 elsewhere in the OOB fabric).
    fn topology() -> Topology {
        let mut t = String::from(super::super::TEST_INVENTORY_HEAD);
        t.push_str(
            "[[device]]\nname = \"oob-a\"\nrole = \"switch\"\nrack = \"r1\"\nfabric = \"oob\"\nplatform = \"ios\"\n\
             management = { address = \"127.0.9.1\" }\n",
        );
        for n in 1..=8 {
            let oob = if n <= 4 { "oob-switch = \"oob-a\"\n" } else { "" };
            t.push_str(&format!(
                "[[device]]\nname = \"n{n}\"\nrole = \"gpu-node\"\nrack = \"r1\"\n{oob}bmc = {{ address = \"127.0.1.{n}\" }}\n"
            ));
        }
        let r = lifeline_inventory::check_str(Path::new("t.toml"), &t);
        let errors: Vec<_> = r.errors().collect();
        assert!(errors.is_empty(), "{errors:#?}");
        Topology::from_inventory(&r.inventory.unwrap())
    }

    fn correlator() -> Correlator {
        Correlator::new(topology(), Settings::default())
    }

    fn round(c: &mut Correlator, nodes: &[&str], at_ms: i64) -> Vec<Verdict> {
        let f = Finding {
            kind: BMC_UNREACHABLE,
            severity: "critical",
            message: "no answer".into(),
            detail: serde_json::json!({}),
        };
        for n in nodes {
            c.observe(observation(n, &f, at_ms).unwrap());
        }
        c.flush(at_ms)
    }

    fn shared(v: &[Verdict]) -> Option<&Shared> {
        v.iter().find_map(|v| if let Verdict::Shared(s) = v { Some(s) } else { None })
    }

    fn own(v: &[Verdict]) -> Vec<&str> {
        v.iter()
            .filter_map(|v| if let Verdict::Own(o) = v { Some(o.unit.device.as_str()) } else { None })
            .collect()
    }

    fn devices(units: &[Unit]) -> Vec<&str> {
        units.iter().map(|u| u.device.as_str()).collect()
    }

    /// The open fault records the fault intake keeps for the verdicts (as `faults::verdict` writes them).
    fn records(v: &[Verdict], id: &mut i64) -> Vec<FaultRow> {
        v.iter()
            .map(|v| {
                *id += 1;
                let (kind, device, severity, message, detail, at) = match v {
                    Verdict::Own(o) => (
                        o.kind.clone(),
                        o.unit.device.clone(),
                        &o.severity,
                        &o.message,
                        o.detail.clone(),
                        o.at_ms,
                    ),
                    Verdict::Shared(s) => {
                        let members: Vec<_> = s.members.iter().map(member_record).collect();
                        let detail = serde_json::json!({ "source": "correlation", "component": s.component,
                            "score": s.score, "members": members, "linked_faults": [] });
                        let at = s.members.iter().map(|m| m.at_ms).max().unwrap_or(0);
                        (s.kind.clone(), s.device.clone(), &s.severity, &s.message, detail, at)
                    }
                };
                FaultRow {
                    id: *id,
                    kind,
                    device,
                    severity: severity.clone(),
                    state: "open".into(),
                    message: message.clone(),
                    detail,
                    count: 1,
                    opened_at_ms: at,
                    updated_at_ms: at,
                    acked_by: None,
                    acked_at_ms: None,
                }
            })
            .collect()
    }

    #[test]
    fn a_new_decider_links_a_bmc_the_old_one_decided_alone() {
        let mut id = 0;
        let mut old = correlator();
        let v = round(&mut old, &["n1"], 1_000);
        assert_eq!(own(&v), ["n1"]);
        let open = records(&v, &mut id);
        // The decider changes; a minute later three more of oob-a's four go dark.
        let mut new = correlator();
        let r = new.rebuild(&open, &CORRELATED, 61_000);
        assert_eq!(r, Rebuilt { groups: 0, members: 0, alone: 1, dropped: 0 });
        let v = round(&mut new, &["n2", "n3", "n4"], 61_000);
        let s = shared(&v).expect("one fault on oob-a");
        assert_eq!((s.device.as_str(), s.new), ("oob-a", true));
        assert_eq!(devices(&s.linked), ["n1"], "n1's own fault is linked, not left standing: {v:#?}");
        assert_eq!(s.members.len(), 4);
        // Without the rebuild the same round forgets n1: 3 of 4, nothing linked.
        let mut empty = correlator();
        let v = round(&mut empty, &["n2", "n3", "n4"], 61_000);
        assert!(shared(&v).unwrap().linked.is_empty());
    }

    #[test]
    fn a_new_decider_grows_the_open_group_instead_of_raising_a_late_member_alone() {
        let mut id = 0;
        let mut old = correlator();
        let v = round(&mut old, &["n1", "n2", "n3"], 1_000);
        assert_eq!(shared(&v).unwrap().members.len(), 3);
        let open = records(&v, &mut id);
        let mut new = correlator();
        assert_eq!(
            new.rebuild(&open, &CORRELATED, 61_000),
            Rebuilt { groups: 1, members: 0, alone: 0, dropped: 0 }
        );
        // n4 goes dark after the change: it joins the open group, it is not weighed alone (1 of 4).
        let v = round(&mut new, &["n4"], 61_000);
        assert!(own(&v).is_empty(), "{v:#?}");
        let s = shared(&v).expect("the group grows");
        assert!(!s.new, "the same fault, one member more");
        assert_eq!(devices(&s.added), ["n4"]);
        assert_eq!(
            s.members.iter().map(|m| m.unit.device.as_str()).collect::<Vec<_>>(),
            ["n1", "n2", "n3", "n4"]
        );
        // The members still dark at the next round join silently.
        assert!(round(&mut new, &["n1", "n2", "n3", "n4"], 121_000).is_empty());
        // Without the rebuild n4 is its own fault.
        let mut empty = correlator();
        assert_eq!(own(&round(&mut empty, &["n4"], 61_000)), ["n4"]);
    }

    #[test]
    fn a_rebuild_adds_only_what_is_missing_and_leaves_old_and_foreign_faults_out() {
        let mut id = 0;
        let mut old = correlator();
        let mut open = records(&round(&mut old, &["n1", "n2"], 1_000), &mut id);
        // n1's own fault, decided alone before the group formed (linked to it), and n5's own fault.
        open.extend(records(&round(&mut correlator(), &["n1"], 500), &mut id));
        open.extend(records(&round(&mut correlator(), &["n5"], 1_000), &mut id));
        // n6's own fault is older than the window; a console fault is not a sweep kind.
        let mut stale = records(&round(&mut correlator(), &["n6"], 1_000), &mut id);
        stale[0].updated_at_ms = -700_000;
        open.extend(stale);
        let mut panic = records(&round(&mut correlator(), &["n7"], 1_000), &mut id);
        panic[0].kind = "console-kernel-panic".into();
        open.extend(panic);
        let mut c = correlator();
        let r = c.rebuild(&open, &CORRELATED, 2_000);
        assert_eq!(
            r,
            Rebuilt { groups: 1, members: 0, alone: 1, dropped: 0 },
            "the group, and n5 alone (n1 is a member)"
        );
        assert_eq!(c.rebuild(&open, &CORRELATED, 3_000), Rebuilt::default(), "again: nothing to add");
        // The rebuilt group holds n1 and n2: n3 joins it.
        let v = round(&mut c, &["n3"], 4_000);
        assert_eq!(devices(&shared(&v).expect("the group grows").added), ["n3"]);
        // An acknowledged shared fault is a group still; once another decider resolved it, the group is
        // dropped here: the part failing again is a new fault.
        let mut acked = open.clone();
        acked[0].state = "acked".into();
        assert_eq!(c.rebuild(&acked, &CORRELATED, 5_000).dropped, 0);
        let resolved: Vec<FaultRow> = open.iter().filter(|f| f.device != "oob-a").cloned().collect();
        assert_eq!(c.rebuild(&resolved, &CORRELATED, 6_000).dropped, 1);
        let v = round(&mut c, &["n1", "n2", "n3"], 7_000);
        assert!(shared(&v).expect("a new group").new, "{v:#?}");
    }

    #[test]
    fn a_member_record_reads_back() {
        let o = observation(
            "n1",
            &Finding {
                kind: BMC_UNREACHABLE,
                severity: "critical",
                message: "m".into(),
                detail: serde_json::json!({}),
            },
            7,
        )
        .unwrap();
        let back = member(&member_record(&o), "critical").unwrap();
        assert_eq!((back.kind, back.unit, back.message, back.at_ms), (o.kind, o.unit, o.message, o.at_ms));
        assert!(member(&serde_json::json!({ "device": "n1" }), "critical").is_none(), "no kind, no member");
    }
}
