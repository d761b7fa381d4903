//! The inventory's cabling against what the switches see: each expected cable (switch, port → device,
//! NIC) is checked against the neighbours read on that port, and the differences are named the way an
//! operator fixes them — two cables swapped (both ports, both ends), a NIC on the wrong leaf or port
//! (where it was expected, where it is), an empty port, a port with someone else on it.
//!
//! A neighbour is a device's NIC when its system name is the device and its port id or description is
//! the NIC's netdev or HCA name; a neighbour that announces only a MAC address is matched by host alone
//! (it cannot say which NIC it is, so it is never used to locate one).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::{Neighbor, same_host, same_port};

/// One cable the inventory describes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Expected {
    pub switch: String,
    pub port: String,
    pub device: String,
    /// The NIC's netdev (`ens1np0`), or its HCA when no netdev is written.
    pub nic: String,
    pub hca: String,
}

/// A device's NIC, as expected or as seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct End {
    pub device: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nic: Option<String>,
}

impl std::fmt::Display for End {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.nic {
            Some(n) => write!(f, "{} {n}", self.device),
            None => f.write_str(&self.device),
        }
    }
}

/// A switch port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Place {
    pub switch: String,
    pub port: String,
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.switch, self.port)
    }
}

lifeline_types::kebab_enum! {
    /// What is wrong with one cable (or two).
    pub enum MismatchKind {
        /// Two cables are in each other's ports.
        Swapped => "swapped",
        /// The NIC is on the expected switch, another port.
        WrongPort => "wrong-port",
        /// The NIC is on another switch.
        WrongLeaf => "wrong-leaf",
        /// Nothing answers on the port, and the NIC is seen nowhere.
        Unplugged => "unplugged",
        /// Something else is on the port, and the expected NIC is seen nowhere.
        WrongNeighbor => "wrong-neighbor",
    }
}

/// One difference between the inventory and the floor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    pub kind: MismatchKind,
    /// The port checked.
    pub at: Place,
    pub expected: End,
    /// Who is on `at` instead (none: the port is empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seen: Option<End>,
    /// Swapped: the other port; wrong leaf or port: where the expected NIC is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other: Option<Place>,
    /// The expected NIC of `other` (swapped only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_expected: Option<End>,
    /// Inventory devices this mismatch concerns (each gets a `cabling` fault).
    pub devices: Vec<String>,
    pub message: String,
}

/// The comparison's result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CablingReport {
    /// Cables of the inventory on switches that were read.
    pub checked: usize,
    /// Of those, the ones where the expected NIC was seen.
    pub ok: usize,
    pub mismatches: Vec<Mismatch>,
}

fn is_mac(s: &str) -> bool {
    let hex: String = s.chars().filter(|c| !matches!(c, ':' | '-' | '.')).collect();
    hex.len() == 12 && hex.chars().all(|c| c.is_ascii_hexdigit()) && hex.len() < s.len()
}

/// The interface names a neighbour announces (port id unless it is a MAC, and the description).
pub(crate) fn nic_names(n: &Neighbor) -> Vec<&str> {
    [n.port_id.as_deref(), n.port_descr.as_deref()].into_iter().flatten().filter(|s| !is_mac(s)).collect()
}

fn same_nic(e: &Expected, name: &str) -> bool {
    same_port(name, &e.nic) || same_port(name, &e.hca)
}

/// `n` is `e`'s NIC (`strict`: the NIC must be named, not just the host).
pub(crate) fn is(e: &Expected, n: &Neighbor, strict: bool) -> bool {
    let host = n.system_name.as_deref().is_some_and(|s| same_host(&e.device, s));
    let names = nic_names(n);
    host && if names.is_empty() { !strict } else { names.iter().any(|x| same_nic(e, x)) }
}

fn end_of(n: &Neighbor) -> End {
    let device = n.system_name.clone().or_else(|| n.chassis_id.clone()).unwrap_or_else(|| "?".into());
    End { device, nic: nic_names(n).first().map(|s| s.to_string()) }
}

pub(crate) fn expected_end(e: &Expected) -> End {
    End { device: e.device.clone(), nic: Some(e.nic.clone()) }
}

