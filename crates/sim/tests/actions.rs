//! The control API's action log (`GET /devices/{name}/actions`), read after real clients acted: ipmitool
//! (chassis control, SEL clear, BMC reset), curl (Redfish reset with Basic auth), OpenSSH (a SONiC
//! `config reload`) and the control API itself. Each execution is one entry, in order; a no-op is marked;
//! a refused command is absent.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{eventually, skip};
use lifeline_sim::control::{Action, ActionKind, Client, Protocol};
use lifeline_sim::{EndpointKind, Fleet, FleetSpec, Phase, SimOptions};

async fn run(mut cmd: Command) -> std::process::Output {
    tokio::task::spawn_blocking(move || cmd.output().expect("peer runs")).await.unwrap()
}

fn summary(log: &[Action]) -> Vec<(Protocol, ActionKind, bool)> {
    log.iter().map(|a| (a.protocol, a.action, a.noop)).collect()
}

#[tokio::test]
async fn ipmitool_curl_and_control_actions_are_logged_once_each_in_order() {
    if Command::new("ipmitool").arg("-V").output().is_err()
        || Command::new("curl").arg("-V").output().is_err()
    {
        return skip("ipmitool and curl");
    }
    let f = Fleet::start(FleetSpec::generate(1, 0), SimOptions::for_tests()).await.unwrap();
    let name = "gpu-node-01"; // generic flavor: PowerCycle offered
    let host = f.host(name).unwrap();
    let url = f.control_url().to_owned();
    assert!(Client::actions(&url, name).await.unwrap().is_empty(), "nothing executed yet");

    let ipmi = f.endpoint(name, EndpointKind::Ipmi).unwrap().clone();
    let ipmitool = |args: &[&str]| common::ipmitool(&ipmi, args);
    let out = run(ipmitool(&["chassis", "power", "cycle"])).await;
    assert!(out.status.success(), "ipmitool cycle: {}", String::from_utf8_lossy(&out.stderr));
    assert!(eventually(10, async || host.phase() == Phase::OsUp).await, "cycled host boots");
    for args in [
        &["chassis", "power", "on"][..],
        &["chassis", "power", "off"],
        &["chassis", "power", "off"],
        &["sel", "clear"],
    ] {
        let out = run(ipmitool(args)).await;
        assert!(out.status.success(), "ipmitool {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    // Refused while off: not an execution.
    let _ = run(ipmitool(&["chassis", "power", "reset"])).await;

    let ep = f.endpoint(name, EndpointKind::Redfish).unwrap().clone();
    let reset = |rt: &str| {
        let mut cmd = Command::new("curl");
        cmd.args(["-sk", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}", "-u"])
            .arg(format!("{}:{}", ep.username, ep.password))
            .args(["-H", "Content-Type: application/json", "-d"])
            .arg(format!("{{\"ResetType\":\"{rt}\"}}"))
            .arg(format!(
                "https://{}:{}/redfish/v1/Systems/Self/Actions/ComputerSystem.Reset",
                ep.address, ep.port
            ));
        cmd
    };
    let code = |o: std::process::Output| String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(code(run(reset("PowerCycle")).await), "409", "PowerCycle while off is refused");
    assert_eq!(code(run(reset("On")).await), "204");
    assert_eq!(code(run(reset("PowerCycle")).await), "204");
    assert!(eventually(10, async || host.phase() == Phase::OsUp).await, "cycled host boots");
    Client::power(&url, name, "off").await.unwrap();

    let log = Client::actions(&url, name).await.unwrap();
    use ActionKind::*;
    use Protocol::*;
    assert_eq!(
        summary(&log),
        [
            (Ipmi, PowerCycle, false),
            (Ipmi, PowerOn, true),
            (Ipmi, PowerOff, false),
            (Ipmi, PowerOff, true),
            (Ipmi, SelClear, false),
            (Redfish, PowerOn, false),
            (Redfish, PowerCycle, false),
            (Control, PowerOff, false),
        ],
        "{log:#?}"
    );
    assert_eq!(log.iter().map(|a| a.seq).collect::<Vec<_>>(), (1..=8).collect::<Vec<_>>());
    assert!(log.windows(2).all(|w| w[0].time <= w[1].time));
    assert!(log[0].origin.starts_with("admin@127.0.0.1:"), "ipmi origin: {}", log[0].origin);
    assert!(log[5].origin.starts_with("admin@127.0.0.1:"), "redfish origin: {}", log[5].origin);
    assert!(log[7].origin.starts_with("127.0.0.1:"), "control origin: {}", log[7].origin);

    // The raw JSON shape, as other processes read it.
    let mut curl = Command::new("curl");
    curl.args(["-s", "-m", "10", &format!("{url}/devices/{name}/actions")]);
    let raw = run(curl).await;
    let v: serde_json::Value = serde_json::from_slice(&raw.stdout).unwrap();
    let first = v[0].as_object().unwrap();
    let mut keys: Vec<&str> = first.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["action", "noop", "origin", "protocol", "seq", "time"]);
    assert_eq!(v[0]["action"], "power-cycle");
    assert_eq!(v[0]["protocol"], "ipmi");
    assert!(chrono::DateTime::parse_from_rfc3339(v[0]["time"].as_str().unwrap()).is_ok());

    // A BMC reset is an action too (the session goes with it, so ipmitool may complain on close).
    let _ = run(ipmitool(&["mc", "reset", "cold"])).await;
    let log = Client::actions(&url, name).await.unwrap();
    assert_eq!(log.last().map(|a| (a.protocol, a.action)), Some((Ipmi, BmcReset)), "{log:#?}");
    assert_eq!(log.len(), 9);
    assert!(matches!(
        Client::actions(&url, "no-such-node").await,
        Err(lifeline_sim::control::ControlError::Refused { status: 404, .. })
    ));
    tokio::time::timeout(Duration::from_secs(10), f.shutdown()).await.unwrap();
}

#[tokio::test]
async fn openssh_config_reload_on_a_switch_is_logged() {
    if Command::new("sshpass").arg("-V").output().is_err() {
        return skip("sshpass + OpenSSH client");
    }
    let f = Fleet::start(FleetSpec::generate(1, 1), SimOptions::for_tests()).await.unwrap();
    let ep = f.endpoint("leaf1", EndpointKind::Ssh).unwrap().clone(); // sonic
    let cmd = common::ssh(&ep, "sudo config reload -y");
    let out = run(cmd).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let log = Client::actions(f.control_url(), "leaf1").await.unwrap();
    assert_eq!(summary(&log), [(Protocol::Ssh, ActionKind::ConfigReload, false)], "{log:#?}");
    assert!(log[0].origin.starts_with(&format!("{}@127.0.0.1:", ep.username)), "{}", log[0].origin);
    tokio::time::timeout(Duration::from_secs(10), f.shutdown()).await.unwrap();
}
