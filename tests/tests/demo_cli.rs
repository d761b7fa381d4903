//! The README's main command: `lifeline demo` serves the example cluster in-process, starts the server
//! over it (URL and a one-time admin password printed), sweeps it, and the scripted faults go through the
//! server's fault rules and policy. `--no-server` keeps only the terminal view.

mod common;

use std::io::BufRead;
use std::process::{Command, Stdio};

use lifeline_test_utils::{lifeline_bin, output_text};
use serde_json::Value;

fn demo(args: &[&str], data: &std::path::Path) -> Command {
    let mut c = Command::new(lifeline_bin());
    c.arg("demo")
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .current_dir(lifeline_test_utils::workspace_root())
        .env_remove("LIFELINE_INVENTORY")
        .env_remove("LIFELINE_DATABASE_URL")
        .env_remove("LIFELINE_CONFIG")
        .stdin(Stdio::null());
    c
}

fn check_sweeps(sweeps: &[Value]) {
    for s in sweeps {
        let rows = s["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 14, "every BMC of the example cluster (11 servers + 3 switch BMCs)");
    }
    // Sweep 1 is clean; the script injects a GPU ECC fault on gpu-node-03 before sweep 2.
    let first = &sweeps[0]["rows"];
    assert!(first.as_array().unwrap().iter().all(|r| r["power"] == "on"), "{first}");
    // With the server, the policy's runbook may already have cycled it back by sweep 3: look at 2 and 3.
    let critical = sweeps[1..3].iter().any(|s| {
        s["rows"].as_array().unwrap().iter().any(|r| r["name"] == "gpu-node-03" && r["health"] == "critical")
    });
    assert!(critical, "{:?}", &sweeps[1..3]);
    let events: Vec<&Value> = sweeps[1..3].iter().flat_map(|s| s["events"].as_array().unwrap()).collect();
    assert!(events.iter().any(|e| e.as_str().unwrap().contains("gpu-node-03")), "{events:?}");
}

#[test]
fn demo_serves_the_example_cluster_and_runs_faults_through_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = demo(
        &["--sweeps", "4", "--interval", "1", "--json", "--port-offset", "38000", "--listen", "127.0.0.1:0"],
        dir.path(),
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    let url = first["server"]["url"].as_str().unwrap_or_else(|| panic!("no server line: {first}"));
    let addr = url.strip_prefix("http://").unwrap().to_owned();
    let password = first["server"]["password"].as_str().unwrap();
    assert!(password.len() >= 12, "{first}");

    // The server is up while the demo runs: the one-time admin password logs in, the fleet is there.
    let s = common::login(&addr, "admin", password);
    let (st, devices) = s.call("GET", "/api/v1/devices", None);
    assert_eq!(st, 200, "{devices}");
    assert_eq!(devices.as_array().unwrap().len(), 14 + 3, "{devices}");

    let sweeps: Vec<Value> =
        lines.map(|l| serde_json::from_str(&l.unwrap()).unwrap_or_else(|e| panic!("{e}"))).collect();
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{status}: {err}");
    assert_eq!(sweeps.len(), 4, "{err}");
    // The ordered end: the store outlives the server's runs and its leaving the replica set.
    for wrong in ["closed pool", "leaving the replica set", "recording delayed"] {
        assert!(!err.contains(wrong), "`{wrong}` at the demo's exit: {err}");
    }
    check_sweeps(&sweeps);

    // The ECC fault became a fault record (resolved again once the runbook's cycle cleared it), and the
    // policy's decision for it is shown.
    let faults: Vec<&Value> = sweeps.iter().flat_map(|s| s["faults"].as_array().unwrap()).collect();
    assert!(
        faults.iter().any(|f| f["device"] == "gpu-node-03" && f["kind"] == "health-critical"),
        "{faults:?}"
    );
    let events: Vec<&str> =
        sweeps.iter().flat_map(|s| s["events"].as_array().unwrap()).filter_map(Value::as_str).collect();
    assert!(
        events.iter().any(|e| e.contains(
            "health-critical on gpu-node-03: policy: run runbook demo-gpu-node-recover (auto) [started]"
        )),
        "{events:?}"
    );
    // The demo's state went to SQLite in the data dir it was given (kept, since it was named).
    assert!(dir.path().join("lifeline.db").exists());
    // The server ran the demo runbook on the node: its power cycle is done and journaled (the run may have
    // been left at a step boundary when the demo ended; the server stops runs there, never mid-step).
    let o = Command::new(lifeline_bin())
        .args(["runbook", "status", "--json", "--data-dir"])
        .arg(dir.path())
        .env_remove("LIFELINE_DATABASE_URL")
        .output()
        .unwrap();
    let runs: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", output_text(&o)));
    let run = runs
        .as_array()
        .unwrap()
        .iter()
        .find(|r| {
            r["target"] == "gpu-node-03" && r["runbook"] == "demo-gpu-node-recover" && r["state"] != "refused"
        })
        .unwrap_or_else(|| panic!("no run on gpu-node-03: {runs}"));
    assert_eq!(run["actor"], "fault-policy", "{run}");
    let id = run["run"].as_str().unwrap();
    let o = Command::new(lifeline_bin())
        .args(["runbook", "status", id, "--json", "--data-dir"])
        .arg(dir.path())
        .env_remove("LIFELINE_DATABASE_URL")
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", output_text(&o)));
    assert_eq!(v["steps"][0]["name"], "cycle", "{v}");
    assert_eq!(v["steps"][0]["state"], "ok", "{v}");
}

#[test]
fn demo_without_server_keeps_the_terminal_view() {
    let dir = tempfile::tempdir().unwrap();
    let o = demo(
        &["--no-server", "--sweeps", "3", "--interval", "0.2", "--json", "--port-offset", "35500"],
        dir.path(),
    )
    .output()
    .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let sweeps: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(sweeps.len(), 3);
    check_sweeps(&sweeps);
    assert!(
        sweeps.iter().all(|s| s["faults"].as_array().is_some_and(Vec::is_empty)),
        "no server, no fault records"
    );
    assert!(dir.path().join("lifeline.db").exists());
}

/// The loop end to end on the demo's own store: each scripted fault a power cycle clears is recovered by
/// its runbook (`succeeded`, proven by the fault's own rule on a fresh read), its fault records resolved;
/// the fault meant for a human (a rail down) waits for approval and says so, and the run of a fault that
/// cleared by itself before approval (a BMC that answers again) is withdrawn.
#[test]
fn demo_recovers_what_it_breaks_and_waits_for_a_human_on_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let o = demo(
        &["--sweeps", "14", "--interval", "1", "--json", "--port-offset", "38400", "--listen", "127.0.0.1:0"],
        dir.path(),
    )
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", output_text(&o));
    let lines: Vec<Value> =
        String::from_utf8_lossy(&o.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines[0]["server"]["control"].as_str().unwrap().starts_with("http://"), "{}", lines[0]);
    assert!(lines[0]["server"]["token_file"].is_string(), "{}", lines[0]);
    let ask = |args: &[&str]| -> Value {
        let o = Command::new(lifeline_bin())
            .arg("--data-dir")
            .arg(dir.path())
            .args(args)
            .env_remove("LIFELINE_DATABASE_URL")
            .output()
            .unwrap();
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", output_text(&o)))
    };
    let runs = ask(&["runbook", "status", "--json"]);
    let runs = runs.as_array().unwrap();
    let of = |target: &str| -> Vec<(&str, &str)> {
        runs.iter()
            .filter(|r| r["target"] == target)
            .map(|r| (r["runbook"].as_str().unwrap(), r["state"].as_str().unwrap()))
            .collect()
    };
    for node in ["gpu-node-03", "gpu-node-05"] {
        let r = of(node);
        assert!(r.contains(&("demo-gpu-node-recover", "succeeded")), "{node}: {r:?}\n{}", output_text(&o));
        assert!(!r.iter().any(|(_, s)| matches!(*s, "failed" | "escalated")), "{node}: {r:?}");
    }
    assert!(of("gpu-node-07").contains(&("demo-rail-check", "waiting-approval")), "{:?}", of("gpu-node-07"));
    // The BMC that stopped answering answers again (the demo clears it two sweeps later) before anyone
    // approved: its run is withdrawn, nothing done, saying why.
    let withdrawn = runs
        .iter()
        .find(|r| r["target"] == "head-node-02" && r["runbook"] == "demo-bmc-answers")
        .unwrap_or_else(|| panic!("no demo-bmc-answers run: {runs:?}"));
    assert_eq!(withdrawn["state"], "aborted", "{withdrawn}");
    let reason = withdrawn["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("cleared before approval") && reason.contains("nothing was done"), "{withdrawn}");
    let faults = ask(&["fault", "list", "--json"]);
    for f in faults.as_array().unwrap() {
        if f["device"] == "gpu-node-03" || f["device"] == "gpu-node-05" {
            assert_eq!(f["state"], "resolved", "recovered node's fault: {f}");
        }
    }
}
