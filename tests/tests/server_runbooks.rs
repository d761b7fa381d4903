//! The fault policy closing the loop inside `lifeline serve`: faults injected into `lifeline sim` are seen
//! by the server's own sweeps, the `[[fault-policy]]` maps them to `gpu-node-recover`, and the server runs
//! it against the simulator and the real Slurm. `auto`: a fault a power cycle clears ends readmitted, one
//! that survives it ends escalated with the node kept drained. `approve`: the run waits before its first
//! step until an operator approves it over the API; the server is then killed with SIGKILL during the
//! power-cycle step, restarted, resumes the run from its journal, and the BMC's action log shows the cycle
//! exactly once.

#[path = "runbook_support/mod.rs"]
mod support;

mod common;

use std::path::Path;
use std::time::Duration;

use common::{Session, login};
use lifeline_test_utils::{ServeProcess, SimProcess, add_user, wait_until};
use serde_json::{Value, json};
use support::*;

const PASSWORD: &str = "correct horse battery";

/// The library with the node's SSH on the test's port (what a site would set for its fleet).
fn library(dir: &Path) -> std::path::PathBuf {
    let src = lifeline_test_utils::workspace_root().join("runbooks");
    let out = dir.join("runbooks");
    std::fs::create_dir_all(&out).unwrap();
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        let text = text.replace("default = \"frontend:22\"", &format!("default = \"frontend:{SSH_PORT}\""));
        std::fs::write(out.join(p.file_name().unwrap()), text).unwrap();
    }
    out
}

fn config(sim: &SimProcess, policies: &[(&str, &str)]) -> String {
    let dir = library(sim.dir.path());
    let mut c = format!("[server]\nsweep-interval = \"1s\"\n\n[runbooks]\ndir = \"{}\"\n", dir.display());
    for (target, mode) in policies {
        for kind in ["sel-critical", "health-critical"] {
            c.push_str(&format!(
                "\n[[fault-policy]]\nkind = \"{kind}\"\ntargets = [\"{target}\"]\nrunbook = \"gpu-node-recover\"\nmode = \"{mode}\"\n"
            ));
        }
    }
    c
}

fn serve(sim: &SimProcess, conf: &Path, config: &str) -> ServeProcess {
    let (node_state, slurm) = (sim.node_state.to_str().unwrap(), conf.to_str().unwrap());
    ServeProcess::start_args(
        sim,
        config,
        &["--node-state", node_state, "--interval-ms", "20", "--slurm-conf", slurm],
    )
}

/// The one (not refused) run of `runbook` on `target`, once it is in one of `states`.
fn run_of(s: &Session<'_>, target: &str, runbook: &str, states: &[&str], secs: u64) -> Value {
    wait_until(&format!("a run on {target} in {states:?}"), Duration::from_secs(secs), || {
        let (st, runs) = s.call("GET", &format!("/api/v1/runs?target={target}"), None);
        assert_eq!(st, 200, "{runs}");
        let runs: Vec<Value> = runs
            .as_array()?
            .iter()
            .filter(|r| r["state"] != "refused" && r["runbook"] == runbook)
            .cloned()
            .collect();
        assert!(runs.len() <= 1, "one run per fault: {runs:#?}");
        let r = runs.first()?;
        states.contains(&r["state"].as_str()?).then(|| r.clone())
    })
}

fn steps(s: &Session<'_>, run: &str) -> Vec<(String, String)> {
    let (st, v) = s.call("GET", &format!("/api/v1/runs/{run}"), None);
    assert_eq!(st, 200, "{v}");
    v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap().to_owned(), s["state"].as_str().unwrap().to_owned()))
        .collect()
}

/// A run's journal as (step, phase, state) rows.
fn journal(s: &Session<'_>, run: &str) -> Vec<(String, String, String)> {
    let (st, journal) = s.call("GET", &format!("/api/v1/runs/{run}/journal"), None);
    assert_eq!(st, 200, "{journal}");
    journal
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            let f = |k: &str| j[k].as_str().unwrap_or("").to_owned();
            (f("step"), f("phase"), f("state"))
        })
        .collect()
}

