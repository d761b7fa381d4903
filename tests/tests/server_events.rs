//! `lifeline serve` receiving BMC events by itself (`[server] events`), over `lifeline sim`'s Redfish
//! EventService: with `push` the server subscribes every Redfish BMC to its own receiver, an injected GPU
//! XID arrives, is stored once and opens a `sel-critical` fault without waiting for a sweep, and a clean
//! stop removes the subscription (none left on the BMC); with `sse` the same event arrives over the BMC's
//! event stream.

#[path = "runbook_support/mod.rs"]
mod support;

use std::time::Duration;

use lifeline_test_utils::{
    ServeProcess, output_json as json, output_text as text, unique_loopback, wait_until,
};
use support::*;

/// The SEL message of the simulator's XID 79 on GPU 0.
const XID: &str = "GPU0: PCIe bus fatal error";

fn ours(sim: &lifeline_test_utils::SimProcess, node: &str) -> bool {
    let o = sim.lifeline(&["bmc", "subscribe", node, "--list", "--json"]);
    json(&o)[0]["subscriptions"].as_array().is_some_and(|s| s.iter().any(|x| x["ours"] == true))
}

/// The XID, once in the stored events, and the fault it opened.
fn xid_stored_once_with_a_fault(sim: &lifeline_test_utils::SimProcess, node: &str, source: &str) {
    let events = wait_until("the XID stored", Duration::from_secs(60), || {
        let o = sim.lifeline(&["events", node, "--json"]);
        let v = json(&o);
        let hits: Vec<serde_json::Value> = v
            .as_array()?
            .iter()
            .filter(|e| e["message"].as_str().unwrap_or("").contains(XID))
            .cloned()
            .collect();
        (!hits.is_empty()).then_some(hits)
    });
    assert_eq!(events.len(), 1, "stored once: {events:#?}");
    assert_eq!(events[0]["source"], source, "{events:#?}");
    let faults = wait_until("the fault", Duration::from_secs(30), || {
        let o = sim.lifeline(&["fault", "list", "--json"]);
        let v = json(&o);
        let f: Vec<serde_json::Value> = v
            .as_array()?
            .iter()
            .filter(|f| f["kind"] == "sel-critical" && f["device"] == node)
            .cloned()
            .collect();
        (!f.is_empty()).then_some(f)
    });
    assert!(faults[0]["message"].as_str().unwrap_or("").contains(XID), "{faults:#?}");
}

#[test]
fn pushed_events_are_stored_once_open_a_fault_and_leave_no_subscription() {
    let fleet = nodes(&[("gpu-node-31", "r1", "redfish")]);
    let sim = start(&fleet, 25900);
    let listen = format!("{}:0", unique_loopback());
    let config = format!(
        "[server]\nsweep-interval = \"0s\"\nconsole-logging = false\nevents = \"push\"\nevent-listen = \"{listen}\"\n"
    );
    let mut srv = ServeProcess::start_with(&sim, &config);
    wait_until("the server's subscription on the BMC", Duration::from_secs(30), || {
        ours(&sim, "gpu-node-31").then_some(())
    });
    sim.fault("gpu-node-31", "gpu-xid=0:79");
    xid_stored_once_with_a_fault(&sim, "gpu-node-31", "redfish-event");
    let metrics = lifeline_test_utils::http_get(&format!("http://{}/metrics", srv.addr));
    assert!(metrics.contains("lifeline_bmc_events_total{"), "{metrics}");

    let _ = std::process::Command::new("kill").args(["-TERM", &srv.child.id().to_string()]).status();
    let status =
        wait_until("lifeline serve to stop", Duration::from_secs(60), || srv.child.try_wait().unwrap());
    assert!(status.success(), "{status}");
    assert!(!ours(&sim, "gpu-node-31"), "a clean stop removes the subscription");
    let o = sim.lifeline(&["audit", "log", "--json"]);
    let rows = json(&o);
    let acts: Vec<&str> = rows.as_array().unwrap().iter().filter_map(|r| r["action"].as_str()).collect();
    assert!(acts.contains(&"bmc.subscribe") && acts.contains(&"bmc.unsubscribe"), "{}", text(&o));
}

#[test]
fn streamed_events_are_stored_and_open_a_fault() {
    let fleet = nodes(&[("gpu-node-32", "r1", "redfish")]);
    let sim = start(&fleet, 26000);
    let config = "[server]\nsweep-interval = \"0s\"\nconsole-logging = false\nevents = \"sse\"\n";
    let _srv = ServeProcess::start_with(&sim, config);
    // An event sent before the server's stream is open is not replayed by the BMC: inject on one GPU after
    // another until one arrives (the stream opens within seconds of the server's start).
    let got = wait_until("an XID over the event stream", Duration::from_secs(90), || {
        for attempt in 0..8 {
            sim.fault("gpu-node-32", &format!("gpu-xid={}:79", attempt % 2));
            std::thread::sleep(Duration::from_secs(4));
            let o = sim.lifeline(&["events", "gpu-node-32", "--json"]);
            let v = json(&o);
            if let Some(e) = v.as_array()?.iter().find(|e| {
                e["source"] == "redfish-event"
                    && e["message"].as_str().unwrap_or("").contains("PCIe bus fatal")
            }) {
                return Some(e.clone());
            }
        }
        None
    });
    let message = got["message"].as_str().unwrap().to_owned();
    let faults = wait_until("the fault", Duration::from_secs(30), || {
        let o = sim.lifeline(&["fault", "list", "--json"]);
        let v = json(&o);
        v.as_array()?.iter().find(|f| f["kind"] == "sel-critical" && f["device"] == "gpu-node-32").cloned()
    });
    assert!(faults["message"].as_str().unwrap_or("").contains("PCIe bus fatal"), "{faults:#?} / {message}");
}
