//! The blast-radius guard's rules on their own: per-rack, per-domain (leaf, PDU), per-role and fleet
//! concurrency, one run per target, and the share of a rack already in recovery (active and escalated runs).

use std::path::Path;

use lifeline_engine::config::GuardConfig;
use lifeline_engine::ops::runs::RunRow;
use lifeline_runbook::guard::evaluate;

fn inventory() -> lifeline_inventory::Inventory {
    let mut t = String::from(
        "[cluster]\nname = \"t\"\noob-subnets = [\"10.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"a\"\ncredential = \"env:X\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r1\"\nsite = \"s\"\n\n[[rack]]\nname = \"r2\"\nsite = \"s\"\n",
    );
    for (k, r) in ["r1", "r2"].iter().enumerate() {
        for i in 1..=8 {
            t.push_str(&format!(
                "\n[[device]]\nname = \"{r}-n{i}\"\nrole = \"gpu-node\"\nrack = \"{r}\"\nbmc = {{ address = \"10.0.{k}.{i}\", protocol = \"redfish\" }}\n"
            ));
        }
    }
    let rep = lifeline_inventory::check_str(Path::new("inv.toml"), &t);
    rep.inventory.unwrap_or_else(|| panic!("{:?}", rep.diagnostics))
}

fn run(target: &str, state: &str) -> RunRow {
    RunRow {
        id: format!("rb-{target}"),
        runbook: "gpu-node-recover".into(),
        target: target.into(),
        rack: Some(target[..2].into()),
        role: Some("gpu-node".into()),
        actor: "t".into(),
        vars: serde_json::json!({}),
        definition: String::new(),
        digest: String::new(),
        state: state.parse().expect("a run state"),
        next_step: 0,
        reason: None,
        created_at_ms: 0,
        updated_at_ms: 0,
        ended_at_ms: None,
    }
}

#[test]
fn the_guard_counts_racks_roles_the_fleet_and_recovery_share() {
    let inv = inventory();
    let d = |n: &str| inv.device(n).unwrap().clone();
    let cfg = GuardConfig {
        max_concurrent: 3,
        max_concurrent_per_rack: 2,
        max_concurrent_per_role: 8,
        max_concurrent_per_domain: 8,
        max_in_recovery_percent: 25,
    };

    assert!(evaluate(&cfg, &inv, &d("r1-n1"), &[], &[]).allowed);
    let one = [run("r1-n1", "running")];
    let v = evaluate(&cfg, &inv, &d("r1-n1"), &one, &[]);
    assert!(!v.allowed && v.reason.as_deref().unwrap().contains("already running on r1-n1"), "{v:?}");
    assert!(evaluate(&cfg, &inv, &d("r1-n2"), &one, &[]).allowed);

    let two = [run("r1-n1", "running"), run("r1-n2", "waiting-approval")];
    let v = evaluate(&cfg, &inv, &d("r1-n3"), &two, &[]);
    assert!(v.reason.as_deref().unwrap().contains("max-concurrent-per-rack = 2"), "{v:?}");
    assert!(evaluate(&cfg, &inv, &d("r2-n1"), &two, &[]).allowed, "another rack has room");

    let three = [run("r1-n1", "running"), run("r1-n2", "running"), run("r2-n1", "running")];
    let v = evaluate(&cfg, &inv, &d("r2-n2"), &three, &[]);
    assert!(v.reason.as_deref().unwrap().contains("max-concurrent = 3"), "{v:?}");

    // Escalated nodes count as in recovery: 3 of 8 (37 %) > 25 %, even with no run active.
    let escalated = [run("r2-n1", "escalated"), run("r2-n2", "escalated"), run("r2-n3", "escalated")];
    let v = evaluate(&cfg, &inv, &d("r2-n4"), &[], &escalated);
    assert!(!v.allowed && v.reason.as_deref().unwrap().contains("3 of 8"), "{v:?}");
    assert!(
        evaluate(&cfg, &inv, &d("r2-n4"), &[], &escalated[..2]).allowed,
        "2 of 8 = 25 % is not more than 25 %"
    );
}

