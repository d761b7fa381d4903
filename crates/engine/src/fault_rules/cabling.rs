//! The cabling rule: a device named by a cabling mismatch (a NIC on the wrong leaf or port, two cables
//! swapped, an empty port where its rail should be) has a `cabling` fault; a device whose every cable
//! was read on its switch and found where the inventory says has it proven gone. A device with a cable
//! on a switch that could not be read is neither: nothing was observed — unless the node's own end of
//! that cable (its agent's LLDP report) hears the inventory's switch and port. The two ends disagreeing
//! is a `cabling` fault too: one of them is wrong, and the floor is not known to match the inventory.

use std::collections::{BTreeMap, BTreeSet};

use lifeline_netcfg::lldp::{CablingReport, Expected, NodeSideReport};

use super::Finding;

pub const CABLING: &str = "cabling";

/// What one comparison says about the cabling rule, per device.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CablingVerdict {
    pub raise: Vec<(String, Finding)>,
    pub clear: Vec<String>,
}

/// The rule over one comparison; `sides`: the nodes' ends; `read`: the switches whose neighbours were read.
pub fn verdict(
    expected: &[Expected],
    report: &CablingReport,
    sides: &NodeSideReport,
    read: &BTreeSet<String>,
) -> CablingVerdict {
    let mut by_device: BTreeMap<
        &str,
        (Vec<&lifeline_netcfg::lldp::Mismatch>, Vec<&lifeline_netcfg::lldp::NodeFinding>),
    > = BTreeMap::new();
    for m in &report.mismatches {
        for d in &m.devices {
            by_device.entry(d.as_str()).or_default().0.push(m);
        }
    }
    for f in &sides.findings {
        for d in &f.devices {
            by_device.entry(d.as_str()).or_default().1.push(f);
        }
    }
    let mut v = CablingVerdict::default();
    for (device, (ms, fs)) in &by_device {
        let message = ms
            .iter()
            .map(|m| m.message.as_str())
            .chain(fs.iter().map(|f| f.message.as_str()))
            .collect::<Vec<_>>()
            .join("; ");
        let mut detail = serde_json::json!({ "mismatches": ms });
        if !fs.is_empty() {
            detail["node_findings"] = serde_json::json!(fs);
        }
        v.raise.push((device.to_string(), Finding { kind: CABLING, severity: "warning", message, detail }));
    }
    let devices: BTreeSet<&str> = expected.iter().map(|e| e.device.as_str()).collect();
    for d in devices {
        let all_seen = expected.iter().filter(|e| e.device == d).all(|e| {
            read.contains(&e.switch) || sides.confirmed.contains(&(e.switch.clone(), e.port.clone()))
        });
        if all_seen && !by_device.contains_key(d) {
            v.clear.push(d.to_owned());
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use lifeline_netcfg::lldp::{Neighbor, compare};

    use super::*;

    fn cable(switch: &str, port: &str, device: &str) -> Expected {
        Expected {
            switch: switch.into(),
            port: port.into(),
            device: device.into(),
            nic: "ens1np0".into(),
            hca: "mlx5_0".into(),
        }
    }

    fn on(port: &str, host: &str) -> Neighbor {
        Neighbor {
            local_port: port.into(),
            system_name: Some(host.into()),
            port_descr: Some("ens1np0".into()),
            ..Neighbor::default()
        }
    }

    #[test]
    fn a_swap_raises_on_both_nodes_and_clears_the_rest_of_what_was_read() {
        let exp = [
            cable("leaf1", "Ethernet0", "a"),
            cable("leaf1", "Ethernet8", "b"),
            cable("leaf1", "Ethernet16", "c"),
            cable("leaf2", "Ethernet0", "d"),
        ];
        let seen = BTreeMap::from([(
            "leaf1".to_owned(),
            vec![on("Ethernet0", "b"), on("Ethernet8", "a"), on("Ethernet16", "c")],
        )]);
        let report = compare(&exp, &seen);
        let none = NodeSideReport::default();
        let v = verdict(&exp, &report, &none, &BTreeSet::from(["leaf1".to_owned()]));
        let raised: Vec<&str> = v.raise.iter().map(|(d, _)| d.as_str()).collect();
        assert_eq!(raised, ["a", "b"]);
        assert!(v.raise[0].1.message.contains("leaf1 Ethernet8"), "{}", v.raise[0].1.message);
        assert_eq!(v.clear, ["c"], "d's switch was not read: neither raised nor cleared");
    }

    fn heard(switch: &str, port: &str) -> Neighbor {
        Neighbor {
            local_port: "ens1np0".into(),
            system_name: Some(switch.into()),
            port_id: Some(port.into()),
            ..Neighbor::default()
        }
    }

    #[test]
    fn the_node_end_raises_a_disagreement_and_clears_behind_an_unread_switch() {
        let exp = [cable("leaf1", "Ethernet0", "a"), cable("leaf2", "Ethernet0", "d")];
        // leaf1 sees a where expected, a's NIC hears leaf1 Ethernet4; leaf2 not read, d hears its port.
        let seen = BTreeMap::from([("leaf1".to_owned(), vec![on("Ethernet0", "a")])]);
        let nodes = BTreeMap::from([
            ("a".to_owned(), vec![heard("leaf1", "Ethernet4")]),
            ("d".to_owned(), vec![heard("leaf2", "Ethernet0")]),
        ]);
        let report = compare(&exp, &seen);
        let sides = lifeline_netcfg::lldp::compare_sides(&exp, &seen, &nodes);
        let v = verdict(&exp, &report, &sides, &BTreeSet::from(["leaf1".to_owned()]));
        assert_eq!(v.raise.len(), 1);
        assert_eq!(v.raise[0].0, "a");
        assert!(v.raise[0].1.message.contains("the node hears leaf1 Ethernet4"), "{}", v.raise[0].1.message);
        assert_eq!(v.raise[0].1.detail["node_findings"][0]["kind"], "sides-disagree");
        assert_eq!(v.clear, ["d"], "d's own end confirms the cable its unread switch could not");
    }
}
