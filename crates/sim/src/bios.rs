//! A simulated host's BIOS settings: attributes in force and pending ones, which take effect when the host
//! has booted again after they were set (a BIOS applies its settings at POST; the BMC shows the result
//! once the host is up). Made on first use, like the media tray.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::{Value, json};

/// The attributes a GPU node's BIOS starts with (names as Dell, HPE and AMI BIOSes spell them).
pub fn defaults() -> BTreeMap<String, Value> {
    [
        ("BootMode", json!("Uefi")),
        ("SriovGlobalEnable", json!("Enabled")),
        ("ProcVirtualization", json!("Enabled")),
        ("IommuSupport", json!("Enabled")),
        ("AcsControl", json!("Disabled")),
        ("MmioAbove4Gb", json!("Enabled")),
        ("WorkloadProfile", json!("HighPerformance")),
        ("SysProfile", json!("PerfOptimized")),
        ("ProcTurboMode", json!("Enabled")),
        ("NumaNodesPerSocket", json!(1)),
        ("PxeDev1EnDis", json!("Enabled")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

#[derive(Debug)]
struct State {
    current: BTreeMap<String, Value>,
    pending: BTreeMap<String, Value>,
    /// The host's boot count when `pending` was last changed.
    pending_at_boot: u32,
}

#[derive(Debug, Default)]
pub struct Bios(Mutex<Option<Box<State>>>);

impl Bios {
    fn with<T>(&self, boots: u32, f: impl FnOnce(&mut State) -> T) -> T {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let s = g.get_or_insert_with(|| {
            Box::new(State { current: defaults(), pending: BTreeMap::new(), pending_at_boot: 0 })
        });
        if !s.pending.is_empty() && boots > s.pending_at_boot {
            let p = std::mem::take(&mut s.pending);
            s.current.extend(p);
        }
        f(s)
    }

    /// (in force, pending) as of `boots` (the host's boot count: pending settings set before the last
    /// boot are in force now).
    pub fn read(&self, boots: u32) -> (BTreeMap<String, Value>, BTreeMap<String, Value>) {
        self.with(boots, |s| (s.current.clone(), s.pending.clone()))
    }

    /// Stages attributes; an unknown name is refused (its name returned) and nothing is staged.
    pub fn stage(&self, boots: u32, changes: BTreeMap<String, Value>) -> Result<(), String> {
        self.with(boots, |s| {
            if let Some(k) = changes.keys().find(|k| !s.current.contains_key(*k)) {
                return Err(k.clone());
            }
            s.pending.extend(changes);
            s.pending_at_boot = boots;
            Ok(())
        })
    }

    /// Changes an attribute in force directly (a test's drift: someone changed it in the setup screen).
    pub fn set_current(&self, name: &str, value: Value) {
        self.with(0, |s| {
            s.current.insert(name.to_owned(), value);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_takes_effect_after_the_next_boot() {
        let b = Bios::default();
        let change: BTreeMap<String, Value> = [("SriovGlobalEnable".to_owned(), json!("Disabled"))].into();
        b.stage(3, change).unwrap();
        let (cur, pending) = b.read(3);
        assert_eq!((cur["SriovGlobalEnable"].as_str(), pending.len()), (Some("Enabled"), 1));
        let (cur, pending) = b.read(4);
        assert_eq!((cur["SriovGlobalEnable"].as_str(), pending.len()), (Some("Disabled"), 0));
        assert_eq!(b.stage(4, [("Nope".to_owned(), json!(1))].into()), Err("Nope".to_owned()));
    }
}
