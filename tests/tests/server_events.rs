//! `lifeline serve` receiving BMC events by itself (`[server] events`), over `lifeline sim`'s Redfish
//! EventService: with `push` the server subscribes every Redfish BMC to its own receiver, an injected GPU
//! XID arrives, is stored once and opens a `sel-critical` fault without waiting for a sweep, and a clean
//! stop removes the subscription (none left on the BMC); with `sse` the same event arrives over the BMC's
//! event stream. Forged and replayed deliveries change nothing: without the subscription's secret they
//! are refused, and with it (from the BMC's address) they only prompt a read of the BMC's own log.

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
    // A push only prompts a read of the BMC's log: what is stored is the log's entry.
    xid_stored_once_with_a_fault(&sim, "gpu-node-31", "sel");
    let metrics = lifeline_test_utils::http_get(&format!("http://{}/metrics", srv.addr));
    assert!(metrics.contains("lifeline_bmc_events_total{"), "{metrics}");
    // The fleet gauges read from the store at scrape time (PostgreSQL or SQLite alike).
    for gauge in [
        "\nlifeline_sweep_coverage_ratio ",
        "\nlifeline_console_log_bytes ",
        "# TYPE lifeline_runbook_runs gauge",
    ] {
        assert!(metrics.contains(gauge), "no `{}` in /metrics:\n{metrics}", gauge.trim());
    }

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

/// Lifeline's subscription destination on `node` (the receiver's URL and the BMC's secret).
fn destination(sim: &lifeline_test_utils::SimProcess, node: &str) -> Option<String> {
    let o = sim.lifeline(&["bmc", "subscribe", node, "--list", "--json"]);
    json(&o)[0]["subscriptions"]
        .as_array()?
        .iter()
        .find(|x| x["ours"] == true)
        .and_then(|x| x["destination"].as_str().map(str::to_owned))
}

/// POSTs `body` to `url` (`http://HOST:PORT/PATH`) the way a BMC delivers; the status code.
fn deliver(url: &str, body: &str) -> u16 {
    use std::io::{Read, Write};
    let rest = url.trim_start_matches("http://");
    let (host, path) = rest.split_once('/').map(|(h, p)| (h, format!("/{p}"))).unwrap_or((rest, "/".into()));
    let mut s = std::net::TcpStream::connect(host).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut reply = String::new();
    let _ = s.read_to_string(&mut reply);
    reply.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0)
}

/// A Critical XID event naming `context`, pointing at a log entry the BMC does not have.
fn forged(context: &str, message: &str) -> String {
    serde_json::json!({
        "@odata.type": "#Event.v1_7_0.Event", "Id": "9001", "Name": "Event Log", "Context": context,
        "Events": [{
            "EventType": "Alert", "EventId": "9001", "Severity": "Critical",
            "MessageId": "OpenBMC.0.1.GpuXid", "Message": message,
            "OriginOfCondition": { "@odata.id": "/redfish/v1/Systems/system/LogServices/EventLog/Entries/9001" }
        }]
    })
    .to_string()
}

/// (stored events of `node`, its faults as (kind, count)).
fn footprint(sim: &lifeline_test_utils::SimProcess, node: &str) -> (usize, Vec<(String, i64)>) {
    let events = json(&sim.lifeline(&["events", node, "--json"])).as_array().map_or(0, Vec::len);
    let o = sim.lifeline(&["fault", "list", "--json"]);
    let faults = json(&o)
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|f| f["device"] == node)
                .map(|f| (f["kind"].as_str().unwrap_or("").to_owned(), f["count"].as_i64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default();
    (events, faults)
}

#[test]
fn forged_and_replayed_events_change_nothing() {
    let node = "gpu-node-34";
    let fleet = nodes(&[(node, "r1", "redfish")]);
    let sim = start(&fleet, 26100);
    let listen = format!("{}:0", unique_loopback());
    let config = format!(
        "[server]\nsweep-interval = \"0s\"\nconsole-logging = false\nevents = \"push\"\nevent-listen = \"{listen}\"\n"
    );
    let srv = ServeProcess::start_with(&sim, &config);
    let dest = wait_until("the server's subscription on the BMC", Duration::from_secs(30), || {
        destination(&sim, node)
    });
    let receiver = dest.rsplit_once('/').map(|(r, _)| r.to_owned()).unwrap();
    let body = forged(&format!("lifeline:{node}"), "GPU3: forged XID 79");
    // An OOB neighbour without the secret, for a real node and for one that does not exist.
    assert_eq!(deliver(&receiver, &body), 401, "no secret");
    assert_eq!(deliver(&format!("{receiver}/{}", "0".repeat(64)), &body), 401, "a guessed secret");
    assert_eq!(deliver(&dest, &forged("lifeline:gpu-node-99", "GPU3: forged XID 79")), 404, "unknown device");
    // Even with the secret, from the BMC's address: accepted, but only as a prompt to read the BMC's log,
    // which holds no such entry.
    assert_eq!(deliver(&dest, &body), 204);
    std::thread::sleep(Duration::from_secs(5));
    let o = sim.lifeline(&["events", node, "--json"]);
    assert!(!text(&o).contains("forged"), "a pushed body was stored: {}", text(&o));
    assert_eq!(footprint(&sim, node).1, Vec::<(String, i64)>::new(), "a forged event opened a fault");

    // A real XID: the BMC's log has it, one fault. Replaying deliveries afterwards changes nothing.
    sim.fault(node, "gpu-xid=0:79");
    xid_stored_once_with_a_fault(&sim, node, "sel");
    std::thread::sleep(Duration::from_secs(3));
    let before = footprint(&sim, node);
    for _ in 0..3 {
        assert_eq!(deliver(&dest, &forged(&format!("lifeline:{node}"), XID)), 204);
    }
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(footprint(&sim, node), before, "a replay changed the events or faults");
    drop(srv);
}
