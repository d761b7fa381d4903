//! The blast-radius guard: faults on 6 of the 8 nodes of a rack and six `lifeline runbook run` processes at
//! once, with `max-concurrent-per-rack = 2`: exactly two runs start, the four others are refused with the
//! reason and nothing is done to their nodes. When the admitted runs end, a new one is admitted again.

#[path = "runbook_support/mod.rs"]
mod support;

use lifeline_test_utils::{output_json as json, output_text as text};
use support::*;

const OFFSET: u16 = 24500;

const RUNBOOK: &str = r#"# guard-test
name = "guard-test"
description = "cycle after approval"
targets = ["gpu-node"]
fault = "test"
touches = "power"
never-touches = "schedulers"
worst-case = "test"

[[step]]
name = "cycle"
kind = "power"
action = "cycle"
approve = "required"

[[verify]]
name = "power-on"
kind = "wait-for"
power = "on"
interval = "100ms"
timeout = "1m"
"#;

#[test]
fn six_faulted_nodes_in_a_rack_with_a_guard_of_two_start_exactly_two_runs() {
    let names: Vec<String> = (1..=8).map(|i| format!("g{i}")).collect();
    let spec: Vec<(&str, &str, &'static str)> = names.iter().map(|n| (n.as_str(), "r1", "redfish")).collect();
    let fleet = nodes(&spec);
    let sim = start(&fleet, OFFSET);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("guard-test.toml"), RUNBOOK).unwrap();
    let config = dir.path().join("lifeline.toml");
    std::fs::write(
        &config,
        format!(
            "[runbooks]\ndir = \"{}\"\n\n[runbooks.guard]\nmax-concurrent-per-rack = 2\nmax-in-recovery-percent = 50\n",
            dir.path().display()
        ),
    )
    .unwrap();
    let cfg = config.to_str().unwrap();
    let faulted = &names[..6];
    for n in faulted {
        sim.fault(n, "gpu-xid=0:79");
    }
    let children: Vec<_> = faulted
        .iter()
        .map(|n| sim.spawn_lifeline(&["runbook", "run", "guard-test", n, "--yes", "--json", "--config", cfg]))
        .collect();
    let outs: Vec<_> = children.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
    let views: Vec<serde_json::Value> = outs.iter().map(json).collect();
    let admitted: Vec<&serde_json::Value> =
        views.iter().filter(|v| v["state"] == "waiting-approval").collect();
    let refused: Vec<&serde_json::Value> = views.iter().filter(|v| v["state"] == "refused").collect();
    assert_eq!((admitted.len(), refused.len()), (2, 4), "{views:#?}");
    for (o, v) in outs.iter().zip(&views) {
        let want = if v["state"] == "refused" { 1 } else { 0 };
        assert_eq!(o.status.code(), Some(want), "{}", text(o));
    }
    for r in &refused {
        assert!(r["reason"].as_str().unwrap().contains("max-concurrent-per-rack = 2"), "{r}");
        assert!(r["steps"].as_array().unwrap().iter().all(|s| s["state"] == "pending"), "{r}");
    }
    // Nothing was done to any node yet: the admitted runs wait for approval.
    for n in &names {
        assert!(sim.actions(n).is_empty(), "{n}: {:?}", sim.actions(n));
    }
    // A refused node asked again while two runs are active: still refused.
    let again = refused[0]["target"].as_str().unwrap();
    let o = sim.lifeline(&["runbook", "run", "guard-test", again, "--yes", "--json", "--config", cfg]);
    assert_eq!(json(&o)["state"], "refused", "{}", text(&o));

    // Approve both: they cycle (once each) and end; the rack has room again.
    for a in &admitted {
        let id = a["run"].as_str().unwrap();
        let o = sim.lifeline(&["runbook", "approve", id, "--json", "--config", cfg]);
        let log = text(&sim.lifeline(&["runbook", "log", id, "--json"]));
        assert_eq!(json(&o)["state"], "succeeded", "{}\n{log}", text(&o));
        let n = a["target"].as_str().unwrap();
        assert_eq!(executed(&sim, n, "power-cycle"), 1, "{:?}", sim.actions(n));
    }
    let o = sim.lifeline(&["runbook", "run", "guard-test", again, "--yes", "--json", "--config", cfg]);
    let waiting = json(&o);
    assert_eq!(waiting["state"], "waiting-approval", "{}", text(&o));

    // Aborted while it waits: it ends, nothing was done, and its journal says so (`log --follow` returns
    // once the run is no longer running).
    let id = waiting["run"].as_str().unwrap();
    let o = sim.lifeline(&["runbook", "abort", id, "--json", "--config", cfg]);
    assert_eq!(json(&o)["state"], "aborted", "{}", text(&o));
    let o = sim.lifeline(&["runbook", "approve", id, "--json", "--config", cfg]);
    assert_eq!(o.status.code(), Some(1), "an aborted run cannot be approved: {}", text(&o));
    let o = sim.lifeline(&["runbook", "log", id, "--follow", "--config", cfg]);
    assert!(text(&o).contains("aborted"), "{}", text(&o));
    assert!(sim.actions(again).is_empty(), "{:?}", sim.actions(again));

    // The dry run says what the guard would answer, and does nothing.
    let other = refused[1]["target"].as_str().unwrap();
    let o = sim.lifeline(&["runbook", "run", "guard-test", other, "--dry-run", "--json", "--config", cfg]);
    let plan = json(&o);
    assert_eq!(plan["guard"]["allowed"], true, "{plan:#}");
    assert_eq!(plan["steps"][0]["approval_required"], true);
    assert_eq!(plan["steps"][0]["operation"]["action"], "cycle");
    assert!(sim.actions(other).is_empty());
}
