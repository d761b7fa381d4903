//! Shared by the runbook end-to-end tests: a simulated fleet of GPU nodes whose names match the real Slurm
//! peer's nodes, an SSH banner that answers only while the simulated host is up (the node's sshd), and the
//! real Slurm's view of a node.

#![allow(dead_code)]

use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use lifeline_test_utils::{SimProcess, peer_endpoints, unique_loopback};

pub const SSH_PORT: u16 = 2222;

/// The real Slurm's config, when the peers run.
pub fn slurm_conf() -> Option<PathBuf> {
    let rows = peer_endpoints("slurm")?;
    let ctld = rows.iter().find(|r| r.first().map(String::as_str) == Some("slurmctld"))?;
    Some(PathBuf::from(&ctld[4]))
}

pub fn sinfo(conf: &Path, node: &str) -> (String, String) {
    let o = Command::new("sinfo")
        .args(["-N", "-h", "-n", node, "-o", "%T|%E"])
        .env("SLURM_CONF", conf)
        .env_remove("SLURM_JWT")
        .output()
        .expect("sinfo");
    let text = String::from_utf8_lossy(&o.stdout).trim().to_owned();
    let (state, reason) = text.split_once('|').unwrap_or((&text, ""));
    (state.to_owned(), reason.to_owned())
}

pub fn scontrol(conf: &Path, args: &[&str]) {
    let _ = Command::new("scontrol").args(args).env("SLURM_CONF", conf).env_remove("SLURM_JWT").status();
}

/// One GPU node of the test fleet.
pub struct Node {
    pub name: String,
    pub rack: String,
    pub protocol: &'static str,
    pub bmc: Ipv4Addr,
    pub frontend: Ipv4Addr,
}

pub fn nodes(names: &[(&str, &str, &'static str)]) -> Vec<Node> {
    names
        .iter()
        .map(|(n, rack, p)| Node {
            name: (*n).into(),
            rack: (*rack).into(),
            protocol: p,
            bmc: unique_loopback(),
            frontend: unique_loopback(),
        })
        .collect()
}

pub fn inventory(nodes: &[Node], offset: u16) -> String {
    let mut racks: Vec<&str> = nodes.iter().map(|n| n.rack.as_str()).collect();
    racks.sort();
    racks.dedup();
    let mut t = String::from(
        "[cluster]\nname = \"t\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_BMC_PASSWORD\"\n\n[defaults.management]\nusername = \"admin\"\n\
         credential = \"env:LIFELINE_SWITCH_PASSWORD\"\n\n[[site]]\nname = \"s\"\n",
    );
    for r in racks {
        t.push_str(&format!("\n[[rack]]\nname = \"{r}\"\nsite = \"s\"\n"));
    }
    for (i, n) in nodes.iter().enumerate() {
        let port = if n.protocol == "ipmi" { 623 + offset } else { 443 + offset };
        let flavor = if n.protocol == "ipmi" { "openbmc-like" } else { "generic" };
        // `auto` speaks both protocols on their standard ports (a simulator on port offset 0).
        let port = if n.protocol == "auto" { String::new() } else { format!(", port = {port}") };
        let sub = 200 + i;
        if n.name.starts_with("head") {
            t.push_str(&format!(
                "\n[[device]]\nname = \"{}\"\nrole = \"head-node\"\nrack = \"{}\"\n\
                 bmc = {{ address = \"{}\"{port}, protocol = \"{}\", flavor = \"{flavor}\" }}\n",
                n.name, n.rack, n.bmc, n.protocol
            ));
            continue;
        }
        t.push_str(&format!(
            "\n[[device]]\nname = \"{}\"\nrole = \"gpu-node\"\nrack = \"{}\"\n\
             bmc = {{ address = \"{}\"{port}, protocol = \"{}\", flavor = \"{flavor}\" }}\n\
             frontend = {{ address = \"{}\", interface = \"eno1\" }}\n\
             gpus = {{ count = 2, model = \"NVIDIA H100 80GB HBM3\" }}\n\
             rail = [\n  {{ hca = \"mlx5_0\", netdev = \"rdma0\", fabric = \"backend\", subnet = \"127.{sub}.0.0/24\", address = \"127.{sub}.0.1\", rate-gbps = 400, mtu = 9000, link-layer = \"ethernet\" }},\n  {{ hca = \"mlx5_1\", netdev = \"rdma1\", fabric = \"backend\", subnet = \"127.{sub}.1.0/24\", address = \"127.{sub}.1.1\", rate-gbps = 400, mtu = 9000, link-layer = \"ethernet\" }},\n]\n",
            n.name, n.rack, n.bmc, n.protocol, n.frontend
        ));
    }
    t
}

pub fn start(nodes: &[Node], offset: u16) -> SimProcess {
    SimProcess::start(
        &inventory(nodes, offset),
        offset,
        &[("LIFELINE_BMC_PASSWORD", "s3cret-pw"), ("LIFELINE_SWITCH_PASSWORD", "sw-pass")],
    )
}

/// Whether the simulated host is up, read from its exported state: a rail's physical state is `Polling`
/// only while the host is down (a host that is up with a broken link shows `Disabled`).
pub fn host_up(node_state: &Path, node: &str) -> bool {
    // The simulator rewrites the export file by file (rails first, the GPU snapshot later): the OS counts
    // as up only once both say so, as a real sshd would only answer after the whole boot.
    let rail_up = std::fs::read_to_string(
        node_state.join(node).join("sysfs/class/infiniband/mlx5_0/ports/1/phys_state"),
    )
    .map(|s| !s.contains("Polling"))
    .unwrap_or(false);
    let gpus_up = std::fs::read_to_string(node_state.join(node).join("gpus.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .is_some_and(|v| v.get("host_up").and_then(serde_json::Value::as_bool).unwrap_or(true));
    rail_up && gpus_up
}

/// The node's sshd: answers with an SSH banner on FRONTEND:2222 while the simulated host is up, and closes
/// the connection silently while it is down (a port that accepts but does not speak SSH is not "OS up").
pub struct Sshd {
    stop: Arc<AtomicBool>,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

pub fn sshd(node: &Node, node_state: &Path) -> Sshd {
    use std::io::Write;
    let l = TcpListener::bind((node.frontend, SSH_PORT)).expect("bind the node's ssh port");
    l.set_nonblocking(true).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let (s2, dir, name) = (stop.clone(), node_state.to_path_buf(), node.name.clone());
    std::thread::spawn(move || {
        while !s2.load(Ordering::SeqCst) {
            match l.accept() {
                Ok((mut c, _)) => {
                    if host_up(&dir, &name) {
                        let _ = c.write_all(b"SSH-2.0-OpenSSH_9.6 sim\r\n");
                    }
                }
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
            }
        }
    });
    Sshd { stop }
}

/// Serialises the tests that drive one node of the shared real Slurm (its four nodes are shared by every
/// test that needs a scheduler).
pub fn lock_slurm_node(node: &str) -> std::fs::File {
    let f =
        std::fs::File::create(std::env::temp_dir().join(format!("lifeline-e2e-slurm-{node}.lock"))).unwrap();
    f.lock().unwrap();
    f
}

pub fn executed(sim: &SimProcess, device: &str, action: &str) -> usize {
    sim.actions(device).iter().filter(|a| a["action"] == action && a["noop"] != true).count()
}

/// A run's steps as (name, state) pairs, in order.
pub fn step_states(run: &serde_json::Value) -> Vec<(&str, &str)> {
    run["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["state"].as_str().unwrap()))
        .collect()
}
