//! `lifeline console …` over the simulator's IPMI SOL: a boot-looping switch broken into ONIE rescue, the
//! console log, the steal policy, and attach/detach from a real pty.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use lifeline_test_utils::{lifeline_bin, unique_loopback, wait_until};

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

fn start() -> Sim {
    let dir = tempfile::tempdir().unwrap();
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
    let inventory = dir.path().join("inv.toml");
    std::fs::write(&inventory, inv).unwrap();
    let endpoints = dir.path().join("endpoints.json");
    let mut child = Command::new(lifeline_bin())
        .args(["sim", "--inventory"])
        .arg(&inventory)
        .args(["--port-offset", &offset.to_string(), "--time-scale", "0.05", "--endpoints-json"])
        .arg(&endpoints)
        .env("LIFELINE_BMC_PASSWORD", "pw")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("sim endpoints", Duration::from_secs(30), || {
        if let Ok(Some(s)) = child.try_wait() {
            panic!("sim exited: {s}");
        }
        endpoints.exists().then_some(())
    });
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
        .env("LIFELINE_BMC_PASSWORD", "pw")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn audit_actions(sim: &Sim) -> Vec<(String, String)> {
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
    let ep = sim.endpoints.to_str().unwrap();
    assert_eq!(run(&sim, &["sim", "fault", "--endpoints", ep, "leaf", "boot-loop"]).status.code(), Some(0));
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
    assert_eq!(run(&sim, &["sim", "fault", "--endpoints", ep, "node", "sol-stuck"]).status.code(), Some(0));
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
    let _ = Path::new("/");
}
