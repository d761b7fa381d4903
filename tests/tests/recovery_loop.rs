//! The loop Lifeline exists for, end to end with the real binary and a real Slurm: a fault appears on a
//! simulated node, Lifeline drains it, verification fails and keeps it out, the fault is repaired,
//! verification passes and Lifeline resumes it — while an admin's drain on another node is never touched.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Duration;

use lifeline_test_utils::{SimProcess, output_text as text, peer_endpoints, wait_until, workspace_root};

fn slurm_conf() -> Option<PathBuf> {
    let rows = peer_endpoints("slurm")?;
    let ctld = rows.iter().find(|r| r.first().map(String::as_str) == Some("slurmctld"))?;
    Some(PathBuf::from(&ctld[4]))
}

fn sinfo(conf: &PathBuf, node: &str) -> (String, String) {
    let o = Command::new("sinfo")
        .args(["-N", "-h", "-n", node, "-o", "%T|%E"])
        .env("SLURM_CONF", conf)
        .env_remove("SLURM_JWT")
        .output()
        .expect("sinfo");
    let text = String::from_utf8_lossy(&o.stdout).trim().to_owned();
    let (state, reason) = text.split_once('|').unwrap_or((&text, ""));
    (state.to_owned(), reason.to_owned())
}

fn scontrol(conf: &PathBuf, args: &[&str]) {
    let _ = Command::new("scontrol").args(args).env("SLURM_CONF", conf).env_remove("SLURM_JWT").status();
}

#[test]
fn fault_drain_verify_readmit_with_real_slurm() {
    let Some(conf) = slurm_conf() else { return };
    let inventory = workspace_root().join("inventory/example-cluster.toml");
    let sim = SimProcess::start_file(&inventory, 31000, &[("SLURM_CONF", conf.to_str().unwrap())]);
    let state = sim.node_state.clone();
    let run = |args: &[&str]| -> Output { sim.lifeline(args) };
    let verify = [
        "verify",
        "gpu-node-01",
        "--node-state",
        state.to_str().unwrap(),
        "--interval-ms",
        "20",
        "--readmit",
    ];

    // Start from a clean node.
    scontrol(&conf, &["update", "nodename=gpu-node-01", "state=resume"]);
    scontrol(&conf, &["update", "nodename=gpu-node-02", "state=resume"]);

    sim.fault("gpu-node-01", "rail-down=mlx5_3");
    let o = run(&["drain", "gpu-node-01", "--reason", "rail mlx5_3 down"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (st, reason) = sinfo(&conf, "gpu-node-01");
    assert!(st.starts_with("drain"), "{st}");
    assert!(reason.starts_with("lifeline: rail mlx5_3 down"), "{reason}");

    // Verification names the broken rail and keeps the node out.
    let o = run(&verify);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("mlx5_3") && text(&o).contains("not re-admitted"), "{}", text(&o));
    assert!(sinfo(&conf, "gpu-node-01").0.starts_with("drain"));

    // Repaired: the next verification passes and Lifeline resumes its own drain.
    sim.fault("gpu-node-01", "clear");
    let o = wait_until("a passing verification", Duration::from_secs(20), || {
        let o = run(&verify);
        (o.status.code() == Some(0)).then_some(o)
    });
    assert!(text(&o).contains("PASS"), "{}", text(&o));
    let (st, _) = sinfo(&conf, "gpu-node-01");
    assert_eq!(st, "idle", "resume returns once the node is idle");

    // An admin's drain is never lifted, even with a passing report.
    scontrol(&conf, &["update", "nodename=gpu-node-02", "state=drain", "reason=admin: bad DIMM"]);
    let o = run(&[
        "verify",
        "gpu-node-02",
        "--node-state",
        state.to_str().unwrap(),
        "--interval-ms",
        "20",
        "--readmit",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["readmitted"], false);
    assert_eq!(v[0]["decisions"][0]["outcome"]["kind"], "refused_foreign_hold");
    let (st, reason) = sinfo(&conf, "gpu-node-02");
    assert!(st.starts_with("drain") && reason == "admin: bad DIMM", "{st} {reason}");
    scontrol(&conf, &["update", "nodename=gpu-node-02", "state=resume"]);

    // Every decision is in the audit log with the digest of the report behind it.
    let o = run(&["audit", "log", "--json", "--limit", "20"]);
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let resume = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["action"] == "readmit.resume" && r["target"] == "gpu-node-01")
        .unwrap();
    assert_eq!(resume["outcome"], "ok");
    assert!(resume["detail"]["report_digest"].as_str().unwrap().starts_with("sha256:"));
}
