//! Real peers for the bmc tests: a private OpenIPMI `ipmi_sim` per test (started with the shared peers
//! script on a per-test loopback address, so power cycles and SEL changes never disturb another test),
//! the shared sushy-emulator / sushy-static from `$OOB_PEERS_RUN/redfish/endpoints.txt`, and a private
//! sushy-static serving the DMTF `public-rackmount1` mockup. Missing peers skip loudly, or fail with
//! `OOB_PEERS_REQUIRED=1`.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use lifeline_bmc::*;
use lifeline_ipmi::client::Timing;
use lifeline_test_utils::{peer_endpoints, peers_required, unique_loopback};
use lifeline_types::BmcProtocol;

pub fn skip<T>(why: String) -> Option<T> {
    if peers_required() {
        panic!("peer required (OOB_PEERS_REQUIRED=1): {why}");
    }
    eprintln!("SKIP: {why}");
    None
}

pub fn have(tool: &str) -> bool {
    Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().is_ok_and(|o| o.status.success())
}

pub fn peers_dir() -> Option<PathBuf> {
    let mut c = Vec::new();
    if let Ok(d) = std::env::var("OOB_PEERS_DIR") {
        c.push(PathBuf::from(d));
    }
    let root = lifeline_test_utils::workspace_root();
    c.push(root.join("shared/peers"));
    c.push(root.join("../shared/peers"));
    c.into_iter().find(|d| d.join("start-ipmi-sim.sh").is_file())
}

/// `count` ipmi_sim instances on one private loopback address, UDP ports 6230.. .
pub struct IpmiSims {
    run: tempfile::TempDir,
    script_dir: PathBuf,
    pub ip: IpAddr,
    pub count: u16,
}

pub const BASE_PORT: u16 = 6230;

