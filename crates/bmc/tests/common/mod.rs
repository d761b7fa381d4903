//! Real peers for the bmc tests: a private OpenIPMI `ipmi_sim` per test (started with the shared peers
//! script on a per-test loopback address, so power cycles and SEL changes never disturb another test),
//! the shared sushy-emulator / sushy-static from `$OOB_PEERS_RUN/redfish/endpoints.txt`, and a private
//! sushy-static serving the DMTF `public-rackmount1` mockup. Missing peers skip loudly, or fail with
//! `OOB_PEERS_REQUIRED=1`.

#![allow(dead_code)]

pub mod corpus;

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use lifeline_bmc::*;
use lifeline_ipmi::client::Timing;
use lifeline_test_utils::{peer_endpoints, unique_loopback};
use lifeline_types::BmcProtocol;

pub use lifeline_test_utils::{IPMI_SIM_BASE_PORT as BASE_PORT, IpmiSims, have, peers_dir};

pub fn skip<T>(why: String) -> Option<T> {
    lifeline_test_utils::skip_or_fail(why)
}

/// A Lifeline target for an ipmi_sim instance.
pub trait SimTarget {
    fn target(&self, i: u16, name: &str) -> BmcTarget;
}

impl SimTarget for IpmiSims {
    fn target(&self, i: u16, name: &str) -> BmcTarget {
        let mut t = BmcTarget::new(name, self.ip.to_string(), BmcProtocol::Ipmi, "admin", "password");
        t.ipmi_port = BASE_PORT + i;
        t
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
            ..PowerOptions::default()
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
    static_mockup(&mockup)
}

/// A private sushy-static serving one of the vendor-shaped mockups of `crates/redfish/tests/mockups`
/// (`hpe-ilo5`, `openbmc`).
pub fn vendor_static(name: &str) -> Option<Static> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../redfish/tests/mockups").join(name);
    assert!(dir.join("index.json").is_file(), "mockup {} missing", dir.display());
    static_mockup(&dir)
}

/// A private sushy-static (GET only; POSTs answer 204 and change nothing) serving `mockup` over plain HTTP.
pub fn static_mockup(mockup: &std::path::Path) -> Option<Static> {
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
        .arg(mockup)
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

/// A UDP relay in front of a BMC (for loss a peer cannot inject itself). `sent`: requests forwarded;
/// `dropped`: datagrams lost on purpose. Dropping the relay stops it.
pub struct Relay {
    pub addr: std::net::SocketAddr,
    pub sent: Arc<std::sync::atomic::AtomicUsize>,
    pub dropped: Arc<std::sync::atomic::AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `lose(datagram, towards_bmc, already_dropped)`: whether to lose this datagram.
pub async fn relay_with(
    upstream: std::net::SocketAddr,
    mut lose: impl FnMut(&[u8], bool, usize) -> bool + Send + 'static,
) -> Relay {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let front = tokio::net::UdpSocket::bind((upstream.ip(), 0)).await.unwrap();
    let back = tokio::net::UdpSocket::bind((upstream.ip(), 0)).await.unwrap();
    back.connect(upstream).await.unwrap();
    let addr = front.local_addr().unwrap();
    let (sent, dropped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (s, d) = (sent.clone(), dropped.clone());
    let task = tokio::spawn(async move {
        let (mut a, mut b) = (vec![0u8; 2048], vec![0u8; 2048]);
        let mut client = None;
        loop {
            tokio::select! {
                r = front.recv_from(&mut a) => if let Ok((n, from)) = r {
                    client = Some(from);
                    if lose(&a[..n], true, d.load(Ordering::Relaxed)) {
                        d.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    s.fetch_add(1, Ordering::Relaxed);
                    let _ = back.send(&a[..n]).await;
                },
                r = back.recv(&mut b) => if let (Ok(n), Some(c)) = (r, client) {
                    if lose(&b[..n], false, d.load(Ordering::Relaxed)) {
                        d.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    let _ = front.send_to(&b[..n], c).await;
                },
            }
        }
    });
    Relay { addr, sent, dropped, task }
}

/// A relay losing `loss_percent` of the datagrams in each direction (xorshift64 from `seed`: reproducible).
pub async fn lossy_relay(upstream: std::net::SocketAddr, loss_percent: u64, seed: u64) -> Relay {
    let mut state = seed | 1;
    relay_with(upstream, move |_, _, _| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % 100 < loss_percent
    })
    .await
}

/// A simulated fleet of one server per flavor, named `n-<flavor>`.
pub struct Sim {
    pub fleet: lifeline_sim::RunningFleet,
}

pub async fn sim(flavors: &[lifeline_sim::RedfishFlavor]) -> Sim {
    use lifeline_sim::{BmcSpec, Fleet, FleetSpec, GpuSpec, ServerSpec, SimOptions};
    let servers = flavors
        .iter()
        .map(|f| ServerSpec {
            name: format!("n-{}", f.as_str()),
            role: "gpu-node".into(),
            bmc: BmcSpec {
                address: std::net::IpAddr::V4(unique_loopback()),
                redfish_port: None,
                ipmi_port: None,
                username: "admin".into(),
                password: "password".into(),
                flavor: *f,
                cipher_suites: vec![],
                session_limit: None,
                replay: None,
            },
            gpus: GpuSpec { count: 1, ..GpuSpec::default() },
            rails: Vec::new(),
            powered_on: true,
        })
        .collect();
    let fleet = Fleet::start(FleetSpec { servers, switches: vec![] }, SimOptions::for_tests()).await.unwrap();
    Sim { fleet }
}

impl Sim {
    pub fn target(&self, name: &str, p: BmcProtocol) -> BmcTarget {
        use lifeline_sim::EndpointKind;
        let kind = if p == BmcProtocol::Ipmi { EndpointKind::Ipmi } else { EndpointKind::Redfish };
        let e = self.fleet.endpoint(name, kind).unwrap_or_else(|| panic!("{name} has no {p} endpoint"));
        let mut t = BmcTarget::new(format!("{name}-{p}"), e.address.to_string(), p, &e.username, &e.password);
        t.redfish_port = e.port;
        t.ipmi_port = e.port;
        t
    }
}

/// A pool that pins each BMC's certificate on first use (the simulator's are self-signed).
pub fn pin_pool() -> BmcPool {
    let mut o = quick_options();
    o.tls = TlsPolicy::Pin(Arc::new(lifeline_redfish::MemoryPinStore::new()));
    pool_with(o).0
}
