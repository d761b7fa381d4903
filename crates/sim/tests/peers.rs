//! The sim checked by real third-party clients: the DMTF Redfish Service Validator on every flavor, the
//! DMTF `redfish` Python library and Tacklebox `rf_power_reset.py` doing resets, OpenSSH on a switch.
//! Skips loudly when a peer is missing; fails instead with `OOB_PEERS_REQUIRED=1`.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{eventually, fleet, peers_dir, peers_venv, skip};
use lifeline_sim::control::Client;
use lifeline_sim::{EndpointKind, Fleet, FleetSpec, Phase, PowerCommand, RedfishFlavor, SimOptions};

/// Runs `cmd` off the runtime (the sim must keep serving while the peer talks to it).
async fn run(mut cmd: Command) -> std::process::Output {
    tokio::task::spawn_blocking(move || cmd.output().expect("peer runs")).await.unwrap()
}

/// Parses the validator's summary table: `|  PASS  |  WARN  |  FAIL  | NOT TESTED |` then the numbers.
fn summary(out: &str) -> Option<(u64, u64, u64)> {
    let mut lines = out.lines().skip_while(|l| !l.contains("PASS") || !l.contains("FAIL"));
    lines.next()?;
    let nums: Vec<u64> = lines
        .find(|l| l.starts_with('|') && l.chars().any(|c| c.is_ascii_digit()))?
        .split('|')
        .filter_map(|c| c.trim().parse().ok())
        .collect();
    Some((*nums.first()?, *nums.get(1)?, *nums.get(2)?))
}

#[tokio::test]
async fn dmtf_service_validator_passes_every_flavor() {
    let (Some(venv), Some(peers)) = (peers_venv(), peers_dir()) else {
        return skip("redfish-service-validator (peers venv) or shared/peers schemas");
    };
    let validator = venv.join("bin/rf_service_validator");
    let schemas = peers.join("redfish/schemas/csdl");
    if !validator.exists() || !schemas.is_dir() {
        return skip("rf_service_validator or the CSDL schema bundle");
    }
    let f = fleet(5, SimOptions::for_tests()).await;
    // Events and SEL entries so LogEntry and Event resources are validated too.
    Client::inject(f.control_url(), "gpu-node-03", "gpu-ecc=1").await.unwrap();
    Client::inject(f.control_url(), "gpu-node-05", "rail-down=mlx5_0").await.unwrap();
    let logs = tempfile::tempdir().unwrap();
    for (i, flavor) in RedfishFlavor::ALL.iter().enumerate() {
        let name = format!("gpu-node-0{}", i + 1);
        let ep = f.endpoint(&name, EndpointKind::Redfish).unwrap();
        let mut cmd = Command::new(&validator);
        cmd.args(["-r", &format!("https://{}:{}", ep.address, ep.port)])
            .args(["-u", &ep.username, "-p", &ep.password, "--authtype", "Session"])
            .arg("--schema_directory")
            .arg(&schemas)
            .arg("--logdir")
            .arg(logs.path().join(&name));
        let out = run(cmd).await;
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        let (pass, warn, fail) = summary(&text).unwrap_or_else(|| panic!("{flavor}: no summary in:\n{text}"));
        eprintln!("validator {flavor:<16} PASS {pass:>4}  WARN {warn:>2}  FAIL {fail}");
        assert_eq!(fail, 0, "{flavor}: validator failures:\n{text}");
        assert!(pass > 500, "{flavor}: only {pass} checks passed:\n{text}");
    }
    f.shutdown().await;
}