#[test]
fn fault_policy_auto_readmits_a_cleared_fault_and_escalates_a_lasting_one() {
    let Some(conf) = slurm_conf() else { return };
    let _locks = (lock_slurm_node("gpu-node-03"), lock_slurm_node("gpu-node-04"));
    let fleet = nodes(&[("gpu-node-03", "r1", "redfish"), ("gpu-node-04", "r2", "ipmi")]);
    let sim = start(&fleet, 25600);
    let _sshd: Vec<Sshd> = fleet.iter().map(|n| sshd(n, &sim.node_state)).collect();
    for n in ["gpu-node-03", "gpu-node-04"] {
        scontrol(&conf, &["update", &format!("nodename={n}"), "state=resume"]);
    }
    add_user(&sim, "ann", "operator", PASSWORD);
    // The XID (its SEL entry is the fault the sweep sees) clears with a power cycle; the rail does not.
    sim.fault("gpu-node-03", "gpu-xid=0:79");
    sim.fault("gpu-node-04", "gpu-xid=0:79");
    sim.fault("gpu-node-04", "rail-down=mlx5_0");
    let srv = serve(&sim, &conf, &config(&sim, &[("gpu-node-03", "auto"), ("gpu-node-04", "auto")]));
    let s = login(&srv.addr, "ann", PASSWORD);

    let ok =
        run_of(&s, "gpu-node-03", "gpu-node-recover", &["succeeded", "failed", "escalated", "aborted"], 240);
    assert_eq!(ok["state"], "succeeded", "{ok:#}");
    assert_eq!(ok["actor"], "fault-policy");
    let names: Vec<(String, String)> = steps(&s, ok["run"].as_str().unwrap());
    assert!(names.iter().all(|(_, st)| st == "ok"), "{names:?}");
    assert_eq!(sinfo(&conf, "gpu-node-03").0, "idle", "readmitted");
    assert_eq!(executed(&sim, "gpu-node-03", "power-cycle"), 1, "{:?}", sim.actions("gpu-node-03"));

    let bad =
        run_of(&s, "gpu-node-04", "gpu-node-recover", &["succeeded", "failed", "escalated", "aborted"], 240);
    assert_eq!(bad["state"], "escalated", "{bad:#}");
    let st = steps(&s, bad["run"].as_str().unwrap());
    assert!(st.contains(&("verify".into(), "failed".into())), "{st:?}");
    assert!(!st.iter().any(|(n, s)| n == "readmit" && s == "ok"), "never readmitted: {st:?}");
    let (state, reason) = sinfo(&conf, "gpu-node-04");
    assert!(state.contains("drain"), "kept drained: {state} {reason}");
    assert!(reason.starts_with("lifeline:"), "under Lifeline's own mark: {reason}");

    // The decisions are recorded as policy events with the run they started.
    let (_, events) = s.call("GET", "/api/v1/events?limit=1000", None);
    let started = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["source"] == "policy" && e["data"]["response"]["state"] == "started")
        .count();
    assert_eq!(started, 2, "{events:#}");
    for n in ["gpu-node-03", "gpu-node-04"] {
        scontrol(&conf, &["update", &format!("nodename={n}"), "state=resume"]);
    }
}