pub(crate) fn place(e: &Expected) -> Place {
    Place { switch: e.switch.clone(), port: e.port.clone() }
}

/// Where the read switches see `e`'s NIC by name (a MAC-only neighbour locates nothing).
pub(crate) fn locate(e: &Expected, seen: &BTreeMap<String, Vec<Neighbor>>) -> Option<Place> {
    seen.iter().find_map(|(sw, ns)| {
        ns.iter().find(|n| is(e, n, true)).map(|n| Place { switch: sw.clone(), port: n.local_port.clone() })
    })
}

enum State<'a> {
    Ok,
    Empty,
    Other(&'a Neighbor),
}

/// Compares `expected` with the neighbours read per switch (`seen`: switch name → its neighbours).
/// Cables on switches absent from `seen` (not read) are not checked.
pub fn compare(expected: &[Expected], seen: &BTreeMap<String, Vec<Neighbor>>) -> CablingReport {
    let states: Vec<Option<State<'_>>> = expected
        .iter()
        .map(|e| {
            let ns: Vec<&Neighbor> =
                seen.get(&e.switch)?.iter().filter(|n| same_port(&n.local_port, &e.port)).collect();
            Some(if ns.iter().any(|n| is(e, n, false)) {
                State::Ok
            } else {
                ns.first().map_or(State::Empty, |n| State::Other(n))
            })
        })
        .collect();
    let locate = |e: &Expected| locate(e, seen);
    let mut report = CablingReport {
        checked: states.iter().flatten().count(),
        ok: states.iter().flatten().filter(|s| matches!(s, State::Ok)).count(),
        mismatches: Vec::new(),
    };
    let mut done: BTreeSet<usize> = BTreeSet::new();
    for (i, e) in expected.iter().enumerate() {
        let Some(state) = &states[i] else { continue };
        if matches!(state, State::Ok) || done.contains(&i) {
            continue;
        }
        done.insert(i);
        if let State::Other(y) = state {
            let swap = expected.iter().enumerate().find(|(j, f)| {
                !done.contains(j)
                    && is(f, y, false)
                    && matches!(&states[*j], Some(State::Other(x)) if is(e, x, false))
            });
            if let Some((j, f)) = swap {
                done.insert(j);
                let mut devices = vec![e.device.clone(), f.device.clone()];
                devices.dedup();
                report.mismatches.push(Mismatch {
                    kind: MismatchKind::Swapped,
                    at: place(e),
                    expected: expected_end(e),
                    seen: Some(end_of(y)),
                    other: Some(place(f)),
                    other_expected: Some(expected_end(f)),
                    devices,
                    message: format!(
                        "{} has {} and {} has {} (expected the other way round)",
                        place(e),
                        expected_end(f),
                        place(f),
                        expected_end(e)
                    ),
                });
                continue;
            }
        }
        let seen_end = match state {
            State::Other(y) => Some(end_of(y)),
            _ => None,
        };
        let on_port = match &seen_end {
            Some(s) => format!("{} has {s}", place(e)),
            None => format!("nothing on {}", place(e)),
        };
        let mut devices = vec![e.device.clone()];
        if let Some(s) = &seen_end
            && expected.iter().any(|f| f.device == s.device)
            && s.device != e.device
        {
            devices.push(s.device.clone());
        }
        let (kind, other, message) = match locate(e) {
            Some(p) if p.switch != e.switch => (
                MismatchKind::WrongLeaf,
                Some(p.clone()),
                format!("{} is on {p}, expected on {} ({on_port})", expected_end(e), place(e)),
            ),
            Some(p) => (
                MismatchKind::WrongPort,
                Some(p.clone()),
                format!("{} is on {p}, expected on {} ({on_port})", expected_end(e), place(e)),
            ),
            None if seen_end.is_none() => (
                MismatchKind::Unplugged,
                None,
                format!("nothing on {}: {} is unplugged or silent", place(e), expected_end(e)),
            ),
            None => (MismatchKind::WrongNeighbor, None, format!("{on_port}, expected {}", expected_end(e))),
        };
        report.mismatches.push(Mismatch {
            kind,
            at: place(e),
            expected: expected_end(e),
            seen: seen_end,
            other,
            other_expected: None,
            devices,
            message,
        });
    }
    report
}
