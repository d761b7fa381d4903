//! Cross-process exclusion through the store: many `lifeline` processes asking for the same action on one
//! target execute it once. The simulator's own action log (what the BMC or switch was made to do) is the
//! witness, not our audit log; against real `ipmi_sim`, its chassis log is.

use std::net::Ipv4Addr;
use std::process::Output;

use lifeline_test_utils::{IpmiSims, SimProcess, output_json as json, output_text, unique_loopback};
use serde_json::Value;

const OFFSET: u16 = 23000;

fn inventory(ips: &[Ipv4Addr]) -> String {
    let mut t = String::from(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[defaults.management]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_SWITCH_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n",
    );
    t.push_str(&format!(
        "\n[[device]]\nname = \"rf\"\nrole = \"gpu-node\"\nrack = \"r\"\n\
         bmc = {{ address = \"{}\", port = {}, protocol = \"redfish\", flavor = \"generic\" }}\n",
        ips[0],
        443 + OFFSET
    ));
    t.push_str(&format!(
        "\n[[device]]\nname = \"ip\"\nrole = \"gpu-node\"\nrack = \"r\"\n\
         bmc = {{ address = \"{}\", port = {}, protocol = \"ipmi\", flavor = \"openbmc-like\" }}\n",
        ips[1],
        623 + OFFSET
    ));
    t.push_str(&format!(
        "\n[[device]]\nname = \"leaf\"\nrole = \"switch\"\nrack = \"r\"\nfabric = \"backend\"\ntier = \"leaf\"\n\
         platform = \"sonic\"\nmanagement = {{ address = \"{}\", port = {} }}\n",
        ips[2],
        22 + OFFSET
    ));
    t
}

fn start() -> SimProcess {
    let ips = [unique_loopback(), unique_loopback(), unique_loopback()];
    SimProcess::start(
        &inventory(&ips),
        OFFSET,
        &[("LIFELINE_BMC_PASSWORD", "s3cret-pw"), ("LIFELINE_SWITCH_PASSWORD", "sw-pass")],
    )
}

fn run_all(sim: &SimProcess, n: usize, args: &[&str]) -> Vec<Output> {
    let children: Vec<_> = (0..n).map(|_| sim.spawn_lifeline(args)).collect();
    children.into_iter().map(|c| c.wait_with_output().unwrap()).collect()
}

fn executed(sim: &SimProcess, device: &str, action: &str) -> usize {
    sim.actions(device).iter().filter(|a| a["action"] == action && a["noop"] != true).count()
}

#[test]
fn twenty_concurrent_power_cycles_execute_once_per_bmc() {
    let sim = start();
    // Slow BMCs keep the winner's cycle (and so its hold on the target) going while the other 19 processes
    // start: at full speed a Redfish cycle took 0.3 s, and on a loaded machine (four tests at once beside
    // fuzzers) a process that started after it ended made a second, separate request and cycled again, as
    // it should. The test is about requests that overlap. (At 100 ms per reply the off phase is too short
    // to see, so the Redfish cycle is confirmed after ~10 s by the BMC's reset record instead.)
    sim.fault("rf", "bmc-slow=100");
    sim.fault("ip", "bmc-slow=100");
    for (node, witness) in [("rf", "power-cycle"), ("ip", "power-off")] {
        let outs = run_all(&sim, 20, &["power", "cycle", node, "--yes", "--json"]);
        let ok: Vec<&Output> = outs.iter().filter(|o| o.status.code() == Some(0)).collect();
        // Each refused process says who holds the target and what it is doing, with the conflict class.
        let busy = outs
            .iter()
            .filter(|o| o.status.code() == Some(1))
            .filter(|o| {
                let row = &json(o)[0];
                row["class"] == "conflict"
                    && row["error"]
                        .as_str()
                        .is_some_and(|e| e.contains("is busy") && e.contains("running power.cycle"))
            })
            .count();
        assert_eq!(
            ok.len(),
            1,
            "{node}: exactly one process acts: {}",
            outs.iter().map(output_text).collect::<String>()
        );
        assert_eq!(
            busy,
            19,
            "{node}: the others report the conflict naming the holder: {}",
            outs.iter().filter(|o| !o.status.success()).map(output_text).next().unwrap_or_default()
        );
        assert_eq!(json(ok[0])[0]["confirmed"], true, "{}", output_text(ok[0]));
        assert_eq!(executed(&sim, node, witness), 1, "{node}: {:?}", sim.actions(node));
    }
    // The IPMI cycle is one off and one on, each executed once.
    assert_eq!(executed(&sim, "ip", "power-on"), 1, "{:?}", sim.actions("ip"));
    sim.fault("rf", "clear");
    let msg = outs_stderr(&run_all(&sim, 1, &["power", "cycle", "rf", "--yes"]));
    assert!(msg.is_empty(), "{msg}");
}

fn outs_stderr(outs: &[Output]) -> String {
    outs.iter().filter(|o| !o.status.success()).map(output_text).collect()
}

#[test]
fn waiting_requests_find_the_work_done() {
    let sim = start();
    let outs = run_all(&sim, 10, &["power", "cycle", "rf", "--yes", "--json", "--wait", "2m"]);
    assert!(outs.iter().all(|o| o.status.success()), "{}", outs_stderr(&outs));
    let rows: Vec<Value> = outs.iter().map(|o| json(o)[0].clone()).collect();
    let fresh = rows.iter().filter(|r| r.get("coalesced_with").is_none()).count();
    // Every execution the BMC saw is one request's own; the rest were answered by it.
    assert_eq!(executed(&sim, "rf", "power-cycle"), fresh, "{rows:?}");
    assert_eq!(fresh, 1, "processes that waited for the holder's cycle must not cycle again: {rows:?}");
}

