//! `lifeline --server URL`: `power`, `health` and `sweep` sent through a running `lifeline serve` with the
//! token from `$LIFELINE_TOKEN` — executed once on the simulated BMC, audited as the token's user, refused
//! for a viewer, and a usage error without a token.

mod common;

use std::process::{Command, Output, Stdio};

use common::{Server, add_user, token, two_node_sim};
use lifeline_test_utils::{SimProcess, lifeline_bin, output_json, output_text};

/// `lifeline --server URL ARGS` with the token in the environment only (no inventory, no data dir: the
/// server has them).
fn remote(url: &str, token: Option<&str>, args: &[&str]) -> Output {
    let mut c = Command::new(lifeline_bin());
    c.arg("--server").arg(url).args(args).env_remove("LIFELINE_TOKEN_FILE").env("HOME", "/nonexistent");
    match token {
        Some(t) => c.env("LIFELINE_TOKEN", t),
        None => c.env_remove("LIFELINE_TOKEN"),
    };
    c.stdin(Stdio::null()).output().unwrap()
}

fn cycles(sim: &SimProcess, device: &str) -> usize {
    sim.actions(device).iter().filter(|a| a["action"] == "power-off" || a["action"] == "power-cycle").count()
}

#[test]
fn power_health_and_sweep_through_a_running_server() {
    let sim = two_node_sim(29000);
    add_user(&sim, "ops", "operator", "operator password");
    add_user(&sim, "vic", "viewer", "viewer password");
    let (op, viewer) = (token(&sim, "ops"), token(&sim, "vic"));
    let srv = Server::start(&sim);
    let url = format!("http://{}", srv.addr);

    let o = remote(&url, Some(&op), &["--json", "power", "status", "node"]);
    assert!(o.status.success(), "{}", output_text(&o));
    assert_eq!(output_json(&o)[0]["power"], "on", "{}", output_text(&o));

    let before = cycles(&sim, "node");
    let o = remote(&url, Some(&op), &["--json", "--request-id", "r-1", "power", "cycle", "node", "--yes"]);
    assert!(o.status.success(), "{}", output_text(&o));
    assert_eq!(cycles(&sim, "node"), before + 1, "{:?}", sim.actions("node"));
    // The same request id again: the first outcome, not a second cycle.
    let o = remote(&url, Some(&op), &["--json", "--request-id", "r-1", "power", "cycle", "node", "--yes"]);
    assert!(o.status.success(), "{}", output_text(&o));
    assert_eq!(cycles(&sim, "node"), before + 1, "{:?}", sim.actions("node"));
    let audit = sim.lifeline(&["audit", "log", "--json"]);
    let rows = output_json(&audit);
    assert!(
        rows.as_array()
            .unwrap()
            .iter()
            .any(|r| r["actor"] == "web:ops" && r["action"] == "power.cycle" && r["target"] == "node"),
        "{rows}"
    );

    let o = remote(&url, Some(&op), &["--json", "health", "node", "leaf"]);
    assert!(o.status.success(), "{}", output_text(&o));
    assert_eq!(output_json(&o).as_array().unwrap().len(), 2, "{}", output_text(&o));

    let o = remote(&url, Some(&op), &["--json", "sweep"]);
    assert!(o.status.success(), "{}", output_text(&o));
    let v = output_json(&o);
    assert_eq!(v["rows"].as_array().unwrap().len(), 2, "{v}");

    // A viewer may read but not act; nothing is executed.
    let o = remote(&url, Some(&viewer), &["--json", "power", "cycle", "node", "--yes"]);
    assert_eq!(o.status.code(), Some(1), "{}", output_text(&o));
    assert!(output_text(&o).contains("viewer"), "{}", output_text(&o));
    assert_eq!(cycles(&sim, "node"), before + 1);
    let o = remote(&url, Some(&viewer), &["--json", "sweep"]);
    assert_eq!(o.status.code(), Some(1), "{}", output_text(&o));

    // No token anywhere: a usage error that says where to put one.
    let o = remote(&url, None, &["--json", "health", "node"]);
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));
    assert!(output_text(&o).contains("LIFELINE_TOKEN"), "{}", output_text(&o));
}
