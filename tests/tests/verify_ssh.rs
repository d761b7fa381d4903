//! `lifeline verify` reaching the agent over a real OpenSSH server, the way it runs on a GPU node after
//! recovery: the policy travels on stdin, the JSON report comes back, its digest is checked.

use std::process::{Command, Stdio};

use lifeline_test_utils::{SimProcess, agent_bin, lifeline_bin, start_sshd, unique_loopback};
use serde_json::Value;

#[test]
fn verify_runs_the_agent_over_ssh() {
    let Some(sshd) = start_sshd("") else { return };
    let dir = tempfile::tempdir().unwrap();
    let bmc = unique_loopback();
    let offset = 23000u16;
    // The node's frontend address is the sshd's: that is where the agent runs.
    let inv = format!(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n\n\
         [[device]]\nname = \"gpu-a\"\nrole = \"gpu-node\"\nrack = \"r\"\n\
         bmc = {{ address = \"{bmc}\", port = {}, protocol = \"redfish\" }}\n\
         frontend = {{ address = \"{}\", interface = \"eno1\", ssh-user = \"{}\" }}\n\
         gpus = {{ count = 8, model = \"NVIDIA H100 80GB HBM3\" }}\nrail = [\n{}]\n",
        443 + offset,
        sshd.addr,
        sshd.user,
        (0..8)
            .map(|i| format!(
                "  {{ hca = \"mlx5_{i}\", netdev = \"rdma{i}\", subnet = \"127.100.{i}.0/24\", address = \"127.100.{i}.1\", rate-gbps = 400, mtu = 9000 }},\n"
            ))
            .collect::<String>()
    );
    let sim = SimProcess::start(&inv, offset, &[("LIFELINE_BMC_PASSWORD", "pw")]);
    let inventory = sim.inventory.clone();
    let state = sim.node_state.clone();
    // The "node" runs the real agent binary against its (simulated) /sys, /proc and GPU snapshot.
    let tree = state.join("gpu-a");
    let agent = format!(
        "{} check --policy /dev/stdin --json --sysfs-root {} --gpu-snapshot {} --interval-ms 20",
        agent_bin().display(),
        tree.join("sysfs").display(),
        tree.join("gpus.json").display()
    );
    let verify = |extra: &[&str]| {
        let mut c = Command::new(lifeline_bin());
        c.args(["verify", "gpu-a", "--json", "--agent-command", &agent, "--inventory"])
            .arg(&inventory)
            .arg("--data-dir")
            .arg(dir.path().join("data"));
        for a in sshd.client_args() {
            c.arg(format!("--ssh-option={a}"));
        }
        c.args(extra).stdin(Stdio::null()).output().unwrap()
    };
    let o = verify(&[]);
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{text}");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["verdict"], "pass", "{text}");
    assert!(v[0]["digest"].as_str().unwrap().starts_with("sha256:"));
    assert_eq!(v[0]["report"]["node"], "gpu-a");

    // A GPU fault on the node is seen through the same path.
    sim.fault("gpu-a", "gpu-ecc=5");
    let o = verify(&[]);
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["verdict"], "fail");
    assert!(
        v[0]["summary"].as_str().unwrap().contains("GPU")
            || v[0]["summary"].as_str().unwrap().contains("gpu"),
        "{v}"
    );

    // An unreachable agent is an error with the reason, never a pass.
    let o = verify(&["--ssh-option=-oProxyCommand=false"]);
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v[0]["error"].as_str().unwrap().contains("ssh"), "{v}");
    assert_eq!(v[0]["readmitted"], false);
}
