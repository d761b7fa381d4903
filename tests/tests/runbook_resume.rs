//! SIGKILL at 20 points of a run (before admission, at step boundaries, in the middle of the power cycle,
//! of the waits, of the SEL clear) and `lifeline runbook resume` each time: every run completes, and the
//! simulated BMC's own action log shows exactly one power cycle and one SEL clear per run — a step whose
//! outcome the journal did not have was looked up (request table, the BMC's event log), not repeated.
//! A run stopped after a step's outcome was written but before it moved on routes by that outcome when
//! resumed: it does not act again.

#[path = "runbook_support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use lifeline_test_utils::{SimProcess, output_json as json, output_text as text};
use support::*;

const OFFSET: u16 = 24300;

const RUNBOOK: &str = r#"# kill-test: the steps of gpu-node-recover that act on the BMC, without a scheduler.
name = "kill-test"
description = "power cycle, wait for power and SSH, verify, clear the SEL"
targets = ["gpu-node"]
fault = "test"
touches = "power, SEL"
never-touches = "schedulers"
worst-case = "test"

[[step]]
name = "cycle"
kind = "power"
action = "cycle"

[[step]]
name = "power-on"
kind = "wait-for"
power = "on"
interval = "100ms"
timeout = "2m"

[[step]]
name = "os-up"
kind = "wait-for"
ssh = "frontend:2222"
interval = "100ms"
timeout = "2m"

[[step]]
name = "verify"
kind = "verify"

[[step]]
name = "clear-sel"
kind = "sel"
clear = true

[[verify]]
name = "power-is-on"
kind = "wait-for"
power = "on"
interval = "100ms"
timeout = "1m"
"#;

fn runs(sim: &SimProcess) -> Vec<serde_json::Value> {
    let o = sim.lifeline(&["runbook", "status", "--json"]);
    json(&o).as_array().unwrap().clone()
}

/// Kills and resumes runs of `kill-test` on `node` at `points` (fractions of an undisturbed run, in 21ths);
/// returns how many runs paused for approval, with their reasons.
fn kill_and_resume(
    sim: &SimProcess,
    node: &str,
    rb: &str,
    points: std::ops::RangeInclusive<u32>,
) -> Vec<String> {
    let ns = sim.node_state.to_str().unwrap().to_owned();
    let args: Vec<&str> = vec![
        "runbook",
        "run",
        "kill-test",
        node,
        "--yes",
        "--json",
        "--runbooks",
        rb,
        "--node-state",
        &ns,
        "--interval-ms",
        "20",
    ];
    let env_args: Vec<&str> = vec!["--node-state", &ns, "--interval-ms", "20"];
    let mine = |sim: &SimProcess| -> Vec<serde_json::Value> {
        runs(sim).into_iter().filter(|r| r["target"] == node).collect()
    };

    // One run undisturbed, to learn how long a run takes.
    let t0 = Instant::now();
    let o = sim.lifeline(&args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let whole = t0.elapsed();
    assert_eq!(json(&o)["state"], "succeeded");
    let (mut cycles, mut clears) = (executed(sim, node, "power-cycle"), executed(sim, node, "sel-clear"));
    assert_eq!((cycles, clears), (1, 1));

    let mut unknown = Vec::new();
    for i in points {
        let before = mine(sim).len();
        let delay = whole * i / 21;
        let mut child = sim.spawn_lifeline(&args);
        std::thread::sleep(delay);
        child.kill().unwrap(); // SIGKILL
        let _ = child.wait();
        let after = mine(sim);
        if after.len() == before {
            // Killed before the run was recorded: nothing happened; run it again, to the end.
            let o = sim.lifeline(&args);
            assert_eq!(o.status.code(), Some(0), "{node} point {i}: {}", text(&o));
        } else {
            let id = after[0]["run"].as_str().unwrap().to_owned();
            let deadline = Instant::now() + Duration::from_secs(120);
            loop {
                assert!(Instant::now() < deadline, "{node} point {i}: run {id} did not complete");
                let st = json(&sim.lifeline(&["runbook", "status", &id, "--json"]));
                match st["state"].as_str().unwrap() {
                    "succeeded" => break,
                    "running" => {
                        let mut a = vec!["runbook", "resume", id.as_str(), "--json"];
                        a.extend(&env_args);
                        let o = sim.lifeline(&a);
                        assert!(matches!(o.status.code(), Some(0 | 1)), "{node} point {i}: {}", text(&o));
                    }
                    "waiting-approval" => {
                        // The operator checks by hand (here: the BMC's action log) and says what happened.
                        unknown.push(format!("{node} point {i}: {}", st["reason"]));
                        let done = executed(sim, node, "power-cycle") > cycles;
                        let mut a = vec!["runbook", "approve", id.as_str(), "--json"];
                        if done {
                            a.push("--skip");
                        }
                        a.extend(&env_args);
                        let _ = sim.lifeline(&a);
                    }
                    other => panic!("{node} point {i}: run {id} ended {other}: {st:#}"),
                }
            }
        }
        let (c, s) = (executed(sim, node, "power-cycle"), executed(sim, node, "sel-clear"));
        if (c - cycles, s - clears) != (1, 1) {
            let id = mine(sim)[0]["run"].as_str().unwrap().to_owned();
            let log = text(&sim.lifeline(&["runbook", "log", &id]));
            let audit = text(&sim.lifeline(&["audit", "log", "--limit", "40"]));
            panic!("{node} point {i} (after {delay:?}): {:?}\n{log}\n{audit}", sim.actions(node));
        }
        (cycles, clears) = (c, s);
    }
    eprintln!("{node}: whole run {whole:?}; paused for approval: {unknown:?}");
    unknown
}

#[test]
fn sigkill_at_twenty_points_then_resume_acts_once_per_step() {
    // Two nodes side by side, ten kill points each: a SIGKILLed process cannot log out of the BMC, and a
    // Redfish BMC's session table (16 here, 30 min timeout) would fill up with twenty leaked sessions.
    let fleet = nodes(&[("kn1", "r1", "redfish"), ("kn2", "r2", "redfish")]);
    let sim = start(&fleet, OFFSET);
    let _sshd: Vec<Sshd> = fleet.iter().map(|n| sshd(n, &sim.node_state)).collect();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("kill-test.toml"), RUNBOOK).unwrap();
    let rb = dir.path().to_str().unwrap();
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| kill_and_resume(&sim, "kn1", rb, 1..=10));
        let b = s.spawn(|| kill_and_resume(&sim, "kn2", rb, 11..=20));
        (a.join().unwrap(), b.join().unwrap())
    });
    let unknown: Vec<String> = a.into_iter().chain(b).collect();
    assert!(unknown.len() <= 2, "the executor should find out by itself almost always: {unknown:?}");
}

