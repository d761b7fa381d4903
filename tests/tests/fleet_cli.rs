//! The operator's BMC verbs against a `lifeline sim` process, over real Redfish and IPMI on loopback.

use lifeline_test_utils::{SimProcess, lifeline_bin, output_json as json, output_text};
use serde_json::Value;

/// Two Redfish nodes and one IPMI node, each on its own loopback address with explicit ports, served by
/// `lifeline sim --port-offset` at the same ports.
fn start_sim() -> SimProcess {
    lifeline_test_utils::three_flavour_sim()
}

fn run(sim: &SimProcess, args: &[&str]) -> std::process::Output {
    sim.lifeline(args)
}

#[test]
fn power_health_sel_and_audit_against_the_simulator() {
    let sim = start_sim();
    let eps: Value = serde_json::from_str(&std::fs::read_to_string(&sim.endpoints).unwrap()).unwrap();
    let _ = output_text;
    assert!(eps.as_array().unwrap().iter().any(|e| e["kind"] == "control"));

    let o = run(&sim, &["power", "status", "all", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    assert_eq!(v.as_array().unwrap().len(), 3);
    assert!(v.as_array().unwrap().iter().all(|r| r["power"] == "on"), "{v}");

    // A destructive verb without --yes and without a terminal does nothing and says so.
    let o = run(&sim, &["power", "off", "n1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--yes"));
    let v = json(&run(&sim, &["power", "status", "n1", "--json"]));
    assert_eq!(v[0]["power"], "on");

    // A fault injected through the simulator's control API shows in health and SEL.
    sim.fault("n2", "gpu-ecc=3");
    let o = run(&sim, &["health", "n2", "--json"]);
    assert_eq!(o.status.code(), Some(1), "critical health exits 1");
    assert_eq!(json(&o)[0]["health"], "critical");
    let v = json(&run(&sim, &["sel", "n2", "--json"]));
    let msgs: Vec<&str> =
        v[0]["entries"].as_array().unwrap().iter().filter_map(|e| e["message"].as_str()).collect();
    assert!(msgs.iter().any(|m| m.contains("GPU3") && m.contains("ECC")), "{msgs:?}");

    // Confirmed power cycles over Redfish and IPMI, each audited as intent + outcome.
    for node in ["n1", "n3"] {
        let o = run(&sim, &["power", "cycle", node, "--yes", "--json"]);
        assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
        let r = &json(&o)[0];
        assert_eq!(r["confirmed"], true, "{r}");
        assert_eq!(r["action_sent"], true);
    }
    let v = json(&run(&sim, &["audit", "log", "--json"]));
    let rows: Vec<(String, String, String)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["action"].as_str().unwrap().into(),
                r["target"].as_str().unwrap().into(),
                r["outcome"].as_str().unwrap().into(),
            )
        })
        .collect();
    for node in ["n1", "n3"] {
        assert!(rows.contains(&("power.cycle".into(), node.into(), "started".into())), "{rows:?}");
        assert!(rows.contains(&("power.cycle".into(), node.into(), "ok".into())), "{rows:?}");
    }

    // The sweep covers the fleet and reports the sick node.
    let o = run(&sim, &["sweep", "--json"]);
    let v = json(&o);
    let n2 = v.as_array().unwrap().iter().find(|r| r["name"] == "n2").unwrap();
    assert_eq!(n2["health"], "critical");
    assert_eq!(v.as_array().unwrap().len(), 3);
}

#[test]
fn sim_stops_cleanly_on_sigterm() {
    let mut sim = start_sim();
    let _ = std::process::Command::new("kill").args(["-TERM", &sim.pid().to_string()]).status();
    let status = sim.wait_exit(std::time::Duration::from_secs(20));
    assert_eq!(status.code(), Some(0));
}

#[test]
fn unknown_targets_and_missing_passwords_are_usage_errors() {
    let sim = start_sim();
    let o = run(&sim, &["power", "status", "no-such-node"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no-such-node"));
    // Credentials are resolved before any BMC is contacted.
    let o = std::process::Command::new(lifeline_bin())
        .args(["power", "status", "all", "--inventory"])
        .arg(&sim.inventory)
        .arg("--data-dir")
        .arg(&sim.data)
        .env_remove("LIFELINE_BMC_PASSWORD")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("LIFELINE_BMC_PASSWORD"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn ad_hoc_bmc_urls_and_the_hygiene_audit() {
    let sim = start_sim();
    let eps: Value = serde_json::from_str(&std::fs::read_to_string(&sim.endpoints).unwrap()).unwrap();
    let rf = eps.as_array().unwrap().iter().find(|e| e["kind"] == "redfish" && e["name"] == "n1").unwrap();
    // A BMC that is not in the inventory, its password from the environment (never an argument).
    let url = format!("redfish://admin@{}:{}", rf["address"].as_str().unwrap(), rf["port"]);
    let o = std::process::Command::new(lifeline_bin())
        .args(["power", "status", "--json", "--data-dir"])
        .arg(&sim.data)
        .args(["--bmc", &url])
        .env("LIFELINE_BMC_PASSWORD", "s3cret-pw")
        .env_remove("LIFELINE_INVENTORY")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert_eq!(json(&o)[0]["power"], "on");
    // Without a password and without a terminal: a usage error, nothing contacted.
    let o = std::process::Command::new(lifeline_bin())
        .args(["power", "status", "--bmc", &url])
        .env_remove("LIFELINE_BMC_PASSWORD")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));

    // Hygiene: default passwords are refused here (bounded attempts), but the simulator's self-signed
    // certificates are reported; `--bmc` URLs are refused for this verb.
    let o = run(&sim, &["audit", "bmc", "--json", "--max-attempts", "2"]);
    assert_eq!(o.status.code(), Some(1), "findings exit 1: {}", output_text(&o));
    let rows = json(&o);
    for r in rows.as_array().unwrap() {
        assert!(r["accepted_defaults"].as_array().unwrap().is_empty(), "{r}");
        assert!(r["failed_attempts"].as_u64().unwrap() <= 2, "{r}");
    }
    let text = rows.to_string().to_lowercase();
    assert!(text.contains("self-signed"), "{text}");
    let o = run(&sim, &["audit", "bmc", "--bmc", &url]);
    assert_eq!(o.status.code(), Some(2));
}