#[test]
fn approve_mode_waits_for_an_operator_and_a_killed_server_resumes_without_repeating_the_cycle() {
    let Some(conf) = slurm_conf() else { return };
    let _lock = lock_slurm_node("gpu-node-01");
    let fleet = nodes(&[("gpu-node-01", "r3", "redfish")]);
    let sim = start(&fleet, 25700);
    let _sshd: Vec<Sshd> = fleet.iter().map(|n| sshd(n, &sim.node_state)).collect();
    scontrol(&conf, &["update", "nodename=gpu-node-01", "state=resume"]);
    add_user(&sim, "ann", "operator", PASSWORD);
    add_user(&sim, "vic", "viewer", PASSWORD);
    sim.fault("gpu-node-01", "gpu-xid=0:79");
    let cfg = config(&sim, &[("gpu-node-01", "approve")]);
    let mut srv = serve(&sim, &conf, &cfg);
    let s = login(&srv.addr, "ann", PASSWORD);

    let waiting = run_of(&s, "gpu-node-01", "gpu-node-recover", &["waiting-approval"], 120);
    let id = waiting["run"].as_str().unwrap().to_owned();
    // Nothing acted before the approval: no drain, no power action.
    std::thread::sleep(Duration::from_secs(2));
    assert!(steps(&s, &id).iter().all(|(_, st)| st == "pending" || st == "waiting-approval"));
    assert_eq!(executed(&sim, "gpu-node-01", "power-cycle"), 0);
    // A viewer may read the run but not approve it.
    let v = login(&srv.addr, "vic", PASSWORD);
    let (st, e) = v.call("POST", &format!("/api/v1/runs/{id}/approve"), None);
    assert_eq!(st, 403, "{e}");

    let (st, r) = s.call("POST", &format!("/api/v1/runs/{id}/approve"), Some(json!({})));
    assert_eq!(st, 200, "{r}");
    assert_eq!(r["state"], "running", "answered at once, driven in the background: {r}");
    let (_, audit) = s.call("GET", "/api/v1/audit?actor=web:ann&action=runbook.approve", None);
    assert!(audit.as_array().is_some_and(|a| a.len() == 1), "{audit}");

    // SIGKILL while the power cycle is in flight: the BMC has it, the step has no outcome yet (the
    // confirmation that the host went off and came back is still being watched).
    wait_until("the reset step in flight on the BMC", Duration::from_secs(120), || {
        (executed(&sim, "gpu-node-01", "power-cycle") == 1
            && steps(&s, &id).iter().any(|(n, st)| n == "reset" && st == "running"))
        .then_some(())
    });
    srv.child.kill().unwrap();
    srv.child.wait().unwrap();
    drop(srv);
    let srv = serve(&sim, &conf, &cfg);
    let s = login(&srv.addr, "ann", PASSWORD);
    let done = run_of(
        &s,
        "gpu-node-01",
        "gpu-node-recover",
        &["succeeded", "failed", "escalated", "aborted", "waiting-approval"],
        240,
    );
    assert_eq!(done["state"], "succeeded", "{done:#}\n{:#?}", journal(&s, &id));
    assert!(steps(&s, &id).iter().all(|(_, st)| st == "ok"), "{:?}", steps(&s, &id));
    // The new server resumed it: the step left in flight was decided from the journal and the BMC's
    // state (a `decision` row), not simply sent again.
    let rows = journal(&s, &id);
    assert!(rows.iter().any(|(step, phase, _)| step == "reset" && phase == "decision"), "{rows:#?}");
    eprintln!("journal after the restart: {rows:?}");
    let actions: Vec<String> = sim
        .actions("gpu-node-01")
        .iter()
        .filter(|a| a["noop"] != true)
        .map(|a| a["action"].as_str().unwrap_or("?").to_owned())
        .collect();
    assert_eq!(actions, ["power-cycle"], "exactly one BMC action for the one power step");
    assert_eq!(sinfo(&conf, "gpu-node-01").0, "idle", "readmitted");
}

/// An admin runbook (an `exec` step runs a program on the jump host), waiting for approval first.
const GLUE: &str = r#"# site-glue
#
# Fault:       none: site glue run by hand.
# Touches:     the jump host (a program).
# Never:       any device.
# Worst case:  the program fails.

name = "site-glue"
description = "Run the site's glue on the jump host"
targets = ["head-node"]
fault = "none"
touches = "the jump host"
never-touches = "devices"
worst-case = "the program fails"

[[step]]
name = "glue"
kind = "exec"
command = ["/bin/true"]
approve = "required"

[[verify]]
name = "bmc-answers"
kind = "wait-for"
bmc = "reachable"
timeout = "30s"
"#;

