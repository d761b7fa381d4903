//! Private OpenIPMI `ipmi_sim` instances per test, started with the shared peers script on a per-test
//! loopback address: power cycles, SEL clears, full session tables and SOL steals never disturb another
//! test (ipmi_sim keeps SOL state across sessions, so tests must not share one).

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::{peers_required, unique_loopback, workspace_root};

/// First UDP port; instance `i` (0-based) listens on `BASE_PORT + i`, its serial line on TCP 9600+i and
/// its emulator console on TCP 9700+i (see the peers README).
pub const IPMI_SIM_BASE_PORT: u16 = 6230;

/// `None` after a loud `SKIP`, or a panic when peers are required.
pub fn skip_or_fail<T>(why: impl std::fmt::Display) -> Option<T> {
    assert!(!peers_required(), "peer required (OOB_PEERS_REQUIRED=1): {why}");
    eprintln!("SKIP: {why}");
    None
}

/// Whether a command is on PATH.
pub fn have(tool: &str) -> bool {
    Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().is_ok_and(|o| o.status.success())
}

/// The peers' scripts: `$OOB_PEERS_DIR`, `<repo>/../shared/peers`, or the copy in `<repo>/.ci/peers`.
pub fn peers_dir() -> Option<PathBuf> {
    let mut candidates = Vec::new();
    if let Ok(d) = std::env::var("OOB_PEERS_DIR") {
        candidates.push(PathBuf::from(d));
    }
    let root = workspace_root();
    candidates.push(root.join("../shared/peers"));
    candidates.push(root.join(".ci/peers"));
    candidates.into_iter().find(|d| d.join("start-ipmi-sim.sh").is_file())
}

/// `count` ipmi_sim instances on one private loopback address (users admin/password, operator/operator,
/// viewer/viewer), stopped when dropped.
#[derive(Debug)]
pub struct IpmiSims {
    run: tempfile::TempDir,
    script_dir: PathBuf,
    pub ip: IpAddr,
    pub count: u16,
}

impl IpmiSims {
    pub fn start(count: u16) -> Option<IpmiSims> {
        let Some(script_dir) = peers_dir() else {
            return skip_or_fail("shared/peers/start-ipmi-sim.sh not found (set OOB_PEERS_DIR)");
        };
        for t in ["ipmi_sim", "sdrcomp", "socat"] {
            if !have(t) {
                return skip_or_fail(format!("{t} not installed (apt-get install openipmi socat)"));
            }
        }
        let ip = unique_loopback();
        let run = tempfile::Builder::new().prefix("oob-peers-ipmi-test").tempdir().expect("tempdir");
        let out = Command::new(script_dir.join("start-ipmi-sim.sh"))
            .arg(count.to_string())
            .arg(format!("{ip}:{IPMI_SIM_BASE_PORT}"))
            .env("OOB_PEERS_RUN", run.path())
            .output()
            .expect("run start-ipmi-sim.sh");
        assert!(
            out.status.success(),
            "start-ipmi-sim.sh failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Some(IpmiSims { run, script_dir, ip: ip.into(), count })
    }

    /// UDP address of instance `i`.
    pub fn addr(&self, i: u16) -> SocketAddr {
        SocketAddr::new(self.ip, IPMI_SIM_BASE_PORT + i)
    }

    /// Host side of instance `i`'s serial line: bytes written here appear in SOL, SOL keystrokes come out.
    pub fn serial(&self, i: u16) -> SocketAddr {
        SocketAddr::new(self.ip, 9600 + i)
    }

    /// Instance `i`'s emulator console (telnet-style, prompt `> `).
    pub fn emucon_addr(&self, i: u16) -> SocketAddr {
        SocketAddr::new(self.ip, 9700 + i)
    }

    /// `$OOB_PEERS_RUN/ipmi/bmc<i+1>`: chassis.log, power state files.
    pub fn dir(&self, i: u16) -> PathBuf {
        self.run.path().join(format!("ipmi/bmc{}", i + 1))
    }

    pub fn run_dir(&self) -> &Path {
        self.run.path()
    }

    /// The chassis log as written (one line per Chassis Control the BMC executed).
    pub fn chassis_log_raw(&self, i: u16) -> String {
        std::fs::read_to_string(self.dir(i).join("chassis.log")).unwrap_or_default()
    }

    /// The chassis log without its timestamp columns.
    pub fn chassis_log(&self, i: u16) -> Vec<String> {
        self.chassis_log_raw(i)
            .lines()
            .map(|l| l.split_whitespace().skip(2).collect::<Vec<_>>().join(" "))
            .collect()
    }

    /// Runs a command on the emulator console, e.g. `sensor_set_value 0x20 0 3 0x5c 1`.
    pub fn emucon(&self, i: u16, cmd: &str) -> String {
        let mut s = TcpStream::connect(self.emucon_addr(i)).expect("emulator console");
        s.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
        let mut buf = [0u8; 4096];
        let _ = s.read(&mut buf);
        s.write_all(format!("{cmd}\n").as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let n = s.read(&mut buf).unwrap_or(0);
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    /// Instance `i`'s session table as the BMC reports it (`ipmitool session info active`): sessions active
    /// now (the one ipmitool opens to ask included) and its slot count.
    pub fn session_table(&self, i: u16) -> (usize, usize) {
        let text = self.ipmitool(i, &["session", "info", "active"]);
        let field = |name: &str| -> usize {
            text.lines()
                .find_map(|l| {
                    l.strip_prefix(name).map(|r| r.trim_start_matches([' ', ':']).trim().to_owned())
                })
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no `{name}` in ipmitool's session info: {text}"))
        };
        (field("active sessions"), field("slot count"))
    }

    /// `ipmitool -I lanplus -C 3 … ARGS` against instance `i` (blocking), asserting success.
    pub fn ipmitool(&self, i: u16, args: &[&str]) -> String {
        let port = (IPMI_SIM_BASE_PORT + i).to_string();
        let out = Command::new("ipmitool")
            .args(["-I", "lanplus", "-C", "3", "-H", &self.ip.to_string(), "-p", &port])
            .args(["-U", "admin", "-P", "password"])
            .args(args)
            .output()
            .expect("run ipmitool");
        assert!(out.status.success(), "ipmitool {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for IpmiSims {
    fn drop(&mut self) {
        let _ = Command::new(self.script_dir.join("stop-all.sh"))
            .arg("ipmi")
            .env("OOB_PEERS_RUN", self.run.path())
            .output();
    }
}
