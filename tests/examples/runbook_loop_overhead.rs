//! Benchmark: the `gpu-node-recover` loop overhead — fault injected → node readmitted, minus the time the
//! simulated machine itself needs (the power cycle and the boot until SSH answers). What is left is
//! Lifeline's: process start, admission, journal writes, drain, verification, readmission. Goal < 1 s.
//!
//! `cargo run -p lifeline-e2e --example runbook_loop_overhead [RUNS]` (builds nothing itself: build the
//! `lifeline` binary first, `cargo build -p lifeline-cli`). Uses the real Slurm peer when it runs, else
//! a copy of the runbook without the scheduler steps.

#[path = "../tests/runbook_support/mod.rs"]
mod support;

use std::time::Instant;

use chrono::{DateTime, Utc};
use lifeline_test_utils::output_json;
use support::*;

fn ts(v: &serde_json::Value) -> DateTime<Utc> {
    v.as_str().and_then(|s| s.parse().ok()).expect("timestamp")
}

fn main() {
    let runs: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(5);
    let conf = slurm_conf();
    let fleet = nodes(&[("gpu-node-03", "r1", "redfish")]);
    let sim = start(&fleet, 24700);
    let _sshd = sshd(&fleet[0], &sim.node_state);
    let dir = tempfile::tempdir().unwrap();
    let mut text =
        std::fs::read_to_string(lifeline_test_utils::workspace_root().join("runbooks/gpu-node-recover.toml"))
            .unwrap();
    if conf.is_none() {
        eprintln!("no Slurm peer: the drain and readmit steps are left out");
        text = text
            .replace("kind = \"drain\"", "kind = \"verify\"")
            .replace("kind = \"readmit\"", "kind = \"verify\"");
        text = text.replace("reason = \"runbook {{runbook}} run {{run}}: GPU fault\"\n", "");
    }
    std::fs::write(dir.path().join("gpu-node-recover.toml"), text).unwrap();
    let rb = dir.path().to_str().unwrap().to_owned();
    let ns = sim.node_state.to_str().unwrap().to_owned();
    let mut args = vec![
        "runbook".to_owned(),
        "run".into(),
        "gpu-node-recover".into(),
        "gpu-node-03".into(),
        "--yes".into(),
        "--json".into(),
        "--var".into(),
        format!("os=frontend:{SSH_PORT}"),
        "--runbooks".into(),
        rb,
        "--node-state".into(),
        ns,
        "--interval-ms".into(),
        "20".into(),
    ];
    if let Some(c) = &conf {
        args.extend(["--slurm-conf".to_owned(), c.display().to_string()]);
        scontrol(c, &["update", "nodename=gpu-node-03", "state=resume"]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    println!(" run    loop ms machine ms   overhead   steps (ms)");
    let mut overheads = Vec::new();
    for i in 1..=runs {
        sim.fault("gpu-node-03", "gpu-xid=0:79");
        let t0 = Instant::now();
        let o = sim.lifeline(&args);
        let total = t0.elapsed();
        let v = output_json(&o);
        assert_eq!(v["state"], "succeeded", "{v:#}");
        let mut machine = 0i64;
        let mut parts = Vec::new();
        for s in v["steps"].as_array().unwrap() {
            let ms = (ts(&s["ended"]) - ts(&s["started"])).num_milliseconds();
            parts.push(format!("{} {ms}", s["name"].as_str().unwrap()));
            if matches!(s["name"].as_str(), Some("reset" | "power-on" | "os-up")) {
                machine += ms;
            }
        }
        let loop_ms = i64::try_from(total.as_millis()).unwrap_or(i64::MAX);
        let overhead = loop_ms - machine;
        overheads.push(overhead);
        println!("{i:>4} {loop_ms:>10} {machine:>10} {overhead:>10}   {}", parts.join(", "));
    }
    overheads.sort();
    let median = overheads[overheads.len() / 2];
    println!(
        "gpu-node-recover loop overhead (fault injected → readmitted, minus power cycle and boot): median {median} ms over {runs} runs (goal < 1000 ms)"
    );
}