#[test]
fn sigterm_lets_the_step_in_flight_finish_and_the_next_start_resumes_the_run() {
    let sim = common::two_node_sim(25800);
    add_user(&sim, "ann", "operator", PASSWORD);
    let dir = sim.dir.path().join("runbooks");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("cycle-head-node.toml"), common::CYCLE).unwrap();
    std::fs::write(dir.join("site-glue.toml"), GLUE).unwrap();
    add_user(&sim, "ada", "admin", PASSWORD);
    let cfg = format!("[server]\nsweep-interval = \"0s\"\n\n[runbooks]\ndir = \"{}\"\n", dir.display());
    let mut srv = ServeProcess::start_with(&sim, &cfg);
    let s = login(&srv.addr, "ann", PASSWORD);
    // An admin runbook: the operator may read and plan it, not start it; its runs are the admin's.
    let (_, list) = s.call("GET", "/api/v1/runbooks", None);
    let glue = list.as_array().unwrap().iter().find(|r| r["name"] == "site-glue").cloned().unwrap();
    assert_eq!(glue["admin_only"], true, "{glue}");
    let (st, plan) = s.call("POST", "/api/v1/runbooks/site-glue/plan", Some(json!({"targets": ["node"]})));
    assert_eq!(st, 200, "{plan}");
    assert_eq!(plan[0]["steps"][0]["approval_required"], true, "{plan}");
    let (st, e) = s.call("POST", "/api/v1/runbooks/site-glue/runs", Some(json!({"targets": ["node"]})));
    assert_eq!((st, e["class"].as_str()), (403, Some("forbidden")), "{e}");
    let admin = login(&srv.addr, "ada", PASSWORD);
    let (st, r) = admin.call("POST", "/api/v1/runbooks/site-glue/runs", Some(json!({"targets": ["node"]})));
    assert_eq!(st, 200, "{r}");
    assert_eq!(r[0]["state"], "running", "admitted; it pauses at its approval: {r}");
    let glue_run = r[0]["run"].as_str().unwrap();
    run_of(&s, "node", "site-glue", &["waiting-approval"], 30);
    for what in ["approve", "abort"] {
        let (st, e) = s.call("POST", &format!("/api/v1/runs/{glue_run}/{what}"), None);
        assert_eq!(st, 403, "operator {what}s an admin run: {e}");
    }
    let (st, r) = admin.call("POST", &format!("/api/v1/runs/{glue_run}/abort"), None);
    assert_eq!((st, r["state"].as_str()), (200, Some("aborted")), "{r}");
    let (_, audit) = s.call("GET", "/api/v1/audit?actor=web:ada&action=runbook.abort", None);
    assert!(audit.as_array().is_some_and(|a| a.len() == 1), "aborted as the admin: {audit}");

    let (st, runs) =
        s.call("POST", "/api/v1/runbooks/cycle-head-node/runs", Some(json!({"targets": ["node"]})));
    assert_eq!(st, 200, "{runs}");
    assert_eq!(runs[0]["state"], "running", "answered at once: {runs}");
    let id = runs[0]["run"].as_str().unwrap().to_owned();
    let (_, audit) = s.call("GET", "/api/v1/audit?actor=web:ann&action=runbook.start", None);
    assert!(audit.as_array().is_some_and(|a| a.len() == 1), "started as the web user: {audit}");

    wait_until("the cycle in flight", Duration::from_secs(60), || {
        steps(&s, &id).iter().any(|(n, st)| n == "cycle" && st == "running").then_some(())
    });
    let _ = std::process::Command::new("kill").args(["-TERM", &srv.child.id().to_string()]).status();
    let exited =
        wait_until("lifeline serve to stop", Duration::from_secs(60), || srv.child.try_wait().unwrap());
    assert!(exited.success(), "graceful stop: {exited}");
    drop(srv);

    // The cycle finished before the server stopped; the run stayed `running` at the next boundary.
    let srv = ServeProcess::start_with(&sim, &cfg);
    let s = login(&srv.addr, "ann", PASSWORD);
    let done = run_of(&s, "node", "cycle-head-node", &["succeeded", "failed", "escalated", "aborted"], 120);
    assert_eq!(done["state"], "succeeded", "{done:#}");
    let rows = journal(&s, &id);
    let cycle_outcome = rows.iter().position(|r| r.0 == "cycle" && r.1 == "outcome" && r.2 == "ok");
    let interrupted = rows.iter().position(|r| r.1 == "run" && r.2 == "interrupted");
    assert!(
        matches!((cycle_outcome, interrupted), (Some(a), Some(b)) if a < b),
        "the step finished, then the stop was journaled: {rows:#?}"
    );
    assert_eq!(
        rows.iter().filter(|r| r.0 == "cycle" && r.1 == "intent").count(),
        1,
        "the cycle was not started again: {rows:#?}"
    );
    // An IPMI cycle is sent as Off, then On (README): each exactly once.
    let actions: Vec<String> = sim
        .actions("node")
        .iter()
        .filter(|a| a["noop"] != true)
        .map(|a| a["action"].as_str().unwrap_or("?").to_owned())
        .collect();
    assert_eq!(actions, ["power-off", "power-on"], "one cycle, sent once");
}
