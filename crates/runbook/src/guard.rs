//! The blast-radius guard: whether one more run may start now. A rack-wide fault (a PDU, a leaf, a bad
//! firmware push) looks like many node faults at once; cycling every node in the rack does not fix it and
//! can make it worse, so runs are limited per rack, per failure domain (a leaf, a PDU, an NVLink domain, an
//! OOB switch: the inventory's topology keys), per role and in the fleet, and refused outright where a
//! large share of a rack is already in recovery.

use std::collections::{BTreeMap, BTreeSet};

use lifeline_engine::config::GuardConfig;
use lifeline_engine::correlate::Topology;
use lifeline_engine::ops::runs::RunRow;
use lifeline_inventory::{Device, Inventory};
use serde::Serialize;

/// What the guard says about one more run on one target.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct GuardVerdict {
    pub allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub active_fleet: usize,
    pub active_rack: usize,
    pub active_role: usize,
    /// Targets of the same rack and role in recovery (active or escalated runs), and the group's size.
    pub in_recovery: usize,
    pub group_size: usize,
    /// Other targets with an active run in each failure domain of this target (`leaf backend-leaf-01`,
    /// `pdu pdu-r01-a`, …).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub active_domain: BTreeMap<String, usize>,
}

/// Decides. `active` are runs in an active state, `escalated` those that ended needing a human.
pub fn evaluate(
    cfg: &GuardConfig,
    inv: &Inventory,
    target: &Device,
    active: &[RunRow],
    escalated: &[RunRow],
) -> GuardVerdict {
    let rack = target.rack.as_str();
    let role = target.role.to_string();
    let active_fleet = active.len();
    let active_rack = active.iter().filter(|r| r.rack.as_deref() == Some(rack)).count();
    let active_role = active.iter().filter(|r| r.role.as_deref() == Some(role.as_str())).count();
    let in_group = |r: &&RunRow| r.rack.as_deref() == Some(rack) && r.role.as_deref() == Some(role.as_str());
    let in_recovery: BTreeSet<&str> = active
        .iter()
        .chain(escalated)
        .filter(in_group)
        .map(|r| r.target.as_str())
        .filter(|t| *t != target.name.as_str())
        .collect();
    let group_size = inv.devices.iter().filter(|d| d.rack == rack && d.role == target.role).count().max(1);
    let mut v = GuardVerdict {
        allowed: true,
        reason: None,
        active_fleet,
        active_rack,
        active_role,
        in_recovery: in_recovery.len(),
        group_size,
        active_domain: BTreeMap::new(),
    };
    let refuse = |v: &mut GuardVerdict, why: String| {
        if v.allowed {
            v.allowed = false;
            v.reason = Some(why);
        }
    };
    if let Some(r) = active.iter().find(|r| r.target == target.name.as_str()) {
        refuse(&mut v, format!("run {} ({}) is already {} on {}", r.id, r.runbook, r.state, r.target));
    }
    if active_rack >= cfg.max_concurrent_per_rack as usize {
        refuse(
            &mut v,
            format!(
                "{active_rack} runs already active in rack {rack} (guard: max-concurrent-per-rack = {})",
                cfg.max_concurrent_per_rack
            ),
        );
    }
    let topology = Topology::from_inventory(inv);
    for domain in topology.domains(target.name.as_str()) {
        let busy: BTreeSet<&str> = active
            .iter()
            .map(|r| r.target.as_str())
            .filter(|t| *t != target.name.as_str() && topology.domains(t).contains(domain))
            .collect();
        let name = domain.describe();
        if busy.len() >= cfg.max_concurrent_per_domain as usize {
            let list: Vec<&str> = busy.iter().copied().collect();
            refuse(
                &mut v,
                format!(
                    "{} runs already active on {name} ({}) (guard: max-concurrent-per-domain = {})",
                    busy.len(),
                    list.join(", "),
                    cfg.max_concurrent_per_domain
                ),
            );
        }
        v.active_domain.insert(name, busy.len());
    }
    if active_role >= cfg.max_concurrent_per_role as usize {
        refuse(
            &mut v,
            format!(
                "{active_role} runs already active on {role}s (guard: max-concurrent-per-role = {})",
                cfg.max_concurrent_per_role
            ),
        );
    }
    if active_fleet >= cfg.max_concurrent as usize {
        refuse(
            &mut v,
            format!(
                "{active_fleet} runs already active in the fleet (guard: max-concurrent = {})",
                cfg.max_concurrent
            ),
        );
    }
    let pct = in_recovery.len() * 100 / group_size;
    if pct > cfg.max_in_recovery_percent as usize {
        refuse(
            &mut v,
            format!(
                "{} of {group_size} {role}s in rack {rack} ({pct} %) are already in recovery (guard: max-in-recovery-percent = {}): a rack-wide fault is not fixed node by node",
                in_recovery.len(),
                cfg.max_in_recovery_percent
            ),
        );
    }
    v
}
