//! Parsers on outputs recorded from a real lldpd here (testdata/README.md) and on short outputs written
//! from each platform's documented format; the comparison on the faults it must name. The real-world
//! corpus (EOS, IOS, NX-OS, SONiC captures) is read by tests/lldp_corpus.rs.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::compare::Place;
use super::*;

fn n(port: &str, host: &str, port_id: &str, descr: Option<&str>) -> Neighbor {
    Neighbor {
        local_port: port.into(),
        chassis_id: None,
        system_name: Some(host.into()),
        port_id: Some(port_id.into()),
        port_descr: descr.map(Into::into),
    }
}

/// (local port, system name, port description) of each neighbour.
fn who(v: &[Neighbor]) -> Vec<(&str, Option<&str>, Option<&str>)> {
    v.iter().map(|n| (n.local_port.as_str(), n.system_name.as_deref(), n.port_descr.as_deref())).collect()
}

#[test]
fn lldpd_json_recorded_on_the_switch_side() {
    let v = parse(Format::LldpdJson, include_str!("testdata/lldpd-switch.json"));
    assert_eq!(
        who(&v),
        [
            ("Ethernet0", Some("gpu-node-01"), Some("ens1np0")),
            ("Ethernet8", Some("gpu-node-01"), Some("ens2np0"))
        ]
    );
    assert_eq!(v[0].chassis_id.as_deref(), Some("4a:65:49:94:ce:4f"));
    assert_eq!(v[1].port_id.as_deref(), Some("da:50:f9:44:0a:af"), "lldpd's port id is the MAC");
}

#[test]
fn lldpd_json_one_port_is_an_object_not_an_array() {
    let v = parse(Format::LldpdJson, include_str!("testdata/lldpd-switch-one-port.json"));
    assert_eq!(v.len(), 1);
    assert_eq!((v[0].local_port.as_str(), v[0].port_descr.as_deref()), ("Ethernet0", Some("ens1np0")));
}

#[test]
fn lldpd_json_on_the_node_side_names_the_leaf_port() {
    let v = parse(Format::LldpdJson, include_str!("testdata/lldpd-node.json"));
    assert_eq!(
        who(&v),
        [("ens1np0", Some("leaf1"), Some("Ethernet0")), ("ens2np0", Some("leaf1"), Some("Ethernet8"))]
    );
}

#[test]
fn lldpd_text_reads_like_the_json() {
    let text = parse(Format::LldpdText, include_str!("testdata/lldpd-switch.txt"));
    let json = parse(Format::LldpdJson, include_str!("testdata/lldpd-switch.json"));
    assert_eq!(text, json);
}

#[test]
fn lldpd_json_nameless_chassis() {
    let j = r#"{"lldp":{"interface":{"swp1":{"chassis":{"id":{"type":"mac","value":"aa:bb:cc:dd:ee:ff"}},"port":{"id":{"type":"ifname","value":"eth0"}}}}}}"#;
    let v = parse(Format::LldpdJson, j);
    assert_eq!(v[0].system_name, None);
    assert_eq!(v[0].chassis_id.as_deref(), Some("aa:bb:cc:dd:ee:ff"));
    assert_eq!(v[0].port_id.as_deref(), Some("eth0"));
}

#[test]
fn eos_second_port_id_of_the_lag_block_is_ignored() {
    let t = "Interface Ethernet1 detected 1 LLDP neighbors:\n\n  Neighbor 2cc2.6081.eaf9/\"ens1np0\", age 12 seconds\n  \
             - Chassis ID type: MAC address (4)\n    Chassis ID     : 2cc2.6081.eaf9\n  - Port ID type: Interface name (5)\n    \
             Port ID     : \"ens1np0\"\n  - System Name: \"gpu-node-01\"\n  - IEEE802.1/IEEE802.3 Link Aggregation\n    \
             Port ID                : 0\n";
    let v = parse(Format::EosDetail, t);
    assert_eq!(
        v,
        [Neighbor {
            chassis_id: Some("2cc2.6081.eaf9".into()),
            ..n("Ethernet1", "gpu-node-01", "ens1np0", None)
        }]
    );
}

fn cable(switch: &str, port: &str, device: &str, nic: &str) -> Expected {
    Expected {
        switch: switch.into(),
        port: port.into(),
        device: device.into(),
        nic: nic.into(),
        hca: format!("mlx5_{nic}"),
    }
}

fn seen(rows: &[(&str, Neighbor)]) -> BTreeMap<String, Vec<Neighbor>> {
    let mut m: BTreeMap<String, Vec<Neighbor>> = BTreeMap::new();
    for (sw, x) in rows {
        m.entry(sw.to_string()).or_default().push(x.clone());
    }
    m
}

#[test]
fn clean_cabling_has_no_mismatch_with_macs_as_port_ids() {
    let exp = [cable("leaf1", "Ethernet0", "a", "ens1np0"), cable("leaf1", "Ethernet8", "b", "ens1np0")];
    let s = seen(&[
        ("leaf1", n("Ethernet0", "a.cluster", "4a:65:49:94:ce:4f", Some("ens1np0"))),
        ("leaf1", n("Ethernet8", "b", "4a:65:49:94:ce:50", Some("ens1np0"))),
    ]);
    let r = compare(&exp, &s);
    assert_eq!((r.checked, r.ok, r.mismatches.len()), (2, 2, 0), "{r:?}");
}

