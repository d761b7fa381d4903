//! The node's end of each cable: what each NIC hears over LLDP (lldpd on the node, reported by the agent)
//! against the inventory and against what the switches see at the other end.
//!
//! Why both ends: one side alone can be wrong in ways it cannot know — a leaf whose LLDP table is stale
//! after a hot swap, a NIC whose firmware answers LLDP itself so the host's lldpd hears nothing, a node
//! announcing the wrong host name. When both ends were read and place the NIC differently, neither is
//! believed: the disagreement is reported as such. When the switch could not be read, the node's end alone
//! still says whether the cable is where the inventory puts it.
//!
//! On the node side a neighbour's local port is the node's NIC, its system name the switch and its port id
//! or description the switch's port (lldpd on a Linux switch announces the MAC as port id and the port name
//! as description; SONiC, EOS and Cumulus announce the port name as id).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::compare::{End, Expected, Place, expected_end, is, locate, nic_names, place};
use super::{Neighbor, same_host, same_port};

lifeline_types::kebab_enum! {
    /// What the node's end of a cable says that the switch side does not already say.
    pub enum NodeFindingKind {
        /// Both ends were read and place the NIC differently.
        SidesDisagree => "sides-disagree",
        /// The switch was not read; the NIC hears another switch or port than the inventory's.
        NodeWrongPlace => "node-wrong-place",
        /// The switch was not read; the NIC hears no LLDP neighbour at all.
        NodeHearsNothing => "node-hears-nothing",
    }
}

/// One finding of the node side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeFinding {
    pub kind: NodeFindingKind,
    /// Where the inventory puts the cable.
    pub at: Place,
    pub expected: End,
    /// Where the NIC hears it is plugged (none: it hears nobody).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_view: Option<Place>,
    /// Where the read switches see the NIC (sides-disagree only; none: on no port of theirs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub switch_view: Option<Place>,
    /// Inventory devices concerned (each gets a `cabling` fault).
    pub devices: Vec<String>,
    pub message: String,
}

/// The node side of one comparison.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct NodeSideReport {
    /// Cables whose device reported what its NICs hear.
    pub checked: usize,
    /// Of those, the ones whose NIC hears the inventory's switch and port.
    pub ok: usize,
    pub findings: Vec<NodeFinding>,
    /// (switch, port) of the cables the node's end confirms (the fault rule clears on them when their
    /// switch was not read).
    #[serde(skip)]
    pub confirmed: BTreeSet<(String, String)>,
}

/// Whether a neighbour heard by a NIC is `p` (the switch by system name, the port by id or description).
fn hears(n: &Neighbor, p: &Place) -> bool {
    n.system_name.as_deref().is_some_and(|s| same_host(&p.switch, s))
        && nic_names(n).iter().any(|x| same_port(x, &p.port))
}

/// The place a NIC's neighbour names, spelled as `like` spells it when it is that place.
fn heard_place(n: &Neighbor, like: Option<&Place>) -> Place {
    if let Some(p) = like
        && hears(n, p)
    {
        return p.clone();
    }
    let switch = n.system_name.clone().or_else(|| n.chassis_id.clone()).unwrap_or_else(|| "?".into());
    let names = nic_names(n);
    let port = names.first().map_or_else(|| "?".to_owned(), |s| s.to_string());
    Place { switch, port }
}

/// What `e`'s NIC hears: `None` when its device sent no LLDP report, `Some(None)` when the NIC hears
/// nobody.
fn node_end<'a>(e: &Expected, nodes: &'a BTreeMap<String, Vec<Neighbor>>) -> Option<Option<&'a Neighbor>> {
    let ns = nodes.get(&e.device)?;
    Some(ns.iter().find(|n| same_port(&n.local_port, &e.nic) || same_port(&n.local_port, &e.hca)))
}

/// Where the read switches see `e`'s NIC: `None` when its switch was not read, `Some(None)` when no read
/// switch has it.
fn switch_end(e: &Expected, switches: &BTreeMap<String, Vec<Neighbor>>) -> Option<Option<Place>> {
    let on_switch = switches.get(&e.switch)?;
    if on_switch.iter().any(|n| same_port(&n.local_port, &e.port) && is(e, n, false)) {
        return Some(Some(place(e)));
    }
    Some(locate(e, switches))
}

fn describe(p: Option<&Place>) -> String {
    p.map_or_else(|| "nobody".to_owned(), |p| p.to_string())
}

