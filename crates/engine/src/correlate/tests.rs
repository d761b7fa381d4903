use std::path::Path;

use proptest::prelude::*;

use super::*;

/// n1..n4 cabled to leaf-a, n5..n6 to leaf-b (rails mlx5_0 and mlx5_1); racks r1 (n1..n3) and r2.
fn topology() -> Topology {
    let mut t = String::from(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n[defaults.bmc]\nusername = \"a\"\n\
         credential = \"env:X\"\n[defaults.management]\nusername = \"a\"\ncredential = \"env:X\"\n\
         [[site]]\nname = \"s\"\n[[rack]]\nname = \"r1\"\nsite = \"s\"\n[[rack]]\nname = \"r2\"\nsite = \"s\"\n",
    );
    for (leaf, rack) in [("leaf-a", "r1"), ("leaf-b", "r2")] {
        t.push_str(&format!(
            "[[device]]\nname = \"{leaf}\"\nrole = \"switch\"\nrack = \"{rack}\"\nfabric = \"backend\"\n\
             tier = \"leaf\"\nplatform = \"sonic\"\nmanagement = {{ address = \"127.0.9.{}\" }}\n",
            if leaf == "leaf-a" { 1 } else { 2 }
        ));
    }
    for n in 1..=6 {
        let (leaf, rack) =
            if n <= 4 { ("leaf-a", if n <= 3 { "r1" } else { "r2" }) } else { ("leaf-b", "r2") };
        t.push_str(&format!(
            "[[device]]\nname = \"n{n}\"\nrole = \"gpu-node\"\nrack = \"{rack}\"\npdus = [\"pdu-{rack}\"]\n\
             bmc = {{ address = \"127.0.1.{n}\" }}\ngpus = {{ count = 2 }}\nrail = [\n\
             {{ hca = \"mlx5_0\", netdev = \"rdma0\", leaf = \"{leaf}\", port = \"Ethernet{}\" }},\n\
             {{ hca = \"mlx5_1\", netdev = \"rdma1\", leaf = \"{leaf}\", port = \"Ethernet{}\" }},\n]\n",
            n * 8,
            n * 8 + 4
        ));
    }
    let r = lifeline_inventory::check_str(Path::new("t.toml"), &t);
    let errors: Vec<_> = r.errors().collect();
    assert!(errors.is_empty(), "{errors:#?}");
    Topology::from_inventory(&r.inventory.unwrap())
}

fn rail(node: &str, hca: &str, at_ms: i64) -> Observation {
    Observation {
        kind: "rail-down".into(),
        unit: Unit { device: node.into(), rail: Some(hca.into()) },
        severity: "warning".into(),
        message: format!("{hca} down"),
        at_ms,
        detail: serde_json::Value::Null,
    }
}

fn node(n: &str, kind: &str, at_ms: i64) -> Observation {
    Observation {
        kind: kind.into(),
        unit: Unit { device: n.into(), rail: None },
        severity: "critical".into(),
        message: kind.into(),
        at_ms,
        detail: serde_json::Value::Null,
    }
}

fn correlator() -> Correlator {
    Correlator::new(topology(), Settings::default())
}

fn shared(v: &[Verdict]) -> Vec<&Shared> {
    v.iter().filter_map(|v| if let Verdict::Shared(s) = v { Some(s) } else { None }).collect()
}

fn own(v: &[Verdict]) -> Vec<&Observation> {
    v.iter().filter_map(|v| if let Verdict::Own(o) = v { Some(o) } else { None }).collect()
}

#[test]
fn one_rail_down_on_every_node_of_a_leaf_is_one_fault_on_the_leaf() {
    let mut c = correlator();
    for (i, n) in ["n1", "n2", "n3", "n4"].into_iter().enumerate() {
        c.observe(rail(n, "mlx5_1", 1_000 + i as i64 * 300));
    }
    assert!(c.decide(5_000).is_empty(), "nothing is decided before its hold");
    let v = c.decide(6_000);
    assert!(own(&v).is_empty(), "{v:#?}");
    let s = shared(&v);
    assert_eq!(s.len(), 1, "{v:#?}");
    let s = s[0];
    assert_eq!((s.kind.as_str(), s.device.as_str()), ("shared-rail-down", "leaf-a"));
    assert_eq!(s.component.kind, ComponentKind::LeafPortGroup);
    assert_eq!(s.component.rail.as_deref(), Some("mlx5_1"));
    assert_eq!(
        s.members.iter().map(|m| m.unit.device.as_str()).collect::<Vec<_>>(),
        ["n1", "n2", "n3", "n4"]
    );
    assert_eq!((s.score.affected, s.score.dependents, s.score.fraction), (4, 4, 1.0));
    assert!(!s.score.unaffected_share && s.new && s.linked.is_empty());
    assert!(s.message.contains("n1 (Ethernet12)"), "{}", s.message);
    assert_eq!(c.pending(), 0);
}