#[test]
fn two_swapped_ports_are_one_mismatch_naming_both() {
    let exp = [cable("leaf1", "Ethernet0", "a", "ens1np0"), cable("leaf1", "Ethernet8", "b", "ens1np0")];
    let s = seen(&[
        ("leaf1", n("Ethernet0", "b", "ens1np0", None)),
        ("leaf1", n("Ethernet8", "a", "ens1np0", None)),
    ]);
    let r = compare(&exp, &s);
    assert_eq!(r.mismatches.len(), 1, "{r:?}");
    let m = &r.mismatches[0];
    assert_eq!(m.kind, MismatchKind::Swapped);
    assert_eq!((m.at.port.as_str(), m.other.as_ref().unwrap().port.as_str()), ("Ethernet0", "Ethernet8"));
    assert_eq!(m.devices, ["a", "b"]);
    assert!(m.message.contains("leaf1 Ethernet0") && m.message.contains("leaf1 Ethernet8"), "{}", m.message);
}

#[test]
fn swapped_rails_of_one_node_across_two_leaves() {
    let exp = [cable("leaf1", "Et1/1", "a", "ens1np0"), cable("leaf2", "Et1/1", "a", "ens2np0")];
    let s = seen(&[
        ("leaf1", n("Ethernet1/1", "a", "ens2np0", None)),
        ("leaf2", n("Ethernet1/1", "a", "ens1np0", None)),
    ]);
    let r = compare(&exp, &s);
    assert_eq!(r.mismatches.len(), 1, "{r:?}");
    assert_eq!(r.mismatches[0].kind, MismatchKind::Swapped);
    assert_eq!(r.mismatches[0].devices, ["a"]);
}

#[test]
fn wrong_leaf_unplugged_and_wrong_neighbour() {
    let exp = [
        cable("leaf1", "swp1", "a", "ens1np0"),
        cable("leaf1", "swp2", "b", "ens1np0"),
        cable("leaf1", "swp3", "c", "ens1np0"),
        cable("leaf9", "swp1", "d", "ens1np0"),
    ];
    let s = seen(&[
        ("leaf1", n("swp1", "x-unknown", "eth0", None)),
        ("leaf2", n("swp7", "b", "ens1np0", None)),
        ("leaf1", n("swp3", "c", "ens1np0", None)),
    ]);
    let r = compare(&exp, &s);
    let kinds: Vec<_> = r.mismatches.iter().map(|m| (m.kind, m.at.port.as_str())).collect();
    assert_eq!(kinds, [(MismatchKind::WrongNeighbor, "swp1"), (MismatchKind::WrongLeaf, "swp2")]);
    assert_eq!(r.mismatches[1].other, Some(Place { switch: "leaf2".into(), port: "swp7".into() }));
    assert_eq!((r.checked, r.ok), (3, 1), "leaf9 was not read: its cable is not checked");
    let empty = compare(&exp[..1], &seen(&[("leaf1", n("swp9", "z", "eth0", None))]));
    assert_eq!(empty.mismatches[0].kind, MismatchKind::Unplugged);
}

proptest! {
    #[test]
    fn parsers_never_panic_and_keep_only_named_ports(s in "\\PC{0,400}") {
        for f in [Format::SonicTable, Format::LldpdJson, Format::LldpdText, Format::EosDetail, Format::CiscoDetail] {
            for x in parse(f, &s) {
                prop_assert!(!x.local_port.is_empty());
            }
        }
    }

    #[test]
    fn sonic_table_rows_round_trip(rows in proptest::collection::vec(("Ethernet[0-9]{1,3}", "[a-z][a-z0-9-]{0,20}", "[A-Za-z0-9/:]{1,17}", "[A-Za-z0-9 ]{0,17}"), 0..8)) {
        let mut t = String::from("Capability codes: (R) Router, (B) Bridge, (O) Other\n");
        t.push_str(&format!("{:<12} {:<22} {:<18} {:<12} {}\n", "LocalPort", "RemoteDevice", "RemotePortID", "Capability", "RemotePortDescr"));
        t.push_str(&format!("{} {} {} {} {}\n", "-".repeat(12), "-".repeat(22), "-".repeat(18), "-".repeat(12), "-".repeat(17)));
        for (p, d, id, descr) in &rows {
            t.push_str(&format!("{p:<12} {d:<22} {id:<18} {:<12} {descr}\n", "BR"));
        }
        t.push_str(&format!("{}\nTotal entries displayed:  {}\n", "-".repeat(50), rows.len()));
        let v = parse(Format::SonicTable, &t);
        prop_assert_eq!(v.len(), rows.len());
        for (x, (p, d, id, descr)) in v.iter().zip(&rows) {
            prop_assert_eq!(&x.local_port, p);
            prop_assert_eq!(x.system_name.as_deref(), Some(d.as_str()));
            prop_assert_eq!(x.port_id.as_deref(), Some(id.as_str()));
            let want = value(descr);
            prop_assert_eq!(x.port_descr.as_deref(), want.as_deref());
        }
    }

    #[test]
    fn a_clean_floor_compares_clean(n_cables in 1usize..20) {
        let exp: Vec<Expected> = (0..n_cables).map(|i| cable("leaf1", &format!("Ethernet{}", i * 8), &format!("node{i}"), "ens1np0")).collect();
        let s = seen(&exp.iter().map(|e| ("leaf1", n(&e.port, &e.device, &e.nic, None))).collect::<Vec<_>>());
        let r = compare(&exp, &s);
        prop_assert_eq!((r.checked, r.ok, r.mismatches.len()), (n_cables, n_cables, 0));
    }
}