/// Compares each cable's node end (`nodes`: device → what its NICs hear) with the inventory and with the
/// switch end (`switches`: switch → its neighbours, as [`super::compare`] reads them). Cables of devices
/// without a report are not checked from the node side.
pub fn compare_sides(
    expected: &[Expected],
    switches: &BTreeMap<String, Vec<Neighbor>>,
    nodes: &BTreeMap<String, Vec<Neighbor>>,
) -> NodeSideReport {
    let mut r = NodeSideReport::default();
    for e in expected {
        let Some(heard) = node_end(e, nodes) else { continue };
        r.checked += 1;
        let at = place(e);
        let node_ok = heard.is_some_and(|n| hears(n, &at));
        if node_ok {
            r.ok += 1;
            r.confirmed.insert((e.switch.clone(), e.port.clone()));
        }
        let sw = switch_end(e, switches);
        let node_view = heard.map(|n| heard_place(n, sw.as_ref().and_then(|s| s.as_ref()).or(Some(&at))));
        let finding = |kind, switch_view: Option<Place>, message: String| NodeFinding {
            kind,
            at: at.clone(),
            expected: expected_end(e),
            node_view: node_view.clone(),
            switch_view,
            devices: vec![e.device.clone()],
            message,
        };
        match sw {
            None if node_ok => {}
            None => {
                let (kind, what) = match &node_view {
                    Some(p) => (NodeFindingKind::NodeWrongPlace, format!("hears {p}")),
                    None => (NodeFindingKind::NodeHearsNothing, "hears no LLDP neighbour".to_owned()),
                };
                r.findings.push(finding(
                    kind,
                    None,
                    format!("{} {what}, expected on {at} ({} not read)", expected_end(e), e.switch),
                ));
            }
            Some(sw_place) => {
                let agree = match (&sw_place, heard) {
                    (Some(p), Some(n)) => hears(n, p),
                    (None, None) => true,
                    // The switches read do not see the NIC, and the NIC hears a switch that was not read:
                    // nothing contradicts.
                    (None, Some(n)) => {
                        !switches.keys().any(|s| n.system_name.as_deref().is_some_and(|h| same_host(s, h)))
                    }
                    (Some(_), None) => false,
                };
                if !agree {
                    r.findings.push(finding(
                        NodeFindingKind::SidesDisagree,
                        sw_place.clone(),
                        format!(
                            "{}: the switches see it on {}, the node hears {} (the inventory says {at})",
                            expected_end(e),
                            describe(sw_place.as_ref()),
                            describe(node_view.as_ref()),
                        ),
                    ));
                }
            }
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::lldp::{Format, parse};

    /// gpu-node-01's two rails on leaf1, as cabled when lldpd recorded both ends (testdata/README.md).
    fn recorded_cabling() -> Vec<Expected> {
        ["ens1np0", "ens2np0"]
            .iter()
            .zip(["Ethernet0", "Ethernet8"])
            .enumerate()
            .map(|(i, (nic, port))| Expected {
                switch: "leaf1".into(),
                port: port.into(),
                device: "gpu-node-01".into(),
                nic: nic.to_string(),
                hca: format!("mlx5_{i}"),
            })
            .collect()
    }

    fn one(key: &str, v: Vec<Neighbor>) -> BTreeMap<String, Vec<Neighbor>> {
        BTreeMap::from([(key.to_owned(), v)])
    }

    fn recorded_node() -> BTreeMap<String, Vec<Neighbor>> {
        one("gpu-node-01", parse(Format::LldpdJson, include_str!("testdata/lldpd-node.json")))
    }

    fn recorded_switch() -> Vec<Neighbor> {
        parse(Format::LldpdJson, include_str!("testdata/lldpd-switch.json"))
    }

    #[test]
    fn both_recorded_ends_agree_with_the_inventory() {
        let r = compare_sides(&recorded_cabling(), &one("leaf1", recorded_switch()), &recorded_node());
        assert_eq!((r.checked, r.ok, r.findings.len()), (2, 2, 0), "{r:?}");
        assert_eq!(r.confirmed.len(), 2);
    }

    #[test]
    fn a_switch_that_sees_a_swap_the_node_does_not_hear_is_a_disagreement() {
        // The leaf's table says the two cables are crossed; the node's NICs still hear the inventory's ports.
        let mut sw = recorded_switch();
        sw[0].local_port = "Ethernet8".into();
        sw[1].local_port = "Ethernet0".into();
        let r = compare_sides(&recorded_cabling(), &one("leaf1", sw), &recorded_node());
        assert_eq!((r.checked, r.ok), (2, 2), "the node's end alone is as described: {r:?}");
        let kinds: Vec<_> = r.findings.iter().map(|f| (f.kind, f.at.port.as_str())).collect();
        assert_eq!(
            kinds,
            [(NodeFindingKind::SidesDisagree, "Ethernet0"), (NodeFindingKind::SidesDisagree, "Ethernet8")]
        );
        let f = &r.findings[0];
        assert_eq!(f.switch_view, Some(Place { switch: "leaf1".into(), port: "Ethernet8".into() }));
        assert_eq!(f.node_view, Some(Place { switch: "leaf1".into(), port: "Ethernet0".into() }));
        assert!(
            f.message.contains("the switches see it on leaf1 Ethernet8, the node hears leaf1 Ethernet0"),
            "{}",
            f.message
        );
    }

    #[test]
    fn a_nic_that_hears_nobody_while_the_switch_sees_it_is_a_disagreement() {
        let mut node = recorded_node();
        node.get_mut("gpu-node-01").unwrap().retain(|n| n.local_port == "ens1np0");
        let r = compare_sides(&recorded_cabling(), &one("leaf1", recorded_switch()), &node);
        assert_eq!(r.findings.len(), 1, "{r:?}");
        assert_eq!(
            (r.findings[0].kind, r.findings[0].expected.nic.as_deref()),
            (NodeFindingKind::SidesDisagree, Some("ens2np0"))
        );
        assert_eq!(r.findings[0].node_view, None);
    }

    #[test]
    fn with_the_switch_unread_the_node_end_alone_names_the_wrong_port() {
        let mut exp = recorded_cabling();
        exp.swap(0, 1);
        (exp[0].nic, exp[1].nic) = (exp[1].nic.clone(), exp[0].nic.clone());
        // The inventory now says ens1np0 on Ethernet8 and ens2np0 on Ethernet0: the recording contradicts it.
        let r = compare_sides(&exp, &BTreeMap::new(), &recorded_node());
        assert_eq!((r.checked, r.ok), (2, 0));
        assert!(r.findings.iter().all(|f| f.kind == NodeFindingKind::NodeWrongPlace), "{r:?}");
        assert_eq!(r.findings[0].node_view, Some(Place { switch: "leaf1".into(), port: "Ethernet0".into() }));
        assert!(r.findings[0].message.contains("(leaf1 not read)"), "{}", r.findings[0].message);
        // A device without a report is not checked from its end.
        let r = compare_sides(&exp, &BTreeMap::new(), &BTreeMap::new());
        assert_eq!((r.checked, r.findings.len()), (0, 0));
        // A report in which the NIC hears nobody.
        let r = compare_sides(&exp, &BTreeMap::new(), &one("gpu-node-01", Vec::new()));
        assert!(r.findings.iter().all(|f| f.kind == NodeFindingKind::NodeHearsNothing), "{r:?}");
    }

    #[test]
    fn both_ends_seeing_the_same_miscabling_add_nothing_to_the_switch_side() {
        // The NIC is on Ethernet16 and both ends say so: the switch-side mismatch says it all.
        let exp = &recorded_cabling()[..1];
        let mut sw = recorded_switch();
        sw.truncate(1);
        sw[0].local_port = "Ethernet16".into();
        let mut node = recorded_node();
        node.get_mut("gpu-node-01").unwrap()[0].port_descr = Some("Ethernet16".into());
        let r = compare_sides(exp, &one("leaf1", sw), &node);
        assert_eq!((r.checked, r.ok, r.findings.len()), (1, 0, 0), "{r:?}");
    }

    proptest! {
        #[test]
        fn a_clean_floor_is_clean_from_both_ends(k in 1usize..16) {
            let exp: Vec<Expected> = (0..k).map(|i| Expected {
                switch: format!("leaf{}", i % 3), port: format!("Ethernet{}", i * 8),
                device: format!("node{i}"), nic: "ens1np0".into(), hca: "mlx5_0".into(),
            }).collect();
            let mut sw: BTreeMap<String, Vec<Neighbor>> = BTreeMap::new();
            let mut nodes: BTreeMap<String, Vec<Neighbor>> = BTreeMap::new();
            for e in &exp {
                sw.entry(e.switch.clone()).or_default().push(Neighbor {
                    local_port: e.port.clone(), system_name: Some(e.device.clone()),
                    port_id: Some("aa:bb:cc:00:00:01".into()), port_descr: Some(e.nic.clone()), ..Neighbor::default()
                });
                nodes.entry(e.device.clone()).or_default().push(Neighbor {
                    local_port: e.nic.clone(), system_name: Some(format!("{}.fabric", e.switch)),
                    port_id: Some(e.port.clone()), ..Neighbor::default()
                });
            }
            let r = compare_sides(&exp, &sw, &nodes);
            prop_assert_eq!((r.checked, r.ok, r.findings.len()), (k, k, 0));
        }
    }
}
