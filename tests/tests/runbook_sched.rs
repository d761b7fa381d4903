//! `pfc-storm` and `slurm-controller-reset` end to end against `lifeline sim` and the real Slurm.
//! pfc-storm: the node behind the storming port is drained, the site's mitigation runs once after approval
//! (an `exec` step, allowed for this runbook by the config), verification passes once the storm stopped, the
//! webhook is told, and the node stays drained for the NIC/cable check (never readmitted by this runbook).
//! slurm-controller-reset: a controller that answers is not reset; Lifeline's drain is still its own.

#[path = "runbook_support/mod.rs"]
mod support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;

use lifeline_test_utils::{lifeline_bin, output_json as json, output_text as text, workspace_root};
use support::*;

const OFFSET: u16 = 24900;

/// A webhook receiver: answers 200 and hands back every body it got.
fn webhook() -> (u16, std::sync::mpsc::Receiver<String>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { continue };
            let mut buf = vec![0u8; 16384];
            let mut got = Vec::new();
            c.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
            while let Ok(n) = c.read(&mut buf) {
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
                let s = String::from_utf8_lossy(&got);
                if let Some((head, body)) = s.split_once("\r\n\r\n") {
                    let len = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    if body.len() >= len {
                        let _ = tx.send(body.to_owned());
                        break;
                    }
                }
            }
            let _ = c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    (port, rx)
}

#[test]
fn pfc_storm_mitigates_once_verifies_notifies_and_keeps_the_node_drained_then_the_controller_is_left_alone() {
    let Some(conf) = slurm_conf() else { return };
    let _lock = lock_slurm_node("gpu-node-02");
    let fleet = nodes(&[("gpu-node-02", "r1", "redfish"), ("head-01", "r2", "redfish")]);
    // The leaf the storm is on: a `device` variable names a device of the inventory.
    let mut inv = inventory(&fleet, OFFSET);
    inv.push_str(&format!(
        "\n[[device]]\nname = \"leaf-r01\"\nrole = \"switch\"\nrack = \"r1\"\nfabric = \"backend\"\ntier = \"leaf\"\n\
         platform = \"sonic\"\nmanagement = {{ address = \"{}\", port = {} }}\n",
        lifeline_test_utils::unique_loopback(),
        22 + OFFSET
    ));
    let sim = lifeline_test_utils::SimProcess::start(
        &inv,
        OFFSET,
        &[("LIFELINE_BMC_PASSWORD", "s3cret-pw"), ("LIFELINE_SWITCH_PASSWORD", "sw-pass")],
    );
    scontrol(&conf, &["update", "nodename=gpu-node-02", "state=resume"]);
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls");
    // The site's mitigation script: records its arguments, and (this being a simulator) the storm stops.
    let script = dir.path().join("pfc-mitigate");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$@\" >> {}\nexec {} sim fault --endpoints {} gpu-node-02 clear\n",
            calls.display(),
            lifeline_bin().display(),
            sim.endpoints.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (port, bodies) = webhook();
    // The site's copy of the library: its administrator writes the mitigation program and the webhook
    // into the runbook (no run variable can choose either).
    let lib = dir.path().join("runbooks");
    std::fs::create_dir(&lib).unwrap();
    for e in std::fs::read_dir(workspace_root().join("runbooks")).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p)
            .unwrap()
            .replace("/usr/local/libexec/lifeline/pfc-mitigate", script.to_str().unwrap())
            .replace("http://127.0.0.1:9/lifeline", &format!("http://127.0.0.1:{port}/hook"));
        std::fs::write(lib.join(p.file_name().unwrap()), text).unwrap();
    }
    let config = dir.path().join("lifeline.toml");
    std::fs::write(
        &config,
        format!("[runbooks]\ndir = \"{}\"\nexec-allowed = [\"pfc-storm\"]\n", lib.display()),
    )
    .unwrap();
    let cfg = config.to_str().unwrap();
    let ns = sim.node_state.to_str().unwrap();
    let env =
        ["--node-state", ns, "--interval-ms", "20", "--slurm-conf", conf.to_str().unwrap(), "--config", cfg];

    sim.fault("gpu-node-02", "pfc-storm=mlx5_0");
    let mut args = vec!["runbook", "run", "pfc-storm", "gpu-node-02", "--yes", "--json"];
    args.extend(["--var", "port=Ethernet12"]);
    args.extend(env);
    let o = sim.lifeline(&args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = json(&o);
    assert_eq!(v["state"], "waiting-approval", "{v:#}");
    assert!(sinfo(&conf, "gpu-node-02").0.starts_with("drain"), "drained before the mitigation");
    assert!(!calls.exists(), "the mitigation waits for approval");

    let id = v["run"].as_str().unwrap().to_owned();
    let mut a = vec!["runbook", "approve", id.as_str(), "--json"];
    a.extend(env);
    let o = sim.lifeline(&a);
    let v = json(&o);
    assert_eq!(v["state"], "succeeded", "{v:#}\n{}", text(&o));
    assert_eq!(
        std::fs::read_to_string(&calls).unwrap(),
        "leaf-r01 Ethernet12 watchdog\n",
        "the mitigation ran once"
    );
    let body: serde_json::Value =
        serde_json::from_str(&bodies.recv_timeout(std::time::Duration::from_secs(5)).unwrap()).unwrap();
    assert_eq!((body["run"].as_str(), body["target"].as_str()), (Some(id.as_str()), Some("gpu-node-02")));
    let (st, reason) = sinfo(&conf, "gpu-node-02");
    assert!(st.starts_with("drain") && reason.starts_with("lifeline: "), "kept drained: {st} {reason}");

    // The controller answers: it is not reset, and Lifeline's drain on gpu-node-02 is still its own.
    let o = sim.lifeline(&[
        "runbook",
        "run",
        "slurm-controller-reset",
        "head-01",
        "--yes",
        "--json",
        "--var",
        "probe-node=gpu-node-02",
        "--var",
        "drained-node=gpu-node-02",
        "--slurm-conf",
        conf.to_str().unwrap(),
        "--config",
        cfg,
    ]);
    let v = json(&o);
    assert_eq!(v["state"], "succeeded", "{v:#}");
    let states = step_states(&v);
    assert_eq!(
        states,
        [
            ("hung", "ok"),
            ("reset", "skipped"),
            ("power-on", "ok"),
            ("slurmctld", "ok"),
            ("drains-still-ours", "ok"),
            ("controller-answers", "ok")
        ]
    );
    assert!(sim.actions("head-01").is_empty(), "{:?}", sim.actions("head-01"));

    // Without the administrator's exec permission the mitigation is refused and the run escalates.
    std::fs::write(
        &config,
        format!("[runbooks]\ndir = \"{}\"\n", workspace_root().join("runbooks").display()),
    )
    .unwrap();
    sim.fault("gpu-node-02", "pfc-storm=mlx5_0");
    let o = sim.lifeline(&args);
    let id2 = json(&o)["run"].as_str().unwrap().to_owned();
    let mut a = vec!["runbook", "approve", id2.as_str(), "--json"];
    a.extend(env);
    let o = sim.lifeline(&a);
    let v = json(&o);
    assert_eq!(v["state"], "escalated", "{v:#}");
    assert!(v["reason"].as_str().unwrap().contains("exec-allowed"), "{v:#}");
    assert_eq!(std::fs::read_to_string(&calls).unwrap().lines().count(), 1, "the script did not run again");
    scontrol(&conf, &["update", "nodename=gpu-node-02", "state=resume"]);
}