#[test]
fn a_replayed_request_id_returns_the_first_outcome() {
    let sim = start();
    let first = sim.lifeline(&["power", "cycle", "rf", "--yes", "--json", "--request-id", "op-42"]);
    assert!(first.status.success(), "{}", output_text(&first));
    let again = sim.lifeline(&["power", "cycle", "rf", "--yes", "--json", "--request-id", "op-42"]);
    assert!(again.status.success(), "{}", output_text(&again));
    assert_eq!(json(&again)[0]["replay_of"], "op-42/rf");
    assert_eq!(json(&again)[0]["confirmed"], true);
    assert_eq!(executed(&sim, "rf", "power-cycle"), 1, "{:?}", sim.actions("rf"));
    // The same id for another action is a usage error, not a silent replay.
    let other = sim.lifeline(&["power", "off", "rf", "--yes", "--request-id", "op-42"]);
    assert_eq!(other.status.code(), Some(1), "{}", output_text(&other));
    assert!(output_text(&other).contains("a request id names one action"), "{}", output_text(&other));
}

#[test]
fn eight_concurrent_backups_of_a_fresh_data_dir_store_one_version() {
    let sim = start();
    let outs = run_all(&sim, 8, &["backup", "run", "leaf", "--json"]);
    let text: String = outs.iter().map(output_text).collect();
    assert!(!text.contains("already exists"), "concurrent first use migrated twice: {text}");
    for o in &outs {
        let code = o.status.code();
        assert!(
            code == Some(0) || (code == Some(1) && output_text(o).contains("is busy")),
            "{}",
            output_text(o)
        );
    }
    let h = json(&sim.lifeline(&["backup", "history", "leaf", "--json"]));
    assert_eq!(h.as_array().unwrap().len(), 1, "{h}");
    assert_eq!(h[0]["raw_sealed"], true, "the default keeps the sealed raw copy: {h}");
}

/// Real OpenIPMI `ipmi_sim`: twenty processes cycling one BMC, its chassis log shows one off and one on.
#[test]
fn twenty_concurrent_cycles_against_real_ipmi_sim() {
    let Some(bmcs) = IpmiSims::start(1) else { return };
    let dir = tempfile::tempdir().unwrap();
    let url = format!("ipmi://admin@{}", bmcs.addr(0));
    let children: Vec<_> = (0..20)
        .map(|_| {
            std::process::Command::new(lifeline_test_utils::lifeline_bin())
                .args(["power", "cycle", "--bmc", &url, "--yes", "--json", "--data-dir"])
                .arg(dir.path())
                .env("LIFELINE_BMC_PASSWORD", "password")
                .env_remove("LIFELINE_CONFIG")
                .env_remove("LIFELINE_DATABASE_URL")
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<Output> = children.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
    let ok = outs.iter().filter(|o| o.status.success()).count();
    assert_eq!(ok, 1, "{}", outs_stderr(&outs));
    let log = bmcs.chassis_log(0);
    let count = |s: &str| log.iter().filter(|l| l.contains(s)).count();
    assert_eq!((count("power 0"), count("power 1")), (1, 1), "{log:?}");
}

/// `power off all` on a terminal lists what will be hit by role and wants the count typed: a stray `y` or
/// a wrong number does nothing.
#[test]
fn a_wide_power_action_wants_the_count_typed() {
    let sim = start();
    let cmd = format!(
        "{} power off all --inventory {} --data-dir {}",
        lifeline_test_utils::lifeline_bin().display(),
        sim.inventory.display(),
        sim.data.display()
    );
    for answer in ["y\n", "3\n"] {
        let mut child = std::process::Command::new("script")
            .args(["-qec", &cmd, "/dev/null"])
            .env("LIFELINE_BMC_PASSWORD", "s3cret-pw")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(800));
        {
            use std::io::Write;
            let stdin = child.stdin.as_mut().unwrap();
            stdin.write_all(answer.as_bytes()).unwrap();
            stdin.flush().unwrap();
        }
        let out = child.wait_with_output().unwrap();
        let text = output_text(&out);
        assert!(text.contains("gpu-node (2): rf, ip") && text.contains("type 2 to go ahead"), "{text}");
        assert!(text.contains("not confirmed; nothing was done"), "{answer:?}: {text}");
    }
    assert!(sim.actions("rf").is_empty() && sim.actions("ip").is_empty(), "nothing may have been sent");
}

/// A retry with the same request id while the first is still at work is told to wait for it with the
/// same id — never to use a new one, which would cycle the node a second time. Once the first finished,
/// the retry replays its outcome. One cycle in the BMC's own log.
#[test]
fn a_retry_of_a_request_in_flight_waits_for_it_and_then_replays_it() {
    let sim = start();
    sim.fault("rf", "bmc-slow=1500");
    let args = ["power", "cycle", "rf", "--yes", "--json", "--request-id", "retry-1"];
    let first = sim.spawn_lifeline(&args);
    std::thread::sleep(std::time::Duration::from_millis(800));
    let o = sim.lifeline(&args);
    let t = output_text(&o);
    assert!(t.contains("still in progress") && t.contains("retry with the same request id"), "{t}");
    assert!(!t.contains("use a new request id"), "{t}");
    let first = first.wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(0), "{}", output_text(&first));
    let again = sim.lifeline(&args);
    assert_eq!(again.status.code(), Some(0), "{}", output_text(&again));
    assert_eq!(executed(&sim, "rf", "power-cycle"), 1, "{:?}", sim.actions("rf"));
}