/// `kill-test`'s power cycle, then a step that waits for an operator.
fn hold_runbook() -> String {
    let cycle = RUNBOOK.split("[[step]]\nname = \"power-on\"").next().unwrap();
    cycle.replace("name = \"kill-test\"", "name = \"hold-test\"")
        + "[[step]]\nname = \"hold\"\nkind = \"wait-for\"\npower = \"on\"\ninterval = \"100ms\"\n\
           timeout = \"1m\"\napprove = \"required\"\n\n\
           [[verify]]\nname = \"power-is-on\"\nkind = \"wait-for\"\npower = \"on\"\ntimeout = \"1m\"\n"
}

#[test]
fn a_run_stopped_after_an_outcome_but_before_moving_on_does_not_act_again() {
    let fleet = nodes(&[("ko1", "r1", "redfish")]);
    let sim = start(&fleet, 24350);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hold-test.toml"), hold_runbook()).unwrap();
    let rb = dir.path().to_str().unwrap();
    let o = sim.lifeline(&["runbook", "run", "hold-test", "ko1", "--yes", "--json", "--runbooks", rb]);
    let view = json(&o);
    assert_eq!(view["state"], "waiting-approval", "{}", text(&o));
    assert_eq!(executed(&sim, "ko1", "power-cycle"), 1, "{:?}", sim.actions("ko1"));
    let id = view["run"].as_str().unwrap().to_owned();

    // What a process killed between the cycle's outcome row and moving on to `hold` leaves behind (the
    // two writes were separate before they were one transaction): the outcome, and the run at `cycle`.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let settings = lifeline_engine::Settings { data_dir: Some(sim.data.clone()), ..Default::default() };
        let l = lifeline_engine::Lifeline::new(&settings, lifeline_engine::Identity::new("test")).unwrap();
        assert!(l.run_set_state(&id, lifeline_engine::ops::runs::RunState::Running, 0, None).await.unwrap());
        l.close().await;
    });

    let o = sim.lifeline(&["runbook", "resume", &id, "--json"]);
    let log = text(&sim.lifeline(&["runbook", "log", &id]));
    assert_eq!(json(&o)["state"], "waiting-approval", "{}\n{log}", text(&o));
    assert_eq!(executed(&sim, "ko1", "power-cycle"), 1, "cycled again: {:?}\n{log}", sim.actions("ko1"));
    let o = sim.lifeline(&["runbook", "approve", &id, "--json"]);
    assert_eq!(json(&o)["state"], "succeeded", "{}", text(&o));
    assert_eq!(executed(&sim, "ko1", "power-cycle"), 1, "{:?}", sim.actions("ko1"));
}