/// ra-n1, rb-n2, rc-n3 (one rack each) all cabled to leaf-1; ra-n1 and rb-n2 fed by pdu-x; rd-n4 on leaf-2.
fn cabled() -> lifeline_inventory::Inventory {
    let mut t = String::from(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n[defaults.bmc]\nusername = \"a\"\n\
         credential = \"env:X\"\n[defaults.management]\nusername = \"a\"\ncredential = \"env:X\"\n\
         [[site]]\nname = \"s\"\n",
    );
    for r in ["ra", "rb", "rc", "rd"] {
        t.push_str(&format!("[[rack]]\nname = \"{r}\"\nsite = \"s\"\n"));
    }
    for (i, leaf) in ["leaf-1", "leaf-2"].iter().enumerate() {
        t.push_str(&format!(
            "[[device]]\nname = \"{leaf}\"\nrole = \"switch\"\nrack = \"rd\"\nfabric = \"backend\"\n\
             platform = \"sonic\"\nmanagement = {{ address = \"127.0.9.{i}\" }}\n"
        ));
    }
    for (i, (n, leaf, pdu)) in [
        ("ra-n1", "leaf-1", "pdu-x"),
        ("rb-n2", "leaf-1", "pdu-x"),
        ("rc-n3", "leaf-1", "pdu-y"),
        ("rd-n4", "leaf-2", "pdu-z"),
    ]
    .into_iter()
    .enumerate()
    {
        t.push_str(&format!(
            "[[device]]\nname = \"{n}\"\nrole = \"gpu-node\"\nrack = \"{}\"\npdus = [\"{pdu}\"]\n\
             bmc = {{ address = \"127.0.1.{i}\" }}\nrail = [{{ hca = \"mlx5_0\", leaf = \"{leaf}\" }}]\n",
            &n[..2]
        ));
    }
    let rep = lifeline_inventory::check_str(Path::new("inv.toml"), &t);
    rep.inventory.unwrap_or_else(|| panic!("{:?}", rep.diagnostics))
}

fn per_domain(k: u32) -> GuardConfig {
    GuardConfig { max_concurrent_per_domain: k, max_in_recovery_percent: 100, ..GuardConfig::default() }
}

#[test]
fn a_leaf_budget_refuses_the_k_plus_first_run_and_says_why() {
    let inv = cabled();
    let d = |n: &str| inv.device(n).unwrap().clone();
    // K = 2: two nodes of leaf-1 in different racks (the rack budget says nothing) are in recovery.
    let active = [run("ra-n1", "running"), run("rb-n2", "running")];
    let v = evaluate(&per_domain(2), &inv, &d("rc-n3"), &active, &[]);
    assert!(!v.allowed, "{v:?}");
    let why = v.reason.unwrap();
    assert!(
        why.contains(
            "2 runs already active on leaf leaf-1 (ra-n1, rb-n2) (guard: max-concurrent-per-domain = 2)"
        ),
        "{why}"
    );
    assert_eq!(v.active_domain.get("leaf leaf-1"), Some(&2));
    // The K-th is admitted; a node of another leaf and PDU is not counted against them.
    assert!(evaluate(&per_domain(2), &inv, &d("rc-n3"), &active[..1], &[]).allowed);
    assert!(evaluate(&per_domain(2), &inv, &d("rd-n4"), &active, &[]).allowed);
}

#[test]
fn a_pdu_is_a_domain_too() {
    let inv = cabled();
    let v = evaluate(&per_domain(1), &inv, inv.device("rb-n2").unwrap(), &[run("ra-n1", "running")], &[]);
    assert!(!v.allowed);
    // The leaf and the PDU are both shared with ra-n1; the first refusal found is the reason.
    assert_eq!((v.active_domain.get("leaf leaf-1"), v.active_domain.get("pdu pdu-x")), (Some(&1), Some(&1)));
    // rc-n3 shares only the leaf with ra-n1.
    let v = evaluate(&per_domain(1), &inv, inv.device("rc-n3").unwrap(), &[run("ra-n1", "running")], &[]);
    assert_eq!((v.active_domain.get("leaf leaf-1"), v.active_domain.get("pdu pdu-y")), (Some(&1), Some(&0)));
}