#[test]
fn one_node_alone_is_its_own_fault() {
    let mut c = correlator();
    c.observe(rail("n5", "mlx5_0", 0));
    let v = c.decide(5_000);
    assert_eq!(own(&v).len(), 1, "{v:#?}");
    assert!(shared(&v).is_empty());
    // The other rail plane of the same leaf, at the same time, shares the leaf only: 2 of 4 of its ports.
    let mut c = correlator();
    c.observe(rail("n5", "mlx5_0", 0));
    c.observe(rail("n6", "mlx5_1", 10));
    let v = c.decide(5_100);
    let s = shared(&v);
    assert_eq!(s.len(), 1, "{v:#?}");
    assert_eq!(
        (s[0].component.kind, s[0].score.affected, s[0].score.dependents),
        (ComponentKind::Leaf, 2, 4)
    );
    assert!(s[0].score.unaffected_share);
}

#[test]
fn below_the_fraction_each_node_stands_alone() {
    let mut c = correlator();
    // 1 of leaf-a's 4 mlx5_0 ports, and a second node on another rail: 2 of 8 leaf ports (0.25).
    c.observe(rail("n1", "mlx5_0", 0));
    c.observe(rail("n2", "mlx5_1", 0));
    let v = c.decide(5_000);
    assert_eq!(own(&v).len(), 2, "{v:#?}");
    // Half of the port group is enough, and says that healthy ports share it.
    let mut c = correlator();
    c.observe(rail("n1", "mlx5_0", 0));
    c.observe(rail("n2", "mlx5_0", 0));
    let s = c.decide(5_000);
    let s = shared(&s);
    assert_eq!((s[0].score.affected, s[0].score.dependents), (2, 4));
    assert!(s[0].score.unaffected_share);
    assert!(!s[0].message.contains("all of them"));
}

#[test]
fn a_whole_leaf_is_blamed_over_its_port_groups() {
    let mut c = correlator();
    for n in ["n1", "n2", "n3", "n4"] {
        for h in ["mlx5_0", "mlx5_1"] {
            c.observe(rail(n, h, 0));
        }
    }
    let v = c.decide(5_000);
    let s = shared(&v);
    assert_eq!(s.len(), 1, "{v:#?}");
    assert_eq!(s[0].component, Component { kind: ComponentKind::Leaf, name: "leaf-a".into(), rail: None });
    assert_eq!(s[0].members.len(), 8);
}

#[test]
fn late_members_join_and_earlier_lone_faults_are_linked() {
    let mut c = correlator();
    c.observe(rail("n1", "mlx5_1", 0));
    assert_eq!(own(&c.decide(5_000)).len(), 1, "alone when decided");
    c.observe(rail("n2", "mlx5_1", 20_000));
    c.observe(rail("n3", "mlx5_1", 20_100));
    let v = c.decide(25_100);
    let s = shared(&v);
    assert_eq!(s.len(), 1, "{v:#?}");
    assert_eq!(s[0].linked, [Unit { device: "n1".into(), rail: Some("mlx5_1".into()) }]);
    assert_eq!(s[0].members.len(), 3);
    // A fourth joins the open group at once, without a hold, as an update.
    c.observe(rail("n4", "mlx5_1", 26_000));
    let v = c.decide(26_000);
    let s = shared(&v);
    assert_eq!((s.len(), s[0].new, s[0].members.len()), (1, false, 4), "{v:#?}");
    assert_eq!(s[0].added, [Unit { device: "n4".into(), rail: Some("mlx5_1".into()) }]);
    assert!(s[0].message.contains("(all of them)"), "{}", s[0].message);
    // The same unit again changes nothing.
    c.observe(rail("n4", "mlx5_1", 27_000));
    assert!(c.decide(27_000).is_empty());
    // After the window the group is closed: a new lone observation is its own again.
    c.observe(rail("n5", "mlx5_1", 1_000_000));
    assert_eq!(own(&c.decide(1_005_000)).len(), 1);
}

#[test]
fn node_observations_group_by_rack_and_pdu_and_kinds_never_mix() {
    let mut c = correlator();
    c.observe(node("n1", "console-kernel-panic", 0));
    c.observe(node("n2", "console-kernel-panic", 0));
    c.observe(node("n3", "console-hung-task", 0));
    let v = c.decide(5_000);
    let s = shared(&v);
    assert_eq!(s.len(), 1, "{v:#?}");
    assert_eq!(
        (s[0].kind.as_str(), s[0].score.affected, s[0].score.dependents),
        ("shared-console-kernel-panic", 2, 3)
    );
    assert!(matches!(s[0].component.kind, ComponentKind::Rack | ComponentKind::Pdu));
    assert!(s[0].device == "rack:r1" || s[0].device == "pdu:pdu-r1", "{}", s[0].device);
    assert_eq!(own(&v).len(), 1, "the hung task is n3's own");
}

