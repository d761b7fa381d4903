//! A private OpenIPMI `ipmi_sim` per test (started with the shared peers script on a
//! per-test loopback address), so tests that power-cycle, clear the SEL, fill the
//! session table or steal SOL never disturb each other under nextest.

#![allow(dead_code)]

use lifeline_ipmi::ClientConfig;
use lifeline_ipmi::client::Timing;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

pub struct IpmiSim {
    run: tempfile::TempDir,
    script_dir: PathBuf,
    pub ip: IpAddr,
    pub addr: SocketAddr,
    /// Host side of the SOL serial line (TCP).
    pub serial: SocketAddr,
    /// ipmi_sim emulator console (TCP).
    pub emucon: SocketAddr,
    /// `$OOB_PEERS_RUN/ipmi/bmc1`: chassis.log, power, ...
    pub dir: PathBuf,
}

fn peers_dir() -> Option<PathBuf> {
    let mut candidates = Vec::new();
    if let Ok(d) = std::env::var("OOB_PEERS_DIR") {
        candidates.push(PathBuf::from(d));
    }
    let root = lifeline_test_utils::workspace_root();
    candidates.push(root.join("shared/peers"));
    candidates.push(root.join("../shared/peers"));
    candidates.into_iter().find(|d| d.join("start-ipmi-sim.sh").is_file())
}

fn skip_or_fail(why: String) -> Option<IpmiSim> {
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
    pub fn start() -> Option<Self> {
        let Some(script_dir) = peers_dir() else {
            return skip_or_fail("shared/peers/start-ipmi-sim.sh not found (set OOB_PEERS_DIR)".into());
        };
        for t in ["ipmi_sim", "sdrcomp", "socat"] {
            if !have(t) {
                return skip_or_fail(format!("{t} not installed (apt-get install openipmi socat)"));
            }
        }
        let ip = lifeline_test_utils::unique_loopback();
        let run = tempfile::Builder::new().prefix("oob-peers-ipmi-test").tempdir().expect("tempdir");
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
        let dir = run.path().join("ipmi/bmc1");
        Some(Self {
            ip: ip.into(),
            addr: SocketAddr::new(ip.into(), 6230),
            serial: SocketAddr::new(ip.into(), 9600),
            emucon: SocketAddr::new(ip.into(), 9700),
            dir,
            script_dir,
            run,
        })
    }

    pub fn chassis_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("chassis.log")).unwrap_or_default()
    }

    pub fn run_dir(&self) -> &Path {
        self.run.path()
    }

    /// `ipmitool -I lanplus -C 3 ... ARGS` (blocking; call from spawn_blocking or before the runtime).
    pub fn ipmitool(&self, args: &[&str]) -> String {
        let out = Command::new("ipmitool")
            .args(["-I", "lanplus", "-C", "3", "-H", &self.ip.to_string(), "-p", "6230"])
            .args(["-U", "admin", "-P", "password"])
            .args(args)
            .output()
            .expect("run ipmitool");
        assert!(out.status.success(), "ipmitool {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
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

pub fn admin() -> ClientConfig {
    ClientConfig::new("admin", "password")
}

/// Timing for lossy links: quick first retransmit, many attempts.
pub fn lossy_timing() -> Timing {
    Timing {
        attempt_timeout: Duration::from_millis(50),
        max_attempt_timeout: Duration::from_millis(250),
        attempts: 16,
    }
}
