//! The cabling rule: a device named by a cabling mismatch (a NIC on the wrong leaf or port, two cables
//! swapped, an empty port where its rail should be) has a `cabling` fault; a device whose every cable
//! was read on its switch and found where the inventory says has it proven gone. A device with a cable
//! on a switch that could not be read is neither: nothing was observed.

use std::collections::{BTreeMap, BTreeSet};

use lifeline_netcfg::lldp::{CablingReport, Expected};

use super::Finding;

pub const CABLING: &str = "cabling";

/// What one comparison says about the cabling rule, per device.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CablingVerdict {
    pub raise: Vec<(String, Finding)>,
    pub clear: Vec<String>,
}

/// The rule over one comparison; `read`: the switches whose neighbours were read.
pub fn verdict(expected: &[Expected], report: &CablingReport, read: &BTreeSet<String>) -> CablingVerdict {
    let mut by_device: BTreeMap<&str, Vec<&lifeline_netcfg::lldp::Mismatch>> = BTreeMap::new();
    for m in &report.mismatches {
        for d in &m.devices {
            by_device.entry(d.as_str()).or_default().push(m);
        }
    }
    let mut v = CablingVerdict::default();
    for (device, ms) in &by_device {
        let message = ms.iter().map(|m| m.message.as_str()).collect::<Vec<_>>().join("; ");
        v.raise.push((
            device.to_string(),
            Finding {
                kind: CABLING,
                severity: "warning",
                message,
                detail: serde_json::json!({ "mismatches": ms }),
            },
        ));
    }
    let devices: BTreeSet<&str> = expected.iter().map(|e| e.device.as_str()).collect();
    for d in devices {
        let all_read = expected.iter().filter(|e| e.device == d).all(|e| read.contains(&e.switch));
        if all_read && !by_device.contains_key(d) {
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
        let v = verdict(&exp, &report, &BTreeSet::from(["leaf1".to_owned()]));
        let raised: Vec<&str> = v.raise.iter().map(|(d, _)| d.as_str()).collect();
        assert_eq!(raised, ["a", "b"]);
        assert!(v.raise[0].1.message.contains("leaf1 Ethernet8"), "{}", v.raise[0].1.message);
        assert_eq!(v.clear, ["c"], "d's switch was not read: neither raised nor cleared");
    }
}
