//! `rail-down` end to end against `lifeline sim` (a SONiC leaf over SSH, a GPU node) and the real Slurm.
//! A drifted leaf with a rail down: the node is drained, the leaf's config is compared with its last good
//! backup, restored once after approval, the rail verifies and the node is readmitted. A rail down with no
//! drift: nothing is pushed to the leaf, the node is kept drained and the run escalates.

#[path = "runbook_support/mod.rs"]
mod support;

use lifeline_test_utils::{
    SimProcess, output_json as json, output_text as text, unique_loopback, workspace_root,
};
use support::*;

const OFFSET: u16 = 25100;

fn leaf_writes(sim: &SimProcess) -> usize {
    sim.actions("leaf-r01")
        .iter()
        .filter(|a| a["action"] == "config-apply" || a["action"] == "config-reload")
        .count()
}

#[test]
fn rail_down_restores_a_drifted_leaf_once_and_escalates_without_drift() {
    let Some(conf) = slurm_conf() else { return };
    let _lock = lock_slurm_node("gpu-node-02");
    let fleet = nodes(&[("gpu-node-02", "r1", "redfish")]);
    let mut inv = inventory(&fleet, OFFSET);
    inv.push_str(&format!(
        "\n[[device]]\nname = \"leaf-r01\"\nrole = \"switch\"\nrack = \"r1\"\nfabric = \"backend\"\ntier = \"leaf\"\n\
         platform = \"sonic\"\nmanagement = {{ address = \"{}\", port = {} }}\n",
        unique_loopback(),
        22 + OFFSET
    ));
    let sim = SimProcess::start(
        &inv,
        OFFSET,
        &[("LIFELINE_BMC_PASSWORD", "s3cret-pw"), ("LIFELINE_SWITCH_PASSWORD", "sw-pass")],
    );
    scontrol(&conf, &["update", "nodename=gpu-node-02", "state=resume"]);
    let o = sim.lifeline(&["backup", "run", "leaf-r01", "--json"]);
    assert_eq!(o.status.code(), Some(0), "the last good config: {}", text(&o));
    let rb = workspace_root().join("runbooks");
    let ns = sim.node_state.to_str().unwrap();
    let env = ["--node-state", ns, "--interval-ms", "20", "--slurm-conf", conf.to_str().unwrap()];
    let mut args = vec![
        "runbook",
        "run",
        "rail-down",
        "gpu-node-02",
        "--yes",
        "--json",
        "--runbooks",
        rb.to_str().unwrap(),
    ];
    args.extend(env);

    sim.fault("leaf-r01", "config-change");
    sim.fault("gpu-node-02", "rail-down=mlx5_0");
    let o = sim.lifeline(&args);
    let v = json(&o);
    assert_eq!(v["state"], "waiting-approval", "{v:#}");
    let compare = v["steps"].as_array().unwrap().iter().find(|s| s["name"] == "compare").unwrap();
    assert_eq!(compare["outputs"]["drifted"], true, "{compare}");
    assert!(sinfo(&conf, "gpu-node-02").0.starts_with("drain"));
    assert_eq!(leaf_writes(&sim), 0, "nothing pushed before approval");

    // The cable is reseated meanwhile; the operator approves the restore.
    sim.fault("gpu-node-02", "clear");
    let id = v["run"].as_str().unwrap().to_owned();
    let mut a = vec!["runbook", "approve", id.as_str(), "--json"];
    a.extend(env);
    let o = sim.lifeline(&a);
    let v = json(&o);
    assert_eq!(v["state"], "succeeded", "{v:#}\n{}", text(&o));
    assert_eq!(leaf_writes(&sim), 1, "{:?}", sim.actions("leaf-r01"));
    assert_eq!(sinfo(&conf, "gpu-node-02").0, "idle", "readmitted");
    let o = sim.lifeline(&["backup", "restore", "leaf-r01", "--dry-run", "--json"]);
    assert!(
        json(&o)["diff"].as_str().unwrap_or("x").trim().is_empty(),
        "the leaf equals its backup: {}",
        text(&o)
    );

    // A rail down with the leaf as backed up: nothing is pushed, the node stays drained, escalated.
    sim.fault("gpu-node-02", "rail-down=mlx5_1");
    let o = sim.lifeline(&args);
    let v = json(&o);
    assert_eq!(v["state"], "escalated", "{v:#}");
    let states = step_states(&v);
    assert_eq!(
        states,
        [
            ("drain", "ok"),
            ("compare", "ok"),
            ("restore-leaf", "skipped"),
            ("verify", "failed"),
            ("readmit", "pending"),
            ("rails-up", "pending")
        ]
    );
    assert_eq!(leaf_writes(&sim), 1, "{:?}", sim.actions("leaf-r01"));
    let (st, reason) = sinfo(&conf, "gpu-node-02");
    assert!(st.starts_with("drain") && reason.starts_with("lifeline: "), "{st} {reason}");
    scontrol(&conf, &["update", "nodename=gpu-node-02", "state=resume"]);
}