impl IpmiSims {
    pub fn start(count: u16) -> Option<Self> {
        let Some(script_dir) = peers_dir() else {
            return skip("shared/peers/start-ipmi-sim.sh not found (set OOB_PEERS_DIR)".into());
        };
        for t in ["ipmi_sim", "sdrcomp", "socat"] {
            if !have(t) {
                return skip(format!("{t} not installed (apt-get install openipmi socat)"));
            }
        }
        let ip = unique_loopback();
        let run = tempfile::Builder::new().prefix("oob-peers-bmc-test").tempdir().expect("tempdir");
        let out = Command::new(script_dir.join("start-ipmi-sim.sh"))
            .arg(count.to_string())
            .arg(format!("{ip}:{BASE_PORT}"))
            .env("OOB_PEERS_RUN", run.path())
            .output()
            .expect("run start-ipmi-sim.sh");
        assert!(
            out.status.success(),
            "start-ipmi-sim.sh failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Some(Self { run, script_dir, ip: ip.into(), count })
    }

    pub fn addr(&self, i: u16) -> SocketAddr {
        SocketAddr::new(self.ip, BASE_PORT + i)
    }

    pub fn dir(&self, i: u16) -> PathBuf {
        self.run.path().join(format!("ipmi/bmc{}", i + 1))
    }

    /// Every Chassis Control the BMC executed (one line per `set`).
    pub fn chassis_log(&self, i: u16) -> Vec<String> {
        std::fs::read_to_string(self.dir(i).join("chassis.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| l.split_whitespace().skip(2).collect::<Vec<_>>().join(" "))
            .collect()
    }

    pub fn target(&self, i: u16, name: &str) -> BmcTarget {
        let mut t = BmcTarget::new(name, self.ip.to_string(), BmcProtocol::Ipmi, "admin", "password");
        t.ipmi_port = BASE_PORT + i;
        t
    }

    /// A command on ipmi_sim's emulator console (TCP 9700+i), e.g. `sensor_set_value 0x20 0 3 0x5c 1`.
    pub fn emucon(&self, i: u16, cmd: &str) -> String {
        let mut s = TcpStream::connect((self.ip, 9700 + i)).expect("emulator console");
        s.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
        let mut buf = [0u8; 4096];
        let _ = s.read(&mut buf);
        s.write_all(format!("{cmd}\n").as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let n = s.read(&mut buf).unwrap_or(0);
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    /// `ipmitool -I lanplus -C 3 ... ARGS` against instance `i` (blocking).
    pub fn ipmitool(&self, i: u16, args: &[&str]) -> String {
        let out = Command::new("ipmitool")
            .args([
                "-I",
                "lanplus",
                "-C",
                "3",
                "-H",
                &self.ip.to_string(),
                "-p",
                &(BASE_PORT + i).to_string(),
            ])
            .args(["-U", "admin", "-P", "password"])
            .args(args)
            .output()
            .expect("run ipmitool");
        assert!(out.status.success(), "ipmitool {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn run_dir(&self) -> &Path {
        self.run.path()
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

/// Fast retransmission for loopback peers (still bounded).
pub fn quick_options() -> BmcOptions {
    BmcOptions {
        ipmi_timing: Timing {
            attempt_timeout: Duration::from_millis(300),
            max_attempt_timeout: Duration::from_secs(1),
            attempts: 4,
        },
        probe_timeout: Duration::from_millis(600),
        op_timeout: Duration::from_secs(30),
        power: PowerOptions {
            timeout: Duration::from_secs(20),
            poll_interval: Duration::from_millis(100),
            cycle_grace: Duration::from_secs(5),
            cycle_off_time: Duration::from_secs(1),
        },
        ..BmcOptions::default()
    }
}

pub fn pool_with(opts: BmcOptions) -> (BmcPool, Arc<MemoryAuditSink>) {
    let audit = Arc::new(MemoryAuditSink::new());
    (BmcPool::new(opts, audit.clone()), audit)
}

pub struct Sushy {
    pub url: String,
    pub address: String,
    pub port: u16,
    pub user: String,
    pub password: String,
    pub ca: PathBuf,
    pub static_url: Option<String>,
}

/// The shared sushy peers of `$OOB_PEERS_RUN`.
pub fn sushy() -> Option<Sushy> {
    let rows = peer_endpoints("redfish")?;
    let r = rows.iter().find(|r| r[0] == "sushy-emulator").expect("sushy-emulator row");
    let u = r[1].trim_start_matches("https://");
    let hostport = u.split('/').next().unwrap_or(u);
    let (host, port) = hostport.rsplit_once(':').expect("host:port");
    Some(Sushy {
        url: r[1].clone(),
        address: host.to_owned(),
        port: port.parse().unwrap(),
        user: r[2].clone(),
        password: r[3].clone(),
        ca: PathBuf::from(&r[4]),
        static_url: rows.iter().find(|r| r[0] == "sushy-static").map(|r| r[1].clone()),
    })
}

impl Sushy {
    pub fn target(&self, name: &str, system: &str) -> BmcTarget {
        let mut t = BmcTarget::new(name, &self.address, BmcProtocol::Redfish, &self.user, &self.password);
        t.redfish_port = self.port;
        t.system = Some(system.to_owned());
        t
    }
}

/// `http://ip:port` of a sushy-static serving `host:port` as a plain-HTTP target.
pub fn http_target(name: &str, url: &str) -> BmcTarget {
    let hp = url.trim_start_matches("http://");
    let hp = hp.split('/').next().unwrap_or(hp);
    let (h, p) = hp.rsplit_once(':').expect("host:port");
    let mut t = BmcTarget::new(name, h, BmcProtocol::Redfish, "", "");
    t.redfish_port = p.parse().unwrap();
    t.redfish_tls = false;
    t
}

pub struct Static(Child, pub String);

impl Drop for Static {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A private sushy-static serving the DMTF `public-rackmount1` mockup.
pub fn dmtf_static() -> Option<Static> {
    let mockup = peers_dir()
        .map(|d| d.join("redfish/dmtf-mockups/public-rackmount1"))
        .filter(|m| m.join("index.json").is_file());
    let Some(mockup) = mockup else {
        return skip("DMTF mockup public-rackmount1 not found (set OOB_PEERS_DIR)".into());
    };
    let bin = std::env::var("OOB_PEERS_VENV")
        .map(|v| PathBuf::from(v).join("bin/sushy-static"))
        .ok()
        .filter(|p| p.is_file())
        .or_else(|| have("sushy-static").then(|| PathBuf::from("sushy-static")));
    let Some(bin) = bin else {
        return skip("sushy-static not found (set OOB_PEERS_VENV)".into());
    };
    let ip = unique_loopback();
    let port = std::net::TcpListener::bind((ip, 0)).unwrap().local_addr().unwrap().port();
    let child = Command::new(&bin)
        .args(["-i", &ip.to_string(), "-p", &port.to_string(), "-m"])
        .arg(&mockup)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn sushy-static");
    let s = Static(child, format!("http://{ip}:{port}"));
    for _ in 0..100 {
        if TcpStream::connect((ip, port)).is_ok() {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("sushy-static did not listen on {ip}:{port}");
}
