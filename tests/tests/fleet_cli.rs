//! The operator's BMC verbs against a `lifeline sim` process, over real Redfish and IPMI on loopback.

use std::io::Write;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use lifeline_test_utils::{lifeline_bin, unique_loopback, wait_until};
use serde_json::Value;

struct Sim {
    child: Child,
    endpoints: PathBuf,
    inventory: PathBuf,
    data: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An inventory of two Redfish nodes and one IPMI node, each on its own loopback address with explicit
/// ports, served by `lifeline sim --port-offset` at the same ports.
fn write_inventory(dir: &Path, ips: &[Ipv4Addr], offset: u16) -> PathBuf {
    let mut t = String::from(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n",
    );
    for (i, ip) in ips.iter().enumerate() {
        let (proto, port, flavor) = match i {
            0 => ("redfish", 443 + offset, "generic"),
            1 => ("redfish", 443 + offset, "idrac-like"),
            _ => ("ipmi", 623 + offset, "openbmc-like"),
        };
        t.push_str(&format!(
            "\n[[device]]\nname = \"n{}\"\nrole = \"gpu-node\"\nrack = \"r\"\n\
             bmc = {{ address = \"{ip}\", port = {port}, protocol = \"{proto}\", flavor = \"{flavor}\" }}\n\
             gpus = {{ count = 8, model = \"NVIDIA H100 80GB HBM3\" }}\n",
            i + 1
        ));
    }
    let p = dir.join("inv.toml");
    std::fs::write(&p, t).unwrap();
    p
}

fn start_sim() -> Sim {
    let dir = tempfile::tempdir().unwrap();
    let ips = [unique_loopback(), unique_loopback(), unique_loopback()];
    let offset = 20000;
    let inventory = write_inventory(dir.path(), &ips, offset);
    let endpoints = dir.path().join("endpoints.json");
    let child = Command::new(lifeline_bin())
        .args(["sim", "--inventory"])
        .arg(&inventory)
        .args(["--port-offset", &offset.to_string(), "--time-scale", "0.02", "--endpoints-json"])
        .arg(&endpoints)
        .env("LIFELINE_BMC_PASSWORD", "s3cret-pw")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start lifeline sim");
    wait_until("sim endpoints", Duration::from_secs(30), || endpoints.exists().then_some(()));
    let data = dir.path().join("data");
    Sim { child, endpoints, inventory, data, _dir: dir }
}

fn run(sim: &Sim, args: &[&str]) -> Output {
    Command::new(lifeline_bin())
        .args(args)
        .arg("--inventory")
        .arg(&sim.inventory)
        .arg("--data-dir")
        .arg(&sim.data)
        .env("LIFELINE_BMC_PASSWORD", "s3cret-pw")
        .env_remove("LIFELINE_DATABASE_URL")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
    })
}

#[test]
fn power_health_sel_and_audit_against_the_simulator() {
    let sim = start_sim();
    let eps: Value = serde_json::from_str(&std::fs::read_to_string(&sim.endpoints).unwrap()).unwrap();
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
    let o = run(&sim, &["sim", "fault", "--endpoints", sim.endpoints.to_str().unwrap(), "n2", "gpu-ecc=3"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
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
    let pid = nix_pid(sim.child.id());
    let _ = Command::new("kill").args(["-TERM", &pid]).status();
    let status = wait_until("sim exit", Duration::from_secs(20), || sim.child.try_wait().ok().flatten());
    assert_eq!(status.code(), Some(0));
}

fn nix_pid(id: u32) -> String {
    id.to_string()
}

#[test]
fn unknown_targets_and_missing_passwords_are_usage_errors() {
    let sim = start_sim();
    let o = run(&sim, &["power", "status", "no-such-node"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no-such-node"));
    // Credentials are resolved before any BMC is contacted.
    let o = Command::new(lifeline_bin())
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
    let _ = std::io::stderr().flush();
}