#[tokio::test]
async fn python_redfish_library_and_tacklebox_reset_through_the_sim() {
    let Some(venv) = peers_venv() else { return skip("peers venv with the redfish library") };
    let f = fleet(2, SimOptions::for_tests()).await;
    let name = "gpu-node-02"; // idrac-like: System.Embedded.1, no PowerCycle
    let ep = f.endpoint(name, EndpointKind::Redfish).unwrap().clone();
    let url = format!("https://{}:{}", ep.address, ep.port);
    let host = f.host(name).unwrap();

    let script = r##"
import sys, redfish
url, user, pw = sys.argv[1:4]
c = redfish.redfish_client(base_url=url, username=user, password=pw, default_prefix="/redfish/v1")
c.login(auth="session")
systems = c.get("/redfish/v1/Systems").dict["Members"]
sys_uri = systems[0]["@odata.id"]
s = c.get(sys_uri).dict
allowed = s["Actions"]["#ComputerSystem.Reset"]["ResetType@Redfish.AllowableValues"]
target = s["Actions"]["#ComputerSystem.Reset"]["target"]
r = c.post(target, body={"ResetType": "PowerCycle"})
print("powercycle", r.status)
r = c.post(target, body={"ResetType": "ForceOff"})
print("forceoff", r.status)
print("state", c.get(sys_uri).dict["PowerState"])
c.logout()
print("allowed", ",".join(allowed))
"##;
    let mut cmd = Command::new(venv.join("bin/python"));
    cmd.args(["-c", script, &url, &ep.username, &ep.password]);
    let out = run(cmd).await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "python redfish failed: {text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("powercycle 400"), "PowerCycle refused on idrac-like: {text}");
    assert!(text.contains("forceoff 204"), "{text}");
    assert!(text.contains("state Off"), "{text}");
    assert!(!text.contains("PowerCycle"), "{text}");
    assert_eq!(f.redfish(name).unwrap().session_count(), 0, "the library logged out");
    assert_eq!(host.phase(), Phase::Off);

    let tool = venv.join("bin/rf_power_reset.py");
    if !tool.exists() {
        return skip("Tacklebox rf_power_reset.py");
    }
    let mut cmd = Command::new(venv.join("bin/python"));
    cmd.arg(&tool).args(["-u", &ep.username, "-p", &ep.password, "-r", &url, "-t", "On"]);
    let out = run(cmd).await;
    assert!(
        out.status.success(),
        "rf_power_reset: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(eventually(10, async || host.phase() == Phase::OsUp).await, "Tacklebox On booted the host");
    host.power(PowerCommand::ForceOff).unwrap();
    f.shutdown().await;
}

#[tokio::test]
async fn openssh_reads_a_switch_config_and_sees_a_config_change() {
    if Command::new("sshpass").arg("-V").output().is_err() {
        return skip("sshpass + OpenSSH client");
    }
    let f = Fleet::start(FleetSpec::generate(1, 2), SimOptions::for_tests()).await.unwrap();
    let ep = f.endpoint("leaf2", EndpointKind::Ssh).unwrap().clone(); // eos
    let ssh = |command: &'static str| common::ssh(&ep, command);
    let before = run(ssh("show running-config")).await;
    assert!(before.status.success(), "{}", String::from_utf8_lossy(&before.stderr));
    let before = String::from_utf8_lossy(&before.stdout).into_owned();
    assert!(before.contains("hostname leaf2"), "{before}");
    Client::inject(f.control_url(), "leaf2", "config-change").await.unwrap();
    let after = String::from_utf8_lossy(&run(ssh("show running-config")).await.stdout).into_owned();
    assert_ne!(before, after, "config-change changed the running config");
    let info = Client::devices(f.control_url()).await.unwrap();
    assert_eq!(info.iter().find(|d| d.name == "leaf2").unwrap().faults, ["config-change"]);
    assert!(Client::inject(f.control_url(), "leaf2", "gpu-ecc=0").await.is_err());
    tokio::time::timeout(Duration::from_secs(10), f.shutdown()).await.unwrap();
}

/// One fault, one power action, seen the same way through IPMI (real ipmitool) and Redfish.
#[tokio::test]
async fn ipmitool_and_redfish_see_the_same_bmc() {
    if Command::new("ipmitool").arg("-V").output().is_err() {
        return skip("ipmitool");
    }
    let f = fleet(2, SimOptions::for_tests()).await;
    let name = "gpu-node-02";
    let ipmi = f.endpoint(name, EndpointKind::Ipmi).unwrap().clone();
    let ipmitool = |args: &[&str]| common::ipmitool(&ipmi, args);
    Client::inject(f.control_url(), name, "gpu-ecc=2").await.unwrap();
    let sel = run(ipmitool(&["sel", "list"])).await;
    let sel = String::from_utf8_lossy(&sel.stdout).into_owned();
    assert!(sel.contains("Uncorrectable ECC"), "ipmitool sel list: {sel}");
    let (base, c) = common::bmc(&f, name);
    let entries: serde_json::Value = c
        .get(format!("{base}/redfish/v1/Managers/iDRAC.Embedded.1/LogServices/Sel/Entries"))
        .basic_auth("admin", Some("password"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(entries["Members"][0]["SensorType"], "Memory");
    assert_eq!(entries["Members"][0]["Id"], "1", "the same record id in both protocols");

    let off = run(ipmitool(&["chassis", "power", "off"])).await;
    assert!(off.status.success(), "{}", String::from_utf8_lossy(&off.stderr));
    let sys: serde_json::Value = c
        .get(format!("{base}/redfish/v1/Systems/System.Embedded.1"))
        .basic_auth("admin", Some("password"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(sys["PowerState"], "Off");
    let status = run(ipmitool(&["chassis", "power", "status"])).await;
    assert!(String::from_utf8_lossy(&status.stdout).contains("Chassis Power is off"));
    f.shutdown().await;
}
