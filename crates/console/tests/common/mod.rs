//! A private OpenIPMI `ipmi_sim` per test, started with the shared peers script on a per-test loopback
//! address (same approach as `lifeline-ipmi`'s tests; the lead may move this into `lifeline-test-utils`):
//! SOL is one payload per BMC and ipmi_sim keeps SOL state across sessions, so tests never share one.

#![allow(dead_code)]

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::Command;

pub struct IpmiSim {
    run: tempfile::TempDir,
    script_dir: PathBuf,
    pub addr: SocketAddr,
    /// Host side of the SOL serial line (TCP).
    pub serial: SocketAddr,
    pub user: String,
    pub password: String,
}

fn peers_dir() -> Option<PathBuf> {
    let mut candidates = Vec::new();
    if let Ok(d) = std::env::var("OOB_PEERS_DIR") {
        candidates.push(PathBuf::from(d));
    }
    let root = lifeline_test_utils::workspace_root();
    candidates.push(root.join("shared/peers"));
    candidates.push(root.join("../shared/peers"));
    candidates.push(root.join(".ci/peers"));
    candidates.into_iter().find(|d| d.join("start-ipmi-sim.sh").is_file())
}

fn skip_or_fail<T>(why: String) -> Option<T> {
    if lifeline_test_utils::peers_required() {
        panic!("ipmi_sim peer required (OOB_PEERS_REQUIRED=1): {why}");
    }
    eprintln!("SKIP: {why}");
    None
}

pub fn have(tool: &str) -> bool {
    Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().is_ok_and(|o| o.status.success())
}

impl IpmiSim {
    /// Start one ipmi_sim; `None` (after a loud SKIP) when the peer cannot run here.
    pub fn start() -> Option<IpmiSim> {
        let Some(script_dir) = peers_dir() else {
            return skip_or_fail("shared/peers/start-ipmi-sim.sh not found (set OOB_PEERS_DIR)".into());
        };
        for t in ["ipmi_sim", "sdrcomp", "socat"] {
            if !have(t) {
                return skip_or_fail(format!("{t} not installed (apt-get install openipmi socat)"));
            }
        }
        let ip = lifeline_test_utils::unique_loopback();
        let run = tempfile::Builder::new().prefix("oob-peers-console-test").tempdir().expect("tempdir");
        let out = Command::new(script_dir.join("start-ipmi-sim.sh"))
            .arg("1")
            .arg(format!("{ip}:6230"))
            .env("OOB_PEERS_RUN", run.path())
            .output()
            .expect("run start-ipmi-sim.sh");
        assert!(
            out.status.success(),
            "start-ipmi-sim.sh failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let ip: IpAddr = ip.into();
        Some(IpmiSim {
            run,
            script_dir,
            addr: SocketAddr::new(ip, 6230),
            serial: SocketAddr::new(ip, 9600),
            user: "admin".into(),
            password: "password".into(),
        })
    }

    /// `ipmitool -I lanplus -C 3` arguments for this BMC.
    pub fn ipmitool_args(&self) -> Vec<String> {
        ["-I", "lanplus", "-C", "3", "-H", &self.addr.ip().to_string(), "-p", &self.addr.port().to_string()]
            .iter()
            .map(|s| s.to_string())
            .chain(["-U".into(), self.user.clone(), "-P".into(), self.password.clone()])
            .collect()
    }
}

impl Drop for IpmiSim {
    fn drop(&mut self) {
        let _ = Command::new(self.script_dir.join("stop-all.sh"))
            .arg("ipmi")
            .env("OOB_PEERS_RUN", self.run.path())
            .output();
    }
}

/// ipmitool, or a loud skip (a failure with `OOB_PEERS_REQUIRED=1`).
pub fn ipmitool() -> Option<&'static str> {
    if have("ipmitool") {
        return Some("ipmitool");
    }
    skip_or_fail("ipmitool not installed (apt-get install ipmitool)".into())
}
