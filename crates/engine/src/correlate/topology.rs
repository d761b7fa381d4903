//! What devices share, from the inventory's topology keys: each rail's leaf (and the leaf's port group of
//! that rail), each device's rack, PDUs, NVLink domain and OOB switch. A [`Unit`] is what one observation
//! is about (a node, or one rail of a node); a [`Component`] is a part several units depend on, and its
//! dependents are what the correlation score divides by.

use std::collections::{BTreeMap, HashMap};

use lifeline_inventory::Inventory;
use serde::Serialize;

lifeline_types::kebab_enum! {
    /// The kinds of shared part Lifeline can blame.
    pub enum ComponentKind {
        /// One leaf's ports of one rail (`mlx5_3` of every node cabled to the leaf): the leaf's rail-3
        /// port group in a rail-optimised fabric.
        LeafPortGroup => "leaf-port-group",
        /// Every rail cabled to one leaf.
        Leaf => "leaf",
        Rack => "rack",
        Pdu => "pdu",
        NvlinkDomain => "nvlink-domain",
        OobSwitch => "oob-switch",
    }
}

/// A shared part.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize)]
pub struct Component {
    pub kind: ComponentKind,
    /// The leaf, rack, PDU, NVLink domain or OOB switch as the inventory names it.
    pub name: String,
    /// For a leaf port group: the rail's HCA (`mlx5_3`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rail: Option<String>,
}

impl Component {
    /// The device a fault on this part is recorded on: the switch itself for a leaf, a port group or an
    /// OOB switch; `rack:NAME`, `pdu:NAME`, `nvlink-domain:NAME` for parts that are not devices.
    pub fn device(&self) -> String {
        match self.kind {
            ComponentKind::LeafPortGroup | ComponentKind::Leaf | ComponentKind::OobSwitch => {
                self.name.clone()
            }
            k => format!("{}:{}", k.as_str(), self.name),
        }
    }

    /// In words, for fault messages: "backend-leaf-01 ports of rail mlx5_3".
    pub fn describe(&self) -> String {
        match (&self.kind, &self.rail) {
            (ComponentKind::LeafPortGroup, Some(r)) => format!("{} ports of rail {r}", self.name),
            (k, _) => format!("{} {}", k.as_str(), self.name),
        }
    }
}

/// What one observation is about: a device, or one rail (HCA) of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize)]
pub struct Unit {
    pub device: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rail: Option<String>,
}

/// The parts each unit depends on, and how many units depend on each part.
#[derive(Debug, Clone, Default)]
pub struct Topology {
    parts: HashMap<Unit, Vec<Component>>,
    dependents: HashMap<Component, usize>,
    /// (device, netdev or HCA) -> HCA, to read a console's `rdma3` as rail `mlx5_3`.
    rail_names: HashMap<(String, String), String>,
    /// (device, HCA) -> the leaf port its rail is cabled to, for the members' ports.
    ports: BTreeMap<(String, String), String>,
    /// (device, HCA) -> the leaf its rail is cabled to.
    leaves: BTreeMap<(String, String), String>,
}

impl Topology {
    pub fn from_inventory(inv: &Inventory) -> Topology {
        let mut t = Topology::default();
        for d in inv.devices.iter().filter(|d| d.bmc.is_some()) {
            let name = d.name.to_string();
            let mut node = vec![Component { kind: ComponentKind::Rack, name: d.rack.clone(), rail: None }];
            node.extend(d.pdus.iter().map(|p| Component {
                kind: ComponentKind::Pdu,
                name: p.clone(),
                rail: None,
            }));
            if let Some(n) = &d.nvlink_domain {
                node.push(Component { kind: ComponentKind::NvlinkDomain, name: n.clone(), rail: None });
            }
            if let Some(s) = &d.oob_switch {
                node.push(Component { kind: ComponentKind::OobSwitch, name: s.clone(), rail: None });
            }
            t.add(Unit { device: name.clone(), rail: None }, node);
            for r in &d.rails {
                t.rail_names.insert((name.clone(), r.hca.clone()), r.hca.clone());
                if let Some(n) = &r.netdev {
                    t.rail_names.insert((name.clone(), n.clone()), r.hca.clone());
                }
                let Some(leaf) = &r.leaf else { continue };
                t.leaves.insert((name.clone(), r.hca.clone()), leaf.clone());
                if let Some(p) = &r.port {
                    t.ports.insert((name.clone(), r.hca.clone()), p.clone());
                }
                let parts = vec![
                    Component {
                        kind: ComponentKind::LeafPortGroup,
                        name: leaf.clone(),
                        rail: Some(r.hca.clone()),
                    },
                    Component { kind: ComponentKind::Leaf, name: leaf.clone(), rail: None },
                ];
                t.add(Unit { device: name.clone(), rail: Some(r.hca.clone()) }, parts);
            }
        }
        t
    }

    fn add(&mut self, unit: Unit, parts: Vec<Component>) {
        for p in &parts {
            *self.dependents.entry(p.clone()).or_default() += 1;
        }
        self.parts.insert(unit, parts);
    }

    /// The parts `unit` depends on (none when the inventory does not say).
    pub fn parts(&self, unit: &Unit) -> &[Component] {
        self.parts.get(unit).map_or(&[], Vec::as_slice)
    }

    /// The failure domains `device` belongs to, beside its rack: every leaf its rails are cabled to, its
    /// PDUs, its NVLink domain and its OOB switch (the runbook guard's per-domain budget counts by these).
    pub fn domains(&self, device: &str) -> std::collections::BTreeSet<&Component> {
        self.parts
            .iter()
            .filter(|(u, _)| u.device == device)
            .flat_map(|(_, parts)| parts)
            .filter(|c| !matches!(c.kind, ComponentKind::LeafPortGroup | ComponentKind::Rack))
            .collect()
    }

    /// How many units depend on `c`.
    pub fn dependents(&self, c: &Component) -> usize {
        self.dependents.get(c).copied().unwrap_or(0)
    }

    /// The HCA of `device`'s rail named `name` (its HCA or its netdev), if the inventory has it.
    pub fn rail(&self, device: &str, name: &str) -> Option<&str> {
        self.rail_names.get(&(device.to_owned(), name.to_owned())).map(String::as_str)
    }

    /// The leaf `device`'s rail `hca` is cabled to.
    pub fn leaf(&self, device: &str, hca: &str) -> Option<&str> {
        self.leaves.get(&(device.to_owned(), hca.to_owned())).map(String::as_str)
    }

    /// The ports of `leaf` the inventory cables rails to, in order.
    pub fn leaf_ports(&self, leaf: &str) -> Vec<String> {
        let mut out: Vec<String> = self
            .leaves
            .iter()
            .filter(|(_, l)| l.as_str() == leaf)
            .filter_map(|(k, _)| self.ports.get(k).cloned())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The leaf port `device`'s rail `hca` is cabled to.
    pub fn port(&self, device: &str, hca: &str) -> Option<&str> {
        self.ports.get(&(device.to_owned(), hca.to_owned())).map(String::as_str)
    }
}
