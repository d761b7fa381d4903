//! Faults the runbooks need, seen through real clients: a PFC pause storm in each platform's PFC
//! counters (OpenSSH), a switch management port that stops answering SSH while its BMC still answers
//! IPMI (and a power cycle through that BMC brings it back), and a BMC whose Redfish hangs while IPMI
//! answers (and an IPMI BMC reset brings it back).

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::skip;
use lifeline_sim::control::{ActionKind, Client};
use lifeline_sim::{EndpointKind, Fleet, FleetSpec, SimOptions};

async fn run(mut cmd: Command) -> std::process::Output {
    tokio::task::spawn_blocking(move || cmd.output().expect("peer runs")).await.unwrap()
}

fn have(tools: &[&str]) -> bool {
    let ok = tools.iter().all(|t| Command::new(t).arg("-V").output().is_ok());
    if !ok {
        skip(&tools.join(" + "));
    }
    ok
}

/// The number in the row of `port` at `col` (whitespace-separated, commas removed).
fn cell(text: &str, port: &str, col: usize) -> u64 {
    let row = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(port))
        .unwrap_or_else(|| panic!("no row for {port} in:\n{text}"));
    row.split_whitespace().nth(col).unwrap().replace(',', "").parse().unwrap()
}

#[tokio::test]
async fn pfc_storm_shows_in_every_platforms_counters_and_clears() {
    if !have(&["sshpass"]) {
        return;
    }
    let f = Fleet::start(FleetSpec::generate(1, 4), SimOptions::for_tests()).await.unwrap();
    // (switch, storm port, command, port spelling in the output, column of RX pause frames)
    let cases = [
        ("leaf1", "Ethernet16", "show pfc counters", "Ethernet16", 4), // sonic: PFC3 of the Rx table
        ("leaf2", "Ethernet3/1", "show priority-flow-control counters", "Et3/1", 1), // eos
        ("leaf3", "swp3", "nv show interface swp3 counters qos pfc-stats", "3", 1), // cumulus: priority 3
        ("spine1", "Ethernet1/3", "show interface priority-flow-control", "Ethernet1/3", 4), // ios/nx-os
    ];
    for (sw, port, command, row, col) in cases {
        let ep = f.endpoint(sw, EndpointKind::Ssh).unwrap().clone();
        let read = async || {
            let out = run(common::ssh(&ep, command)).await;
            assert!(out.status.success(), "{sw} `{command}`: {}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let calm = cell(&read().await, row, col);
        assert!(calm < 1000, "{sw}: {calm} pause frames before the storm");
        Client::inject(f.control_url(), sw, &format!("pfc-storm={port}")).await.unwrap();
        let first = cell(&read().await, row, col);
        tokio::time::sleep(Duration::from_millis(50)).await;
        let text = read().await;
        let second = cell(&text, row, col);
        assert!(first > 48_000_000 && second > first, "{sw}: {first} -> {second}\n{text}");
        Client::clear(f.control_url(), sw).await.unwrap();
        assert!(cell(&read().await, row, col) < 1000, "{sw}: clear ends the storm");
    }
    tokio::time::timeout(Duration::from_secs(10), f.shutdown()).await.unwrap();
}

/// OpenSSH's `show version` on a switch, bounded: a hung port accepts TCP but never sends a banner.
fn bounded_ssh(ep: &lifeline_sim::Endpoint) -> Command {
    let c = common::ssh(ep, "show version");
    let mut t = Command::new("timeout");
    t.arg("4").arg(c.get_program()).args(c.get_args());
    t
}

#[tokio::test]
async fn mgmt_down_switch_keeps_its_bmc_and_a_power_cycle_brings_ssh_back() {
    if !have(&["sshpass", "ipmitool"]) {
        return;
    }
    let f = Fleet::start(FleetSpec::generate(1, 1), SimOptions::for_tests()).await.unwrap();
    let ssh_ep = f.endpoint("leaf1", EndpointKind::Ssh).unwrap().clone();
    let ipmi_ep = f.endpoint("leaf1", EndpointKind::Ipmi).unwrap().clone();
    let ssh = || bounded_ssh(&ssh_ep);
    assert!(run(ssh()).await.status.success(), "ssh works before");
    let info = Client::inject(f.control_url(), "leaf1", "mgmt-down").await.unwrap();
    assert_eq!(info.faults, ["mgmt-down"]);
    let started = Instant::now();
    let out = run(ssh()).await;
    assert!(!out.status.success(), "ssh must not get through a dead management port");
    assert!(started.elapsed() >= Duration::from_secs(2), "it hangs rather than being refused");
    let status = run(common::ipmitool(&ipmi_ep, &["chassis", "power", "status"])).await;
    assert!(String::from_utf8_lossy(&status.stdout).contains("Chassis Power is on"), "the BMC still answers");

    let cycle = run(common::ipmitool(&ipmi_ep, &["chassis", "power", "cycle"])).await;
    assert!(cycle.status.success(), "{}", String::from_utf8_lossy(&cycle.stderr));
    assert!(
        common::eventually(10, async || Client::devices(f.control_url())
            .await
            .unwrap()
            .iter()
            .any(|d| d.name == "leaf1" && d.faults.is_empty()))
        .await,
        "the power cycle cleared mgmt-down"
    );
    // The cycle rebooted the switch: its management plane answers once its NOS is up again.
    assert!(common::eventually(30, async || run(ssh()).await.status.success()).await, "ssh works again");
    let log = Client::actions(f.control_url(), "leaf1").await.unwrap();
    assert_eq!(log.iter().map(|a| a.action).collect::<Vec<_>>(), [ActionKind::PowerCycle]);
    tokio::time::timeout(Duration::from_secs(10), f.shutdown()).await.unwrap();
}

#[tokio::test]
async fn redfish_down_leaves_ipmi_and_an_ipmi_bmc_reset_brings_redfish_back() {
    if !have(&["ipmitool", "curl"]) {
        return;
    }
    let f = common::fleet(1, SimOptions::for_tests()).await;
    let name = "gpu-node-01";
    let rf = f.endpoint(name, EndpointKind::Redfish).unwrap().clone();
    let ipmi = f.endpoint(name, EndpointKind::Ipmi).unwrap().clone();
    let curl = || {
        let mut c = Command::new("curl");
        c.args(["-sk", "-m", "2", "-o", "/dev/null", "-w", "%{http_code}", "-u", "admin:password"])
            .arg(format!("https://{}:{}/redfish/v1/Systems", rf.address, rf.port));
        c
    };
    assert_eq!(String::from_utf8_lossy(&run(curl()).await.stdout), "200");
    Client::inject(f.control_url(), name, "redfish-down").await.unwrap();
    let out = run(curl()).await;
    assert_eq!(out.status.code(), Some(28), "curl times out: {}", String::from_utf8_lossy(&out.stdout));
    let status = run(common::ipmitool(&ipmi, &["chassis", "power", "status"])).await;
    assert!(String::from_utf8_lossy(&status.stdout).contains("Chassis Power is on"), "IPMI still answers");

    let _ = run(common::ipmitool(&ipmi, &["mc", "reset", "cold"])).await;
    // The BMC restarts: silent on both protocols for a few seconds, then Redfish answers again.
    let t0 = std::time::Instant::now();
    let mut code = String::new();
    while t0.elapsed() < Duration::from_secs(20) {
        code = String::from_utf8_lossy(&run(curl()).await.stdout).into_owned();
        if code == "200" {
            break;
        }
    }
    assert_eq!(code, "200", "a BMC reset restarts Redfish");
    assert!(t0.elapsed() >= Duration::from_secs(1), "not at once: the BMC was restarting");
    assert!(Client::devices(f.control_url()).await.unwrap()[0].faults.is_empty());

    // `clear` works too, and the switch-only fault is refused on a server.
    Client::inject(f.control_url(), name, "redfish-down").await.unwrap();
    Client::clear(f.control_url(), name).await.unwrap();
    assert_eq!(String::from_utf8_lossy(&run(curl()).await.stdout), "200");
    assert!(Client::inject(f.control_url(), name, "mgmt-down").await.is_err());
    f.shutdown().await;
}

/// A switch looping in its boot has no management plane: OpenSSH gets no banner while its BMC still
/// answers, whatever a port probe of the old simulator said; once the loop ends (here: `clear`, as a
/// rescue does) and the NOS is up, SSH answers again. `BootProgress` on a server follows the boot phase.
#[tokio::test]
async fn a_boot_looping_switch_serves_no_ssh_until_its_nos_runs() {
    if !have(&["sshpass", "ipmitool"]) {
        return;
    }
    let f = Fleet::start(FleetSpec::generate(1, 1), SimOptions::for_tests()).await.unwrap();
    let ssh_ep = f.endpoint("leaf1", EndpointKind::Ssh).unwrap().clone();
    let ipmi_ep = f.endpoint("leaf1", EndpointKind::Ipmi).unwrap().clone();
    let ssh = || bounded_ssh(&ssh_ep);
    assert!(run(ssh()).await.status.success(), "ssh works before");
    let info = Client::inject(f.control_url(), "leaf1", "boot-loop").await.unwrap();
    assert_eq!(info.faults, ["boot-loop"]);
    assert!(
        common::eventually(10, async || Client::devices(f.control_url())
            .await
            .unwrap()
            .iter()
            .any(|d| d.name == "leaf1" && d.phase != "os-up"))
        .await,
        "the switch crashes into its loop"
    );
    let out = run(ssh()).await;
    assert!(!out.status.success(), "a looping switch must not answer SSH on its management port");
    let status = run(common::ipmitool(&ipmi_ep, &["chassis", "power", "status"])).await;
    assert!(String::from_utf8_lossy(&status.stdout).contains("Chassis Power is on"), "the BMC still answers");
    Client::clear(f.control_url(), "leaf1").await.unwrap();
    assert!(
        common::eventually(30, async || run(ssh()).await.status.success()).await,
        "the NOS boots once the loop ends, and SSH answers"
    );
    tokio::time::timeout(Duration::from_secs(10), f.shutdown()).await.unwrap();
}
