//! `reinstall` end to end: the real binary, `lifeline sim` (whose host runs a fake installer when it boots
//! once from a virtual CD with an image in it, and prints its completion marker on the console), the real
//! Slurm. Drain, insert, boot once from the CD, the installer's marker seen on the console, eject, the
//! installed OS up, verify, readmit; the post-condition (a fresh passing report) decides success. The image
//! is the runbook's default, a served image: the command runs the image server of `[image-server]` for its
//! life and the simulated BMC mounts the image from it.

#[path = "runbook_support/mod.rs"]
mod support;

use lifeline_test_utils::{output_json as json, output_text as text};
use support::*;

// `auto` on the standard ports: Redfish for the virtual media, IPMI SOL for the console, as a real BMC
// serves both (a simulator on port offset 0, root only as the runbook tests run).
const OFFSET: u16 = 0;

#[test]
fn reinstall_from_virtual_media_and_readmit() {
    let Some(conf) = slurm_conf() else { return };
    let _lock = lock_slurm_node("gpu-node-01");
    let fleet = nodes(&[("gpu-node-01", "r1", "auto")]);
    let sim = start(&fleet, OFFSET);
    let _sshd: Vec<Sshd> = fleet.iter().map(|n| sshd(n, &sim.node_state)).collect();
    scontrol(&conf, &["update", "nodename=gpu-node-01", "state=resume"]);
    let runbooks = lifeline_test_utils::workspace_root().join("runbooks");
    let images = sim.dir.path().join("images");
    std::fs::create_dir(&images).unwrap();
    std::fs::write(images.join("ubuntu-24.04-autoinstall.iso"), vec![7u8; 65536]).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let listen = format!("{}:{port}", lifeline_test_utils::unique_loopback());
    let config = sim.dir.path().join("reinstall.toml");
    std::fs::write(
        &config,
        format!("[image-server]\nlisten = \"{listen}\"\nimages = \"{}\"\n", images.display()),
    )
    .unwrap();
    let o = sim.lifeline(&[
        "runbook",
        "run",
        "reinstall",
        "gpu-node-01",
        "--yes",
        "--json",
        "--runbooks",
        runbooks.to_str().unwrap(),
        "--node-state",
        sim.node_state.to_str().unwrap(),
        "--interval-ms",
        "20",
        "--slurm-conf",
        conf.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let runs = json(&o);
    // One target: the run itself (several: an array of runs).
    let run = if runs.is_array() { &runs[0] } else { &runs };
    assert_eq!(run["state"], "succeeded", "{run:#}");
    assert_eq!(
        step_states(run),
        [
            ("drain", "ok"),
            ("insert", "ok"),
            ("boot-installer", "ok"),
            ("installer-done", "ok"),
            ("eject", "ok"),
            ("os-up", "ok"),
            ("verify", "ok"),
            ("readmit", "ok"),
            ("verified", "ok")
        ]
    );
    let done = run["steps"].as_array().unwrap().iter().find(|s| s["name"] == "installer-done").unwrap();
    assert!(done["message"].as_str().unwrap().contains("installation complete"), "{done}");
    // The BMC's own view: nothing left in the CD, the one-time boot used up.
    let v = json(&sim.lifeline(&["media", "show", "gpu-node-01", "--json"]));
    assert!(v[0]["slots"].as_array().unwrap().iter().all(|s| s["image"].is_null()), "{v:#}");
    let v = json(&sim.lifeline(&["boot", "show", "gpu-node-01", "--json"]));
    assert_ne!(v[0]["settings"]["target"], "cdrom", "{v:#}");
    let (st, _) = sinfo(&conf, "gpu-node-01");
    assert_eq!(st, "idle", "readmitted");
    let log = json(&sim.lifeline(&["audit", "log", "--json"]));
    let n = |a: &str| log.as_array().unwrap().iter().filter(|r| r["action"] == a).count();
    assert!(n("media.insert") >= 1 && n("media.eject") >= 1, "{log:#}");
    // The BMC read the served image by range requests; the eject ended its token.
    let serve = log.as_array().unwrap().iter().find(|r| r["action"] == "media.serve").expect("media.serve");
    assert!(serve["detail"]["served"][0]["ranges"].as_u64().unwrap_or(0) >= 1, "{serve:#}");
}
