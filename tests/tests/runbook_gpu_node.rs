//! `gpu-node-recover` end to end: the real binary, `lifeline sim` with GPU faults injected, the real Slurm.
//! A fault that a power cycle clears ends in a readmitted node; one that survives it ends escalated with
//! the node kept drained under Lifeline's mark and the failing report attached — never readmitted.

#[path = "runbook_support/mod.rs"]
mod support;

use lifeline_test_utils::{output_json as json, output_text as text};
use support::*;

const OFFSET: u16 = 24100;

#[test]
fn gpu_node_recover_readmits_a_cleared_fault_and_escalates_a_lasting_one() {
    let Some(conf) = slurm_conf() else { return };
    let _locks = (lock_slurm_node("gpu-node-03"), lock_slurm_node("gpu-node-04"));
    let fleet = nodes(&[("gpu-node-03", "r1", "redfish"), ("gpu-node-04", "r2", "ipmi")]);
    let sim = start(&fleet, OFFSET);
    let _sshd: Vec<Sshd> = fleet.iter().map(|n| sshd(n, &sim.node_state)).collect();
    for n in ["gpu-node-03", "gpu-node-04"] {
        scontrol(&conf, &["update", &format!("nodename={n}"), "state=resume"]);
    }
    // An XID clears with a power cycle; a rail whose link is down does not.
    sim.fault("gpu-node-03", "gpu-xid=0:79");
    sim.fault("gpu-node-04", "rail-down=mlx5_0");
    let runbooks = lifeline_test_utils::workspace_root().join("runbooks");
    let o = sim.lifeline(&[
        "runbook",
        "run",
        "gpu-node-recover",
        "gpu-node-03",
        "gpu-node-04",
        "--yes",
        "--json",
        "--runbooks",
        runbooks.to_str().unwrap(),
        "--node-state",
        sim.node_state.to_str().unwrap(),
        "--interval-ms",
        "20",
        "--slurm-conf",
        conf.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "one run escalated: {}", text(&o));
    let runs = json(&o);
    let runs = runs.as_array().unwrap();
    let (ok, bad) = (&runs[0], &runs[1]);

    assert_eq!(ok["target"], "gpu-node-03");
    assert_eq!(ok["state"], "succeeded", "{ok:#}");
    let steps = step_states(ok);
    assert_eq!(
        steps,
        [
            ("drain", "ok"),
            ("reset", "ok"),
            ("power-on", "ok"),
            ("os-up", "ok"),
            ("verify", "ok"),
            ("readmit", "ok"),
            ("fault-gone", "ok")
        ]
    );
    let os_up = ok["steps"].as_array().unwrap().iter().find(|s| s["name"] == "os-up").unwrap();
    assert!(os_up["message"].as_str().unwrap().contains("agent: host up"), "the boot's signal: {os_up}");
    for s in ok["steps"].as_array().unwrap() {
        assert!(s["started"].is_string() && s["ended"].is_string(), "{s}");
    }
    let (st, _) = sinfo(&conf, "gpu-node-03");
    assert_eq!(st, "idle", "readmitted");
    // The simulator's own view: the fault is gone and the OS is up (not only Lifeline's word for it).
    let devices: serde_json::Value =
        serde_json::from_str(&lifeline_test_utils::http_get(&format!("{}/devices", sim.control_url())))
            .unwrap();
    let node = devices.as_array().unwrap().iter().find(|d| d["name"] == "gpu-node-03").unwrap();
    assert_eq!(
        (node["phase"].as_str(), node["faults"].as_array().map(Vec::len)),
        (Some("os-up"), Some(0)),
        "{node}"
    );
    assert_eq!(executed(&sim, "gpu-node-03", "power-cycle"), 1, "{:?}", sim.actions("gpu-node-03"));

    assert_eq!(bad["target"], "gpu-node-04");
    assert_eq!(bad["state"], "escalated", "{bad:#}");
    let verify = bad["steps"].as_array().unwrap().iter().find(|s| s["name"] == "verify").unwrap();
    assert_eq!(verify["state"], "failed");
    assert!(verify["message"].as_str().unwrap().contains("mlx5_0"), "{verify}");
    assert!(verify["evidence_digest"].as_str().unwrap().starts_with("sha256:"));
    let readmit = bad["steps"].as_array().unwrap().iter().find(|s| s["name"] == "readmit").unwrap();
    assert_eq!(readmit["state"], "pending", "never readmitted");
    let (st, reason) = sinfo(&conf, "gpu-node-04");
    assert!(st.starts_with("drain"), "kept drained: {st}");
    assert!(reason.starts_with("lifeline: "), "{reason}");
    // The IPMI node's cycle is confirmed as off observed, then on: one off and one on, nothing more.
    let acts = sim.actions("gpu-node-04");
    assert_eq!(
        (executed(&sim, "gpu-node-04", "power-off"), executed(&sim, "gpu-node-04", "power-on"), acts.len()),
        (1, 1, 2),
        "{acts:?}"
    );

    // `status RUN --json` is the same object.
    let id = bad["run"].as_str().unwrap();
    let o = sim.lifeline(&["runbook", "status", id, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let st = json(&o);
    assert_eq!((st["run"].as_str(), st["state"].as_str()), (Some(id), Some("escalated")));
    assert_eq!(st["steps"], bad["steps"]);

    // Every action is audited as the run; the escalation carries the evidence.
    let o = sim.lifeline(&["audit", "log", "--json", "--limit", "200"]);
    let rows = json(&o);
    let actor = format!("runbook:{id}");
    let mine: Vec<&serde_json::Value> =
        rows.as_array().unwrap().iter().filter(|r| r["actor"] == actor.as_str()).collect();
    assert!(mine.iter().any(|r| r["action"] == "power.cycle" && r["outcome"] == "ok"), "{mine:#?}");
    assert!(mine.iter().any(|r| r["action"] == "runbook.escalate"), "{mine:#?}");

    // The journal has an intent and an outcome row for every step that ran.
    let o = sim.lifeline(&["runbook", "log", id]);
    let log = text(&o);
    assert_eq!(
        log.matches(" intent ").count(),
        log.matches(" outcome ").count() - log.matches("skipped").count(),
        "{log}"
    );

    for n in ["gpu-node-03", "gpu-node-04"] {
        scontrol(&conf, &["update", &format!("nodename={n}"), "state=resume"]);
    }
}
