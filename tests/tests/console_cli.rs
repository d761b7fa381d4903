//! `lifeline console …` over the simulator's IPMI SOL: a boot-looping switch broken into ONIE rescue, the
//! console log, the steal policy, and attach/detach from a real pty.

use std::process::{Command, Stdio};
use std::time::Duration;

use lifeline_test_utils::{SimProcess, lifeline_bin, output_text as text, unique_loopback, wait_until};

fn start() -> SimProcess {
    let offset: u16 = 22000;
    let (sw, bmc, node) = (unique_loopback(), unique_loopback(), unique_loopback());
    let inv = format!(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[defaults.management]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n\n\
         [[device]]\nname = \"leaf\"\nrole = \"switch\"\nrack = \"r\"\nfabric = \"backend\"\nplatform = \"sonic\"\n\
         management = {{ address = \"{sw}\", port = {} }}\nbmc = {{ address = \"{bmc}\", port = {}, protocol = \"ipmi\" }}\n\n\
         [[device]]\nname = \"node\"\nrole = \"head-node\"\nrack = \"r\"\n\
         bmc = {{ address = \"{node}\", port = {}, protocol = \"ipmi\" }}\n",
        22 + offset,
        623 + offset,
        623 + offset
    );
    SimProcess::start(&inv, offset, &[("LIFELINE_BMC_PASSWORD", "pw")])
}

fn run(sim: &SimProcess, args: &[&str]) -> std::process::Output {
    sim.lifeline(args)
}

fn audit_actions(sim: &SimProcess) -> Vec<(String, String)> {
    let o = run(sim, &["audit", "log", "--json", "--limit", "50"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| (r["action"].as_str().unwrap().to_owned(), r["outcome"].as_str().unwrap().to_owned()))
        .collect()
}

#[test]
fn boot_loop_rescued_logged_and_steal_only_when_asked() {
    let sim = start();
    sim.fault("leaf", "boot-loop");
    let o = run(&sim, &["console", "rescue", "leaf", "--bootloader", "onie", "--timeout", "60"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("reached the ONIE rescue shell"), "{}", text(&o));

    // The log holds what the console showed, and says when the session closed.
    let o = run(&sim, &["console", "log", "leaf"]);
    let log = text(&o);
    assert!(log.contains("ONIE:/ #"), "{log}");
    assert!(log.contains("[lifeline "), "session markers: {log}");
    let o = run(&sim, &["console", "log", "leaf", "--since", "2999-01-01T00:00:00Z"]);
    assert!(!String::from_utf8_lossy(&o.stdout).contains("ONIE"), "--since filters");

    // A stuck payload is taken over only with --steal, and that is audited.
    sim.fault("node", "sol-stuck");
    let o = run(&sim, &["console", "rescue", "node", "--bootloader", "grub", "--timeout", "5"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(text(&o).contains("already active"), "{}", text(&o));
    assert!(!audit_actions(&sim).iter().any(|(a, _)| a == "console.steal"));
    // With --steal the payload is ours; the head node is not in a boot loop, so the GRUB profile times out,
    // but the steal itself happened and was recorded.
    let _ = run(&sim, &["console", "rescue", "node", "--bootloader", "grub", "--timeout", "2", "--steal"]);
    assert!(audit_actions(&sim).contains(&("console.steal".to_owned(), "ok".to_owned())));
}

#[test]
fn attach_and_detach_from_a_pty() {
    let sim = start();
    if Command::new("script").arg("--version").output().is_err() {
        panic!("`script` (util-linux) is needed to give the console a pty");
    }
    let cmd = format!(
        "{} console node --inventory {} --data-dir {}",
        lifeline_bin().display(),
        sim.inventory.display(),
        sim.data.display()
    );
    // Type a newline, then the escape `~.` (recognised only after a newline, like ssh).
    let mut child = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env("LIFELINE_BMC_PASSWORD", "pw")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    {
        use std::io::Write;
        let stdin = child.stdin.as_mut().unwrap();
        stdin.write_all(b"\r~.").unwrap();
        stdin.flush().unwrap();
    }
    let out = wait_until("console to detach", Duration::from_secs(20), || child.try_wait().ok().flatten());
    assert!(out.success(), "{out}");
    let actions = audit_actions(&sim);
    assert!(actions.contains(&("console.attach".to_owned(), "ok".to_owned())), "{actions:?}");
    assert!(actions.contains(&("console.detach".to_owned(), "ok".to_owned())), "{actions:?}");
}
