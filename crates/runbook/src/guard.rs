//! The blast-radius guard: whether one more run may start now. A rack-wide fault (a PDU, a leaf, a bad
//! firmware push) looks like many node faults at once; cycling every node in the rack does not fix it and
//! can make it worse, so runs are limited per rack, per failure domain (a leaf, a PDU, an NVLink domain, an
//! OOB switch: the inventory's topology keys), per role and in the fleet, and refused outright where a
//! large share of a rack is already in recovery.

use std::collections::{BTreeMap, BTreeSet};

use lifeline_engine::config::GuardConfig;
use lifeline_engine::correlate::Topology;
use lifeline_inventory::{Device, Inventory};
use lifeline_store::RunRow;
use serde::Serialize;

/// What the guard says about one more run on one target.
#[derive(Debug, Clone, Serialize)]
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// n1..n3 in racks a, b, c, all cabled to leaf-1 and fed by pdu-x; n4 on leaf-2.
    fn inventory() -> Inventory {
        let mut t = String::from(
            "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n[defaults.bmc]\nusername = \"a\"\n\
             credential = \"env:X\"\n[defaults.management]\nusername = \"a\"\ncredential = \"env:X\"\n\
             [[site]]\nname = \"s\"\n",
        );
        for r in ["a", "b", "c", "d"] {
            t.push_str(&format!("[[rack]]\nname = \"{r}\"\nsite = \"s\"\n"));
        }
        for (i, leaf) in ["leaf-1", "leaf-2"].iter().enumerate() {
            t.push_str(&format!(
                "[[device]]\nname = \"{leaf}\"\nrole = \"switch\"\nrack = \"d\"\nfabric = \"backend\"\n\
                 platform = \"sonic\"\nmanagement = {{ address = \"127.0.9.{i}\" }}\n"
            ));
        }
        for (n, rack, leaf, pdu) in [
            ("n1", "a", "leaf-1", "pdu-x"),
            ("n2", "b", "leaf-1", "pdu-x"),
            ("n3", "c", "leaf-1", "pdu-y"),
            ("n4", "d", "leaf-2", "pdu-z"),
        ] {
            t.push_str(&format!(
                "[[device]]\nname = \"{n}\"\nrole = \"gpu-node\"\nrack = \"{rack}\"\npdus = [\"{pdu}\"]\n\
                 bmc = {{ address = \"127.0.1.{}\" }}\nrail = [{{ hca = \"mlx5_0\", leaf = \"{leaf}\" }}]\n",
                &n[1..]
            ));
        }
        let r = lifeline_inventory::check_str(Path::new("t.toml"), &t);
        assert!(!r.has_errors(), "{:#?}", r.diagnostics);
        r.inventory.unwrap()
    }

    fn run(target: &str, rack: &str) -> RunRow {
        RunRow {
            id: format!("run-{target}"),
            runbook: "gpu-node-recover".into(),
            target: target.into(),
            rack: Some(rack.into()),
            role: Some("gpu-node".into()),
            actor: "fault-policy".into(),
            vars: serde_json::Value::Null,
            definition: String::new(),
            digest: String::new(),
            state: "running".into(),
            next_step: 0,
            reason: None,
            created_at_ms: 0,
            updated_at_ms: 0,
            ended_at_ms: None,
        }
    }

    fn cfg(k: u32) -> GuardConfig {
        GuardConfig { max_concurrent_per_domain: k, max_in_recovery_percent: 100, ..GuardConfig::default() }
    }

    #[test]
    fn a_leaf_budget_refuses_the_k_plus_first_run_and_says_why() {
        let inv = inventory();
        let n = |x: &str| inv.device(x).unwrap().clone();
        // K = 2: two nodes of leaf-1 (in different racks, so the rack budget says nothing) are in recovery.
        let active = [run("n1", "a"), run("n2", "b")];
        let v = evaluate(&cfg(2), &inv, &n("n3"), &active, &[]);
        assert!(!v.allowed, "{v:?}");
        let why = v.reason.unwrap();
        assert!(
            why.contains(
                "2 runs already active on leaf leaf-1 (n1, n2) (guard: max-concurrent-per-domain = 2)"
            ),
            "{why}"
        );
        assert_eq!(v.active_domain.get("leaf leaf-1"), Some(&2));
        // The K-th is admitted; a node of another leaf and PDU is not counted against them.
        assert!(evaluate(&cfg(2), &inv, &n("n3"), &active[..1], &[]).allowed);
        assert!(evaluate(&cfg(2), &inv, &n("n4"), &active, &[]).allowed);
    }

    #[test]
    fn a_pdu_is_a_domain_too() {
        let inv = inventory();
        let v = evaluate(&cfg(1), &inv, inv.device("n2").unwrap(), &[run("n1", "a")], &[]);
        assert!(!v.allowed);
        // Both the leaf and the PDU are shared with n1; the first refusal found is reported.
        assert_eq!(
            (v.active_domain.get("leaf leaf-1"), v.active_domain.get("pdu pdu-x")),
            (Some(&1), Some(&1))
        );
    }
}
