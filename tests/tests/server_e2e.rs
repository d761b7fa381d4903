//! `lifeline serve` over `lifeline sim`, through its HTTP API the way the web console will use it: log in,
//! read the fleet, cycle a node (audited as `web:<user>`), read a console log written while nobody was
//! attached, run a backup and read its diff.

mod common;

use std::time::Duration;

use common::{Server, add_user, login, request, two_node_sim};
use lifeline_test_utils::wait_until;
use serde_json::json;

#[test]
fn serve_login_fleet_power_console_backup() {
    let sim = two_node_sim(24000);
    add_user(&sim, "ann", "operator", "correct horse battery");
    let srv = Server::start(&sim);
    let (st, _, _) = request(&srv.addr, "GET", "/api/v1/devices", &[], None).unwrap();
    assert_eq!(st, 401, "no credentials");
    let s = login(&srv.addr, "ann", "correct horse battery");

    let (st, devices) = s.call("GET", "/api/v1/devices", None);
    assert_eq!(st, 200, "{devices}");
    let names: Vec<&str> = devices.as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["leaf", "node"]);
    assert!(
        devices[0].get("power").is_some()
            && devices[0].get("health").is_some()
            && devices[0]["role"] == "switch"
    );

    let (st, r) = s.call("POST", "/api/v1/devices/node/power", Some(json!({"action": "cycle"})));
    assert_eq!(st, 200, "{r}");
    let (_, audit) = s.call("GET", "/api/v1/audit?actor=web:ann&action=power.cycle", None);
    assert!(
        audit.as_array().is_some_and(|a| a.iter().any(|r| r["target"] == "node" && r["outcome"] == "ok")),
        "{audit}"
    );

    // Nobody attached: the always-on logger still has the node's console output (the cycle boots it).
    wait_until("console output logged without a viewer", Duration::from_secs(60), || {
        let (st, log) = s.call("GET", "/api/v1/consoles/node/log", None);
        (st == 200 && log["records"].as_array().is_some_and(|r| r.iter().any(|x| x["kind"] == "output")))
            .then_some(())
    });

    let (st, r) = s.call("POST", "/api/v1/backups/run", Some(json!({"targets": ["leaf"]})));
    assert_eq!(st, 200, "{r}");
    sim.fault("leaf", "config-change");
    let (st, r) = s.call("POST", "/api/v1/backups/run", Some(json!({"targets": ["leaf"]})));
    assert_eq!(st, 200, "{r}");
    let (st, d) = s.call("GET", "/api/v1/backups/leaf/diff", None);
    assert_eq!(st, 200, "{d}");
    assert_eq!((d["from"].as_u64(), d["to"].as_u64()), (Some(1), Some(2)), "{d}");

    // A viewer-level session cannot act; an unknown device is a 404 in the error class body.
    let (st, e) = s.call("POST", "/api/v1/devices/nope/power", Some(json!({"action": "cycle"})));
    assert_eq!(st, 404, "{e}");
    assert_eq!(e["class"], "not-found");
}