proptest! {
    /// Whatever arrives, every observed unit ends decided: alone, or a member of exactly one group
    /// (a lone one that a later group explains is linked to it, never dropped), and nothing stays pending.
    #[test]
    fn every_observation_is_decided_once(obs in proptest::collection::vec((1usize..=6, 0usize..2, 0i64..20_000), 0..30)) {
        let mut c = correlator();
        let mut units = BTreeSet::new();
        for (n, h, at) in &obs {
            let o = rail(&format!("n{n}"), &format!("mlx5_{h}"), *at);
            units.insert(o.unit.clone());
            c.observe(o);
        }
        let mut verdicts = Vec::new();
        for t in (0..=40_000).step_by(1_000) {
            verdicts.extend(c.decide(t));
        }
        prop_assert_eq!(c.pending(), 0);
        let mut alone = BTreeSet::new();
        let mut grouped: BTreeMap<Unit, String> = BTreeMap::new();
        for v in &verdicts {
            match v {
                // A repeat of a unit decided alone is alone again (its open fault counts it).
                Verdict::Own(o) => {
                    prop_assert!(!grouped.contains_key(&o.unit), "alone after its group: {:?}", o.unit);
                    alone.insert(o.unit.clone());
                }
                Verdict::Shared(s) => {
                    for m in &s.members {
                        let g = grouped.entry(m.unit.clone()).or_insert_with(|| s.device.clone());
                        prop_assert_eq!(&*g, &s.device, "a unit in two groups");
                    }
                    for l in &s.linked {
                        prop_assert!(alone.contains(l), "linked but never decided alone: {:?}", l);
                    }
                }
            }
        }
        for u in &units {
            prop_assert!(alone.contains(u) || grouped.contains_key(u), "never decided: {:?}", u);
        }
        for u in &alone {
            let linked = verdicts.iter().any(|v| matches!(v, Verdict::Shared(s) if s.linked.contains(u)));
            prop_assert!(!grouped.contains_key(u) || linked, "alone and grouped without a link: {:?}", u);
        }
    }
}

fn config_change(switch: &str, ports: &[&str], at_ms: i64) -> crate::switch_evidence::PortEvidence {
    crate::switch_evidence::PortEvidence {
        kind: "config-change".into(),
        switch: switch.into(),
        ports: ports.iter().map(|p| (*p).to_owned()).collect(),
        at_ms,
        message: format!("{switch} config changed at 00:00:01: mtu 9100 → 1500 on {}", ports.join(", ")),
        detail: serde_json::Value::Null,
        restore: None,
    }
}

#[test]
fn a_config_change_on_the_members_ports_is_evidence_on_the_shared_fault() {
    let mut c = correlator();
    // leaf-a's rail-1 ports: n1..n4 on Ethernet12, 20, 28, 36. The change came first.
    assert!(
        c.evidence(config_change("leaf-a", &["Ethernet12", "Ethernet20", "Ethernet28", "Ethernet36"], 1_000))
            .is_empty()
    );
    assert!(c.evidence(config_change("leaf-b", &["Ethernet44"], 1_000)).is_empty());
    for n in ["n1", "n2", "n3", "n4"] {
        c.observe(rail(n, "mlx5_1", 2_000));
    }
    let v = c.decide(8_000);
    assert_eq!(shared(&v).len(), 1, "{v:#?}");
    let ev = c.evidence_for(&v[0]);
    assert_eq!(ev.len(), 1, "only leaf-a's change: {ev:#?}");
    let m = with_evidence(&shared(&v)[0].message, &ev);
    assert!(m.ends_with("; leaf-a config changed at 00:00:01: mtu 9100 → 1500 on Ethernet12, Ethernet20, Ethernet28, Ethernet36"), "{m}");
}

#[test]
fn evidence_after_the_fault_re_reports_it_once_and_only_on_its_port() {
    let mut c = correlator();
    c.observe(rail("n5", "mlx5_0", 0)); // leaf-b Ethernet40, alone
    let v = c.decide(6_000);
    assert_eq!(own(&v).len(), 1);
    assert!(c.evidence_for(&v[0]).is_empty());
    // Another port of the same leaf, and the same port on another leaf: not about n5.
    assert!(c.evidence(config_change("leaf-b", &["Ethernet48"], 7_000)).is_empty());
    assert!(c.evidence(config_change("leaf-a", &["Ethernet40"], 7_000)).is_empty());
    let mut flap = config_change("leaf-b", &["Ethernet40"], 8_000);
    flap.kind = "switch-link-flap".into();
    let again = c.evidence(flap.clone());
    assert_eq!(own(&again).len(), 1, "{again:#?}");
    assert_eq!(c.evidence_for(&again[0]).len(), 1);
    // Read again a minute later: refreshed, not re-reported.
    flap.at_ms = 68_000;
    assert!(c.evidence(flap).is_empty());
    assert_eq!(c.evidence_for(&again[0])[0].at_ms, 68_000);
    // Past the window, the evidence is gone with the observation.
    c.decide(68_000 + 601_000);
    assert!(c.evidence_for(&again[0]).is_empty());
}

#[test]
fn node_faults_and_other_parts_carry_no_port_evidence() {
    let mut c = correlator();
    c.evidence(config_change("leaf-a", &["Ethernet8", "Ethernet16", "Ethernet24"], 0));
    for n in ["n1", "n2", "n3"] {
        c.observe(node(n, "console-kernel-panic", 0));
    }
    let v = c.decide(6_000);
    assert_eq!(shared(&v).len(), 1, "{v:#?}");
    assert!(c.evidence_for(&v[0]).is_empty());
}
