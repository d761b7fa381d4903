//! Push subscriptions that stay, under `lifeline serve` over `lifeline sim`: the simulated BMC drops every
//! subscription when it is reset (as iDRAC and iLO do on a reset or a firmware update); the server lists
//! the BMC's subscriptions on its schedule, finds its own gone, makes it again (exactly one, another tool's
//! subscription untouched, audited as `bmc.resubscribe`), and an event injected after the reset reaches it.

#[path = "runbook_support/mod.rs"]
mod support;

use std::process::Command;
use std::time::Duration;

use lifeline_test_utils::{
    ServeProcess, output_json as json, output_text as text, unique_loopback, wait_until,
};
use support::*;

/// The BMC's subscriptions as `bmc subscribe --list` shows them.
fn listed(sim: &lifeline_test_utils::SimProcess, node: &str) -> Vec<serde_json::Value> {
    let o = sim.lifeline(&["bmc", "subscribe", node, "--list", "--json"]);
    json(&o)[0]["subscriptions"].as_array().cloned().unwrap_or_default()
}

fn ours(subs: &[serde_json::Value]) -> Vec<&serde_json::Value> {
    subs.iter().filter(|x| x["ours"] == true).collect()
}

/// Another tool's subscription, made straight on the simulated BMC.
fn foreign_subscription(node: &Node, offset: u16) {
    let url = format!("https://{}:{}/redfish/v1/EventService/Subscriptions", node.bmc, 443 + offset);
    let body =
        r#"{"Destination": "http://192.0.2.10:8080/hook", "Context": "another-tool", "Protocol": "Redfish"}"#;
    let o = Command::new("curl")
        .args(["-sk", "-u", "admin:s3cret-pw", "-H", "Content-Type: application/json", "-d", body, "-o"])
        .args(["/dev/null", "-w", "%{http_code}", &url])
        .output()
        .expect("curl");
    assert_eq!(text(&o).trim(), "201", "{}", text(&o));
}

/// A simulated Redfish BMC `node` with another tool's subscription on it, and `lifeline serve` receiving its
/// events by push, checking its subscriptions every `check`.
fn serving_one_bmc(node: &str, offset: u16, check: &str) -> (lifeline_test_utils::SimProcess, ServeProcess) {
    let fleet = nodes(&[(node, "r1", "redfish")]);
    let sim = start(&fleet, offset);
    foreign_subscription(&fleet[0], offset);
    let listen = format!("{}:0", unique_loopback());
    let config = format!(
        "[server]\nsweep-interval = \"0s\"\nconsole-logging = false\nevents = \"push\"\nevent-listen = \"{listen}\"\n\
         event-check-interval = \"{check}\"\n"
    );
    let srv = ServeProcess::start_with(&sim, &config);
    (sim, srv)
}

#[test]
fn a_bmc_reset_drops_the_subscription_and_the_server_makes_it_again() {
    let node = "gpu-node-41";
    let (sim, _srv) = serving_one_bmc(node, 26300, "2s");
    let first = wait_until("the server's subscription", Duration::from_secs(30), || {
        let s = listed(&sim, node);
        (ours(&s).len() == 1).then(|| ours(&s)[0].clone())
    });
    // Heartbeats were asked for and the BMC (EventDestination v1_13) accepted them.
    assert_eq!(first["heartbeat_minutes"], 5, "{first:#}");

    // A reset by someone else (the CLI, not the server): the BMC restarts without any subscription.
    let o = sim.lifeline(&["bmc", "reset", node, "--yes", "--json", "--timeout", "60"]);
    assert!(o.status.success(), "{}", text(&o));
    let again = wait_until("the subscription made again", Duration::from_secs(60), || {
        let s = listed(&sim, node);
        let mine = ours(&s);
        (mine.len() == 1 && mine[0]["link"] != first["link"]).then(|| s.clone())
    });
    assert_eq!(ours(&again).len(), 1, "exactly one of Lifeline's: {again:#?}");
    assert_eq!(ours(&again)[0]["destination"], first["destination"]);
    // The reset dropped the other tool's too; the server never makes or removes anyone else's.
    assert!(again.iter().all(|x| x["ours"] == true), "{again:#?}");

    // An event after the reset reaches the server: stored, with its fault.
    sim.fault(node, "gpu-xid=1:79");
    wait_until("the XID after the reset", Duration::from_secs(60), || {
        let o = sim.lifeline(&["fault", "list", "--json"]);
        json(&o).as_array()?.iter().find(|f| f["kind"] == "sel-critical" && f["device"] == node).cloned()
    });
    let o = sim.lifeline(&["audit", "log", "--json"]);
    let rows = json(&o);
    let re: Vec<&serde_json::Value> =
        rows.as_array().unwrap().iter().filter(|r| r["action"] == "bmc.resubscribe").collect();
    assert!(!re.is_empty(), "{}", text(&o));
    let detail = serde_json::to_string(&re[0]).unwrap();
    assert!(detail.contains("missing"), "why it was made again: {detail}");
}

#[test]
fn another_tools_subscription_is_never_touched() {
    let node = "gpu-node-42";
    let (sim, _srv) = serving_one_bmc(node, 26400, "1s");
    wait_until("the server's subscription", Duration::from_secs(30), || {
        (ours(&listed(&sim, node)).len() == 1).then_some(())
    });
    // Several checks later: still one of Lifeline's, the other tool's still there, nothing audited.
    std::thread::sleep(Duration::from_secs(4));
    let s = listed(&sim, node);
    assert_eq!(ours(&s).len(), 1, "{s:#?}");
    assert!(s.iter().any(|x| x["context"] == "another-tool"), "{s:#?}");
    let o = sim.lifeline(&["audit", "log", "--json"]);
    assert!(
        !text(&o).contains("bmc.resubscribe"),
        "a check that finds it in place is no action: {}",
        text(&o)
    );
}
