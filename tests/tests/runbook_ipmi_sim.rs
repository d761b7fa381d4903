//! A runbook's power steps against real OpenIPMI `ipmi_sim` (not our simulator): one cycle step is one
//! off and one on in ipmi_sim's own chassis log, also when the run is killed with SIGKILL while it acts and
//! resumed.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use lifeline_test_utils::{IpmiSims, lifeline_bin, output_json as json, output_text as text};

const RUNBOOK: &str = r#"# ipmi-power
name = "ipmi-power"
description = "cycle, wait for power on"
targets = ["gpu-node"]
fault = "test"
touches = "power"
never-touches = "schedulers"
worst-case = "test"

[[step]]
name = "cycle"
kind = "power"
action = "cycle"

[[verify]]
name = "power-on"
kind = "wait-for"
power = "on"
interval = "200ms"
timeout = "1m"
"#;

fn lifeline(dir: &std::path::Path, args: &[&str]) -> Command {
    let mut c = Command::new(lifeline_bin());
    c.args(args)
        .arg("--inventory")
        .arg(dir.join("inventory.toml"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .env("LIFELINE_RUNBOOKS", dir)
        .env("LIFELINE_BMC_PASSWORD", "password")
        .env_remove("LIFELINE_CONFIG")
        .env_remove("LIFELINE_DATABASE_URL")
        .stdin(Stdio::null());
    c
}

fn out(c: &mut Command) -> Output {
    c.output().unwrap()
}

#[test]
fn power_steps_against_real_ipmi_sim_act_once_even_across_a_kill() {
    let Some(bmcs) = IpmiSims::start(1) else { return };
    let dir = tempfile::tempdir().unwrap();
    let a = bmcs.addr(0);
    std::fs::write(
        dir.path().join("inventory.toml"),
        format!(
            "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
             credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n\n\
             [[device]]\nname = \"n1\"\nrole = \"gpu-node\"\nrack = \"r\"\n\
             bmc = {{ address = \"{}\", port = {}, protocol = \"ipmi\" }}\n",
            a.ip(),
            a.port()
        ),
    )
    .unwrap();
    std::fs::write(dir.path().join("ipmi-power.toml"), RUNBOOK).unwrap();
    let count = |s: &str| bmcs.chassis_log(0).iter().filter(|l| l.contains(s)).count();

    let o = out(&mut lifeline(dir.path(), &["runbook", "run", "ipmi-power", "n1", "--yes", "--json"]));
    assert_eq!(json(&o)["state"], "succeeded", "{}", text(&o));
    assert_eq!((count("power 0"), count("power 1")), (1, 1), "{:?}", bmcs.chassis_log(0));

    // Killed a moment into the cycle, then resumed: still one off and one on more.
    let mut child = lifeline(dir.path(), &["runbook", "run", "ipmi-power", "n1", "--yes", "--json"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    child.kill().unwrap();
    let _ = child.wait();
    let runs = json(&out(&mut lifeline(dir.path(), &["runbook", "status", "--json"])));
    let id = runs[0]["run"].as_str().unwrap().to_owned();
    let mut approvals = 0;
    for _ in 0..5 {
        let st = json(&out(&mut lifeline(dir.path(), &["runbook", "status", &id, "--json"])));
        match st["state"].as_str().unwrap() {
            "succeeded" => break,
            "running" => {
                let o = out(&mut lifeline(dir.path(), &["runbook", "resume", &id, "--json"]));
                assert!(matches!(o.status.code(), Some(0 | 1)), "{}", text(&o));
            }
            "waiting-approval" => {
                // ipmi_sim logs no power events: when the on may have gone out, the operator decides (here
                // from ipmi_sim's chassis log).
                approvals += 1;
                let done = count("power 1") == 2;
                let mut a = vec!["runbook", "approve", id.as_str(), "--json"];
                if done {
                    a.push("--skip");
                }
                let _ = out(&mut lifeline(dir.path(), &a));
            }
            other => panic!("run {id} is {other}: {st:#}"),
        }
    }
    let st = json(&out(&mut lifeline(dir.path(), &["runbook", "status", &id, "--json"])));
    assert_eq!(st["state"], "succeeded", "{st:#}");
    assert_eq!((count("power 0"), count("power 1")), (2, 2), "{:?}", bmcs.chassis_log(0));
    eprintln!("approvals needed: {approvals}");
}
