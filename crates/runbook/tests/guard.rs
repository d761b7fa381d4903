//! The blast-radius guard's rules on their own: per-rack, per-role and fleet concurrency, one run per
//! target, and the share of a rack already in recovery (active and escalated runs).

use std::path::Path;

use lifeline_engine::config::GuardConfig;
use lifeline_runbook::guard::evaluate;
use lifeline_store::RunRow;

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
        state: state.into(),
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
