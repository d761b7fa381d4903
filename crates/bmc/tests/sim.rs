//! `lifeline-bmc` against Lifeline's simulated fleet (`lifeline-sim`, which shares only wire/schema types with
//! the clients): every Redfish flavor over Redfish and IPMI, both IPMI cipher suites, a changed TLS
//! certificate, the session limit (`sessions-full`, and no sessions left behind), and a power cycle under
//! 30 % UDP loss executed exactly once.
//!
//! The fleet's Redfish listeners come from `Fleet::start`; its IPMI responder (`lifeline_sim::ipmi::serve`)
//! is used from the fleet's endpoint list when the fleet serves IPMI itself, else started here on the same
//! host model.

mod common;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use common::{Relay, relay_with};
use lifeline_bmc::*;
use lifeline_ipmi::client::Timing;
use lifeline_redfish::{MemoryPinStore, PinStore};
use lifeline_sim::host::Timings;
use lifeline_sim::{
    BmcSpec, EndpointKind, Fault, Fleet, FleetSpec, GpuSpec, RedfishFlavor, RunningFleet, ServerSpec,
    SimOptions,
};
use lifeline_test_utils::unique_loopback;
use lifeline_types::{BmcProtocol, Health, PowerAction, PowerState};
use tokio_util::sync::CancellationToken;

struct Sim {
    fleet: RunningFleet,
    ipmi: Vec<(String, SocketAddr)>,
    cancel: CancellationToken,
    store: Arc<MemoryPinStore>,
}

impl Drop for Sim {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

fn server(name: &str, flavor: RedfishFlavor, suites: Vec<u8>, limit: Option<usize>) -> ServerSpec {
    ServerSpec {
        name: name.into(),
        role: "gpu-node".into(),
        bmc: BmcSpec {
            address: IpAddr::V4(unique_loopback()),
            redfish_port: None,
            ipmi_port: None,
            username: "admin".into(),
            password: "password".into(),
            flavor,
            cipher_suites: suites,
            session_limit: limit,
            replay: None,
        },
        gpus: GpuSpec { count: 2, ..GpuSpec::default() },
        rails: Vec::new(),
        powered_on: true,
    }
}

/// Fast boots, but an off phase long enough to be observed.
fn timings() -> Timings {
    Timings {
        post: Duration::from_millis(200),
        bootloader: Duration::from_millis(50),
        kernel: Duration::from_millis(100),
        userspace: Duration::from_millis(50),
        shutdown: Duration::from_millis(200),
        cycle_off: Duration::from_millis(1200),
    }
}

async fn start(servers: Vec<ServerSpec>) -> Sim {
    start_with(servers, timings(), 1.0).await
}

async fn start_with(servers: Vec<ServerSpec>, timings: Timings, time_scale: f64) -> Sim {
    let opts = SimOptions { time_scale, timings, ..SimOptions::for_tests() };
    let fleet = Fleet::start(FleetSpec { servers: servers.clone(), switches: vec![] }, opts)
        .await
        .expect("fleet starts");
    let cancel = CancellationToken::new();
    let mut ipmi = Vec::new();
    for s in &servers {
        let addr = match fleet.endpoint(&s.name, EndpointKind::Ipmi) {
            Some(e) => SocketAddr::new(e.address, e.port),
            None => {
                let sock = tokio::net::UdpSocket::bind((s.bmc.address, 0)).await.unwrap();
                let addr = sock.local_addr().unwrap();
                let host = fleet.host(&s.name).unwrap();
                tokio::spawn(lifeline_sim::ipmi::serve(sock, host, cancel.clone()));
                addr
            }
        };
        ipmi.push((s.name.clone(), addr));
    }
    Sim { fleet, ipmi, cancel, store: Arc::new(MemoryPinStore::new()) }
}

impl Sim {
    fn redfish(&self, name: &str) -> BmcTarget {
        let e = self.fleet.endpoint(name, EndpointKind::Redfish).unwrap();
        let mut t = BmcTarget::new(
            format!("{name}-rf"),
            e.address.to_string(),
            BmcProtocol::Redfish,
            &e.username,
            &e.password,
        );
        t.redfish_port = e.port;
        t
    }
    fn ipmi(&self, name: &str) -> BmcTarget {
        let addr = self.ipmi.iter().find(|(n, _)| n == name).unwrap().1;
        let mut t = BmcTarget::new(
            format!("{name}-ipmi"),
            addr.ip().to_string(),
            BmcProtocol::Ipmi,
            "admin",
            "password",
        );
        t.ipmi_port = addr.port();
        t
    }
    fn pool(&self) -> (BmcPool, Arc<MemoryAuditSink>) {
        let audit = Arc::new(MemoryAuditSink::new());
        (BmcPool::new(options(self.store.clone()), audit.clone()), audit)
    }
}

fn options(store: Arc<MemoryPinStore>) -> BmcOptions {
    BmcOptions {
        tls: TlsPolicy::Pin(store),
        ipmi_timing: Timing {
            attempt_timeout: Duration::from_millis(250),
            max_attempt_timeout: Duration::from_secs(1),
            attempts: 4,
        },
        probe_timeout: Duration::from_millis(800),
        op_timeout: Duration::from_secs(30),
        power: PowerOptions {
            timeout: Duration::from_secs(20),
            poll_interval: Duration::from_millis(100),
            cycle_grace: Duration::from_secs(4),
            cycle_off_time: Duration::from_millis(300),
            ..PowerOptions::default()
        },
        ..BmcOptions::default()
    }
}

#[tokio::test]
async fn every_flavor_over_redfish_and_ipmi() {
    let servers: Vec<ServerSpec> =
        RedfishFlavor::ALL.iter().map(|f| server(&format!("n-{}", f.as_str()), *f, vec![], None)).collect();
    let sim = start(servers).await;
    let (pool, _) = sim.pool();
    for f in RedfishFlavor::ALL {
        let name = format!("n-{}", f.as_str());
        for t in [sim.redfish(&name), sim.ipmi(&name)] {
            let what = format!("{f} over {}", t.protocol);
            let bmc = pool.bmc(t);
            assert_eq!(
                bmc.power_state().await.unwrap_or_else(|e| panic!("{what}: {}", error_chain(&e))),
                PowerState::On,
                "{what}"
            );
            let h = bmc.health().await.unwrap_or_else(|e| panic!("{what}: {}", error_chain(&e)));
            assert!(!h.sensors.is_empty(), "{what}: {h:#?}");
            assert!(h.sensors.iter().any(|s| s.reading.is_some() && s.units.is_some()), "{what}: {h:#?}");
            bmc.events(5).await.unwrap_or_else(|e| panic!("{what}: {}", error_chain(&e)));
            let inv = bmc.inventory().await.unwrap_or_else(|e| panic!("{what}: {}", error_chain(&e)));
            assert!(inv.bmc_firmware.is_some(), "{what}: {inv:#?}");
            // Redfish names the manufacturer; IPMI gives an IANA number (0 for the generic flavor).
            assert!(inv.manufacturer.is_some() || inv.iana == Some(0), "{what}: {inv:#?}");
            let r = bmc
                .power(PowerAction::Cycle, None)
                .await
                .unwrap_or_else(|e| panic!("{what}: {}", error_chain(&e)));
            assert!(r.confirmed, "{what}: {r:#?}");
            assert!(
                r.transitions.iter().any(|t| t.state == PowerState::Off),
                "{what}: off phase observed: {r:#?}"
            );
        }
    }
}

#[tokio::test]
async fn both_cipher_suites() {
    let sim = start(vec![
        server("s3", RedfishFlavor::Generic, vec![3], None),
        server("s17", RedfishFlavor::Generic, vec![17], None),
    ])
    .await;
    let (pool, _) = sim.pool();
    for (name, suite) in [("s3", 3u8), ("s17", 17)] {
        assert_eq!(pool.bmc(sim.ipmi(name)).power_state().await.unwrap(), PowerState::On, "{name}");
        let rows = pool
            .hygiene_audit(
                vec![sim.ipmi(name)],
                &hygiene::HygieneOptions { check_defaults: false, ..Default::default() },
            )
            .await;
        assert_eq!(rows[0].ipmi.as_ref().unwrap().cipher_suites, vec![suite], "{:#?}", rows[0]);
        // Insisting on the other suite fails cleanly.
        let mut t = sim.ipmi(name);
        t.cipher_suites = Some(vec![if suite == 3 { 17 } else { 3 }]);
        let e = pool.bmc(t).power_state().await.unwrap_err();
        assert!(matches!(e, BmcError::Ipmi { .. }), "{}", error_chain(&e));
    }
}

#[tokio::test]
async fn changed_certificate_is_refused() {
    let sim = start(vec![server("c1", RedfishFlavor::IdracLike, vec![], None)]).await;
    let (pool, audit) = sim.pool();
    let bmc = pool.bmc(sim.redfish("c1"));
    assert_eq!(bmc.power_state().await.unwrap(), PowerState::On);
    let pinned = sim.store.get_pin("c1-rf").await.unwrap().expect("pinned on first use");
    sim.fleet.devices().inject("c1", &"tls-cert-change".parse::<Fault>().unwrap()).await.unwrap();
    let e = bmc.power(PowerAction::Off, None).await.unwrap_err();
    let text = error_chain(&e);
    assert!(text.contains("certificate changed") && text.contains(&pinned.to_string()), "{text}");
    assert_eq!(sim.fleet.host("c1").unwrap().power_state(), PowerState::On, "nothing was done");
    // The attempt is in the audit log with its failure.
    assert!(audit.rows().iter().any(|r| matches!(r, AuditRow::Outcome(o) if !o.ok)));
    // The hygiene audit sees the new certificate as self-signed.
    let rows = pool
        .hygiene_audit(
            vec![sim.redfish("c1")],
            &hygiene::HygieneOptions { check_defaults: false, ..Default::default() },
        )
        .await;
    let cert = rows[0].certificate.as_ref().unwrap();
    assert!(cert.self_signed && cert.fingerprint != pinned.to_string(), "{cert:#?}");
}

#[tokio::test]
async fn session_limit_and_no_sessions_left_behind() {
    let sim = start(vec![server("l1", RedfishFlavor::IloLike, vec![], Some(2))]).await;
    let (pool, _) = sim.pool();
    let rf = pool.bmc(sim.redfish("l1"));
    let ipmi = pool.bmc(sim.ipmi("l1"));
    // Many more operations than the limit of 2, concurrently: each one logs out / closes.
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..12 {
        let (rf, ipmi) = (rf.clone(), ipmi.clone());
        set.spawn(async move { (rf.power_state().await.is_ok(), ipmi.power_state().await.is_ok()) });
    }
    let mut ok = 0;
    while let Some(r) = set.join_next().await {
        let (a, b) = r.unwrap();
        ok += usize::from(a) + usize::from(b);
    }
    assert!(ok >= 12, "most operations succeed within the limit ({ok}/24)");
    for _ in 0..8 {
        rf.power_state().await.unwrap();
        ipmi.power_state().await.unwrap();
    }
    assert_eq!(sim.fleet.redfish("l1").unwrap().session_count(), 0, "every Redfish session deleted");

    // A BMC whose session table is full: a clear error naming it, within the operation timeout.
    sim.fleet.devices().inject("l1", &Fault::SessionsFull).await.unwrap();
    let t0 = std::time::Instant::now();
    let e = ipmi.power_state().await.unwrap_err();
    assert!(error_chain(&e).contains("l1-ipmi"), "{}", error_chain(&e));
    assert!(t0.elapsed() < Duration::from_secs(30));
    sim.fleet.devices().clear("l1").await.unwrap();
    assert_eq!(ipmi.power_state().await.unwrap(), PowerState::On);
}

#[tokio::test]
async fn cycle_under_30_percent_udp_loss_runs_exactly_once() {
    let sim = start(vec![server("u1", RedfishFlavor::SupermicroLike, vec![], None)]).await;
    let host = sim.fleet.host("u1").unwrap();
    let pool = lossy_pool(&sim);
    let bmc = pool.bmc(sim.ipmi("u1"));
    assert_eq!(bmc.power_state().await.unwrap(), PowerState::On);
    sim.fleet.devices().inject("u1", &"udp-loss=30".parse::<Fault>().unwrap()).await.unwrap();
    let mut events = host.subscribe_events();
    let boots = host.boots();
    let r = bmc.power(PowerAction::Cycle, Some("cycle-1".into())).await.unwrap();
    assert!(r.confirmed, "{r:#?}");
    assert_eq!(r.confirmation, Confirmation::TransitionObserved, "{r:#?}");
    // Let any straggling retransmission land, then count what the host actually did.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut offs = 0;
    while let Ok(e) = events.try_recv() {
        if e == lifeline_sim::HostEvent::Power(PowerState::Off) {
            offs += 1;
        }
    }
    assert_eq!(offs, 1, "exactly one power cycle executed: {r:#?}");
    assert_eq!(host.boots(), boots + 1);
    let again = bmc.power(PowerAction::Cycle, Some("cycle-1".into())).await.unwrap();
    assert!(again.replayed);
    assert_eq!(host.boots(), boots + 1);
    // Health is many reads; at 30 % loss both ways one of them may still run out of its budget on a loaded
    // machine. What matters is that health is readable over this link, so a read may be repeated (a read
    // has no effect on the host).
    let mut h = bmc.health().await.unwrap();
    for _ in 0..2 {
        if h.health != Health::Unknown {
            break;
        }
        h = bmc.health().await.unwrap();
    }
    assert_ne!(h.health, Health::Unknown, "{h:#?}");
}

/// The sweep's health is the BMC's own rollup (no sensor read), and it agrees with what the simulated host
/// computes from its sensors: an uncorrectable GPU ECC error makes the node critical. `Bmc::health` still
/// lists every sensor, and no session is left behind.
/// The CLI's sweep (rollup + 3 newest events) of every flavor, twice, the second time from a new pool
/// (a new process) that only shares the first one's memory: the same rows from the remembered paths, read
/// concurrently over one session per BMC, and no session left on any BMC either time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweep_with_events_from_remembered_paths_leaves_no_session() {
    let servers =
        RedfishFlavor::ALL.iter().map(|f| server(&format!("e-{}", f.as_str()), *f, vec![], None)).collect();
    let sim = start(servers).await;
    let names: Vec<String> = RedfishFlavor::ALL.iter().map(|f| format!("e-{}", f.as_str())).collect();
    for n in &names {
        sim.fleet.devices().inject(n, &"gpu-ecc=1".parse::<Fault>().unwrap()).await.unwrap();
    }
    let memory = Arc::new(MemoryProtocolMemory::new());
    let opts = SweepOptions { events: 3, ..SweepOptions::default() };
    let mut first = Vec::new();
    for round in 0..2 {
        let pool = BmcPool::with_memory(
            options(sim.store.clone()),
            Arc::new(MemoryAuditSink::new()),
            memory.clone(),
        );
        let rows = pool.sweep(names.iter().map(|n| sim.redfish(n)).collect(), &opts, |_, _| {}).await;
        for (row, n) in rows.iter().zip(&names) {
            assert!(row.ok() && row.health == Some(Health::Critical), "round {round}: {row:#?}");
            assert!(!row.events.is_empty(), "round {round}: {n}: the ECC event: {row:#?}");
            assert_eq!(sim.fleet.redfish(n).unwrap().session_count(), 0, "round {round}: {n}: logged out");
        }
        let seen: Vec<_> = rows.iter().map(|r| (r.power, r.health, r.events.clone())).collect();
        if round == 0 {
            first = seen;
        } else {
            assert_eq!(seen, first, "the remembered paths read the same");
        }
        let remembered = memory.recall_redfish_resources().await.unwrap();
        for n in &names {
            assert!(!remembered[&format!("{n}-rf")].logs.is_empty(), "{n}: {remembered:#?}");
        }
    }
}

#[tokio::test]
async fn sweep_health_is_the_bmc_rollup() {
    let sim = start(vec![
        server("r-bad", RedfishFlavor::IdracLike, vec![], None),
        server("r-ok", RedfishFlavor::Generic, vec![], None),
    ])
    .await;
    sim.fleet.devices().inject("r-bad", &"gpu-ecc=1".parse::<Fault>().unwrap()).await.unwrap();
    let (pool, _) = sim.pool();
    let opts = SweepOptions { events: 0, ..SweepOptions::default() };
    let rows = pool.sweep(vec![sim.redfish("r-bad"), sim.redfish("r-ok")], &opts, |_, _| {}).await;
    for (row, name) in rows.iter().zip(["r-bad", "r-ok"]) {
        let sim_view =
            sim.fleet.host(name).unwrap().sensors().iter().fold(Health::Ok, |h, s| h.worst(s.health));
        assert!(row.ok(), "{row:#?}");
        assert_eq!(row.health, Some(sim_view), "{name}: {row:#?}");
        assert_eq!(row.power, Some(PowerState::On), "{name}");
        assert_eq!(row.sensors, 0, "{name}: the rollup reads no sensor");
        assert_eq!(sim.fleet.redfish(name).unwrap().session_count(), 0, "{name}: logged out");
    }
    assert_eq!(rows[0].health, Some(Health::Critical));
    assert!(
        rows[0].alerts.iter().any(|a| a.contains("/Systems/") && a.contains("critical")),
        "{:#?}",
        rows[0]
    );
    assert_eq!(rows[1].health, Some(Health::Ok));
    assert!(rows[1].alerts.is_empty(), "{:#?}", rows[1]);

    // The full read agrees, and names the sensor.
    let full = pool.bmc(sim.redfish("r-bad")).health().await.unwrap();
    assert!(!full.rollup_only && full.health == Health::Critical, "{full:#?}");
    assert!(full.sensors.iter().any(|s| s.name == "GPU1 Temp" && s.health == Health::Critical), "{full:#?}");
    // Power supplies come from legacy Power although the chassis has a Sensors collection.
    assert!(full.sensors.iter().any(|s| s.kind == "PowerSupply"), "{full:#?}");

    // Every sensor on request, in the sweep too; the power state comes from the system document the sensor
    // read reads (reading it again cost one GET more per BMC).
    let all = SweepOptions { all_sensors: true, ..opts };
    let bmc = sim.fleet.redfish("r-bad").unwrap();
    let before = bmc.requests();
    let rows = pool.sweep(vec![sim.redfish("r-bad")], &all, |_, _| {}).await;
    let gets = bmc.requests().get - before.get;
    // The system, Chassis, the chassis' legacy Power and its expanded Sensors (5 when the power part read the
    // system again).
    assert_eq!(gets, 4, "every-sensor sweep GETs");
    assert_eq!(rows[0].power, Some(PowerState::On), "{:#?}", rows[0]);
    assert_eq!(rows[0].health, Some(Health::Critical), "{:#?}", rows[0]);
    assert!(
        rows[0].sensors > 10 && rows[0].alerts.iter().any(|a| a.starts_with("GPU1 Temp")),
        "{:#?}",
        rows[0]
    );
}

/// A UDP relay between a client and a simulated BMC that can drop chosen BMC replies and counts the
/// client's datagrams (the sim is the real responder; the relay only loses packets, as a network does).
/// `drop_reply(datagram, already_dropped)`: whether to lose this reply from the BMC.
async fn relay(upstream: SocketAddr, drop_reply: impl Fn(&[u8], usize) -> bool + Send + 'static) -> Relay {
    relay_with(upstream, move |b, towards_bmc, dropped| !towards_bmc && drop_reply(b, dropped)).await
}

/// RMCP+ Open Session Response (auth type 6, payload type 0x11).
fn is_open_session_response(b: &[u8]) -> bool {
    b.len() > 6 && b[4] == 0x06 && b[5] & 0x3F == 0x11
}

/// Session-less IPMI 1.5 Get Channel Cipher Suites reply (cmd 0x54 at offset 14 + 5).
fn is_cipher_suites_reply(b: &[u8]) -> bool {
    b.len() > 20 && b[4] == 0x00 && b[19] == 0x54
}

/// Lost Open Session replies are retransmitted, not taken for a refusal of suite 17: with the BMC's suite
/// list known, and with the list request unanswered too (the BMC then has to stay silent through every
/// retransmission before 3 is tried).
#[tokio::test]
async fn lost_open_session_replies_do_not_cause_a_cipher_suite_fallback() {
    let sim = start(vec![server("os1", RedfishFlavor::Generic, vec![17, 3], None)]).await;
    let upstream = sim.ipmi.iter().find(|(n, _)| n == "os1").unwrap().1;
    let mut cfg = lifeline_ipmi::ClientConfig::new("admin", "password");
    cfg.timing = Timing {
        attempt_timeout: Duration::from_millis(100),
        max_attempt_timeout: Duration::from_millis(300),
        attempts: 6,
    };
    for drop_list in [false, true] {
        let r = relay(upstream, move |b, dropped| {
            (is_open_session_response(b) && dropped < 3) || (drop_list && is_cipher_suites_reply(b))
        })
        .await;
        let s = lifeline_ipmi::Session::open(r.addr, &cfg).await.expect("session opens");
        assert_eq!(s.cipher_suite(), lifeline_ipmi::CipherSuite::Suite17, "drop_list={drop_list}");
        assert!(r.dropped.load(std::sync::atomic::Ordering::Relaxed) >= 3, "replies were lost");
        s.device_id().await.unwrap();
        s.close().await.unwrap();
    }
    // A BMC that lacks 17 still gets a session (it lists 3 only: no Open Session for 17 is sent).
    let sim3 = start(vec![server("os3", RedfishFlavor::Generic, vec![3], None)]).await;
    let t0 = std::time::Instant::now();
    let s = lifeline_ipmi::Session::open(sim3.ipmi[0].1, &cfg).await.unwrap();
    assert_eq!(s.cipher_suite(), lifeline_ipmi::CipherSuite::Suite3);
    assert!(t0.elapsed() < Duration::from_secs(1), "no Open Session timeout for 17: {:?}", t0.elapsed());
    s.close().await.unwrap();
}

/// Options for a lossy link: short, many retransmissions.
fn lossy_options(sim: &Sim) -> BmcOptions {
    let mut opts = options(sim.store.clone());
    opts.ipmi_timing = Timing {
        attempt_timeout: Duration::from_millis(100),
        max_attempt_timeout: Duration::from_millis(400),
        attempts: 14,
    };
    opts
}

fn lossy_pool(sim: &Sim) -> BmcPool {
    BmcPool::new(lossy_options(sim), Arc::new(MemoryAuditSink::new()))
}

/// At 30 % UDP loss each way a sweep still returns power, health and events within its per-BMC bound, and
/// the SDR is read from the BMC once for repeated sweeps in one process.
#[tokio::test]
async fn sweep_under_30_percent_udp_loss_returns_power_and_health() {
    let sim = start(vec![server("sl1", RedfishFlavor::Generic, vec![], None)]).await;
    sim.fleet.devices().inject("sl1", &"udp-loss=30".parse::<Fault>().unwrap()).await.unwrap();
    let pool = lossy_pool(&sim);
    let opts = SweepOptions { per_bmc_timeout: Duration::from_secs(30), ..SweepOptions::default() };
    for i in 0..3 {
        let t0 = std::time::Instant::now();
        let rows = pool.sweep(vec![sim.ipmi("sl1")], &opts, |_, _| {}).await;
        let row = &rows[0];
        assert_eq!(row.power, Some(PowerState::On), "sweep {i}: {row:#?}");
        assert!(row.health.is_some() && row.sensors > 0, "sweep {i}: {row:#?}");
        assert!(!row.errors.iter().any(|e| e.starts_with("connect")), "sweep {i}: {row:#?}");
        assert!(t0.elapsed() < Duration::from_secs(30), "sweep {i} took {:?}", t0.elapsed());
    }
    assert_eq!(pool.sdr_cache_stats(), (2, 1), "SDR read once, then served from the cache");
}

/// The second sweep of a BMC sends far fewer datagrams: the SDR comes from the pool's cache (one Get SDR
/// Repository Info instead of one Get SDR per record). Counted on the wire, not by the client.
#[tokio::test]
async fn second_sweep_reads_the_sdr_from_the_cache() {
    let sim = start(vec![server("sc1", RedfishFlavor::Generic, vec![], None)]).await;
    let r = relay(sim.ipmi[0].1, |_, _| false).await;
    let mut t = sim.ipmi("sc1");
    t.ipmi_port = r.addr.port();
    t.address = r.addr.ip().to_string();
    let records = lifeline_sim::host::Host::sensors(&sim.fleet.host("sc1").unwrap()).len();
    let (pool, _) = sim.pool();
    let opts = SweepOptions { events: 0, ..SweepOptions::default() };
    let mut sent = Vec::new();
    for _ in 0..2 {
        let before = r.sent.load(std::sync::atomic::Ordering::Relaxed);
        let rows = pool.sweep(vec![t.clone()], &opts, |_, _| {}).await;
        assert!(rows[0].ok() && rows[0].health.is_some(), "{:#?}", rows[0]);
        sent.push(r.sent.load(std::sync::atomic::Ordering::Relaxed) - before);
    }
    assert!(records >= 4, "the sim lists sensors: {records}");
    assert!(sent[1] + records - 1 <= sent[0], "datagrams per sweep: {sent:?} with {records} SDR records");
    assert_eq!(pool.sdr_cache_stats(), (1, 1));
}

/// A part that runs out of time costs only itself: power stays in the row and the error names the part.
#[tokio::test]
async fn a_timed_out_part_keeps_what_was_read_and_names_the_part() {
    let sim = start(vec![server("tp1", RedfishFlavor::Generic, vec![], None)]).await;
    let upstream = sim.ipmi[0].1;
    // After the session is up and power read, the BMC goes silent: drop every reply once enough passed.
    let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let c = count.clone();
    let r = relay(upstream, move |_, _| c.fetch_add(1, std::sync::atomic::Ordering::Relaxed) >= 8).await;
    let mut t = sim.ipmi("tp1");
    t.ipmi_port = r.addr.port();
    // Each request retransmits for ~5 s, longer than the visit's budget: the part's bound is what ends it.
    let pool = lossy_pool(&sim);
    let opts = SweepOptions { events: 0, per_bmc_timeout: Duration::from_secs(3), ..SweepOptions::default() };
    let rows = pool.sweep(vec![t], &opts, |_, _| {}).await;
    let row = &rows[0];
    assert_eq!(row.power, Some(PowerState::On), "{row:#?}");
    assert!(row.health.is_none(), "{row:#?}");
    assert!(
        row.errors
            .iter()
            .any(|e| e.starts_with("health:") && e.contains("reading the sensors timed out after")),
        "{row:#?}"
    );
    assert!(!row.errors.iter().any(|e| e.starts_with("connect")), "{row:#?}");
    // The row says what ran out of time and how to give it more; a silent BMC earns no extension.
    assert_eq!(row.out_of_time, ["health"], "{row:#?}");
    assert!(row.hint.as_deref().is_some_and(|h| h.contains("--per-bmc-timeout")), "{row:#?}");
    assert_eq!(row.budget_ms, 3000, "{row:#?}");
}

/// Issue 16 item 7: at 30 % loss both ways, with the default retransmission timing, a budget that is
/// enough on a clean link usually runs out (the row names the parts and the option that gives more), and
/// the adaptive budget (grown from the transmissions the answered requests took, bounded by
/// `max_per_bmc_timeout`) returns the health instead.
#[tokio::test]
async fn sweep_budget_adapts_to_a_lossy_link() {
    let sim = start(vec![server("ad1", RedfishFlavor::Generic, vec![], None)]).await;
    let mut opts = options(sim.store.clone());
    opts.ipmi_timing = Timing::default();
    let pool = BmcPool::new(opts, Arc::new(MemoryAuditSink::new()));
    let budget = Duration::from_secs(8);
    let fixed =
        SweepOptions { per_bmc_timeout: budget, max_per_bmc_timeout: budget, ..SweepOptions::default() };
    let clean = pool.sweep(vec![sim.ipmi("ad1")], &fixed, |_, _| {}).await;
    assert!(clean[0].ok() && clean[0].health.is_some(), "enough on a clean link: {:#?}", clean[0]);
    sim.fleet.devices().inject("ad1", &"udp-loss=30".parse::<Fault>().unwrap()).await.unwrap();
    let rows = pool.sweep(vec![sim.ipmi("ad1")], &fixed, |_, _| {}).await;
    let row = &rows[0];
    // Usually it runs out (the loss is random): then the row says what and how to give it more.
    assert!(
        row.out_of_time.is_empty() || row.hint.as_deref().is_some_and(|h| h.contains("--per-bmc-timeout"))
    );
    // The pool remembers what the lossy visit cost, so even connecting gets a budget that fits.
    let adaptive = SweepOptions { max_per_bmc_timeout: Duration::from_secs(60), ..fixed };
    let t0 = std::time::Instant::now();
    let rows = pool.sweep(vec![sim.ipmi("ad1")], &adaptive, |_, _| {}).await;
    let row = &rows[0];
    assert!(row.transmissions_per_request.is_some_and(|t| t > 1.2), "{row:#?}");
    assert!(row.budget_ms > 8000, "{row:#?}");
    assert!(row.health.is_some() && row.power.is_some() && row.out_of_time.is_empty(), "{row:#?}");
    assert!(t0.elapsed() < Duration::from_secs(65));
}

/// A relay that loses every datagram, both ways, while `blackout` is set.
async fn blackout_relay(upstream: SocketAddr, blackout: Arc<std::sync::atomic::AtomicBool>) -> Relay {
    relay_with(upstream, move |_, _, _| blackout.load(std::sync::atomic::Ordering::Relaxed)).await
}

/// Issue 16 item 6: the power-down of a cycle executes, then the link goes dark and the power-up is lost.
/// The host reads Off after the link is back: power-up is resent (bounded) and the cycle completes, with
/// the resend in the report, instead of polling until the timeout and leaving the host off.
#[tokio::test]
async fn a_power_up_lost_in_a_blackout_is_resent() {
    let sim = start(vec![server("bo1", RedfishFlavor::Generic, vec![], None)]).await;
    let host = sim.fleet.host("bo1").unwrap();
    let dark = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let r = blackout_relay(sim.ipmi[0].1, dark.clone()).await;
    let mut t = sim.ipmi("bo1");
    t.ipmi_port = r.addr.port();
    let mut opts = options(sim.store.clone());
    opts.power.timeout = Duration::from_secs(60);
    opts.power.cycle_off_time = Duration::from_millis(1500);
    opts.power.power_up_retry_after = Duration::from_secs(2);
    opts.op_timeout = Duration::from_secs(90);
    let pool = BmcPool::new(opts, Arc::new(MemoryAuditSink::new()));
    let bmc = pool.bmc(t);
    assert_eq!(bmc.power_state().await.unwrap(), PowerState::On);
    let mut events = host.subscribe_events();
    let boots = host.boots();
    // The link goes dark shortly after the host is off (the client has seen Off and waits cycle_off_time
    // before the power-up), for longer than the power-up's retransmissions last.
    let watcher = tokio::spawn(async move {
        while let Ok(e) = events.recv().await {
            if e == lifeline_sim::HostEvent::Power(PowerState::Off) {
                tokio::time::sleep(Duration::from_millis(500)).await;
                dark.store(true, std::sync::atomic::Ordering::Relaxed);
                tokio::time::sleep(Duration::from_secs(10)).await;
                dark.store(false, std::sync::atomic::Ordering::Relaxed);
                return;
            }
        }
    });
    let rep = bmc.power(PowerAction::Cycle, None).await.unwrap();
    watcher.await.unwrap();
    assert_eq!(host.power_state(), PowerState::On, "{rep:#?}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(host.boots(), boots + 1, "booted once: {rep:#?}");
    assert!(rep.commands.iter().any(|c| c.contains("resent")), "{rep:#?}");
    assert!(rep.confirmed && rep.confirmation == Confirmation::TransitionObserved, "{rep:#?}");
}

/// Issue 16 item 6: cycles at 50 % UDP loss both ways (the simulator's `udp-loss=50`) each run exactly once
/// and leave the host on.
#[tokio::test]
async fn cycles_under_50_percent_udp_loss_run_once_and_leave_the_host_on() {
    let sim = start(vec![server("h1", RedfishFlavor::Generic, vec![], None)]).await;
    let host = sim.fleet.host("h1").unwrap();
    let mut opts = lossy_options(&sim);
    opts.ipmi_timing.attempts = 20;
    opts.power.timeout = Duration::from_secs(60);
    opts.power.power_up_retry_after = Duration::from_secs(4);
    opts.op_timeout = Duration::from_secs(60);
    let pool = BmcPool::new(opts, Arc::new(MemoryAuditSink::new()));
    let bmc = pool.bmc(sim.ipmi("h1"));
    sim.fleet.devices().inject("h1", &"udp-loss=50".parse::<Fault>().unwrap()).await.unwrap();
    let mut events = host.subscribe_events();
    let boots = host.boots();
    let n = 3;
    for i in 0..n {
        // An error means nothing was sent (connecting or the first state read lost every retransmission):
        // the host is untouched and the cycle is asked for again, as an operator would.
        let r = loop {
            match bmc.power(PowerAction::Cycle, None).await {
                Ok(r) => break r,
                Err(e) => {
                    eprintln!("cycle {i}: nothing sent: {}", error_chain(&e));
                    assert_eq!(host.power_state(), PowerState::On, "cycle {i}: {}", error_chain(&e));
                }
            }
        };
        assert_eq!(host.power_state(), PowerState::On, "cycle {i} left the host on: {r:#?}");
        assert!(r.confirmed, "cycle {i}: {r:#?}");
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut offs = 0;
    while let Ok(e) = events.try_recv() {
        if e == lifeline_sim::HostEvent::Power(PowerState::Off) {
            offs += 1;
        }
    }
    assert_eq!(offs, n, "exactly one power-down per cycle");
    assert_eq!(host.boots(), boots + n as u32);
    assert_eq!(host.power_state(), PowerState::On);
}

/// Issue 16 items 1-3 on every simulator flavor (the vendors' log layouts, identically named PSUs, the
/// PowerSubsystem-only service), over Redfish and IPMI: a failed power supply shows as a critical event in
/// the log it belongs to and as a failed part, nothing else is reported as failed, and clearing the fault
/// clears the part.
#[tokio::test]
async fn a_failed_psu_shows_on_every_flavor_and_nothing_else_fails() {
    let servers: Vec<ServerSpec> =
        RedfishFlavor::EVERY.iter().map(|f| server(&format!("p-{}", f.as_str()), *f, vec![], None)).collect();
    let sim = start(servers).await;
    let (pool, _) = sim.pool();
    for f in RedfishFlavor::EVERY {
        let name = format!("p-{}", f.as_str());
        let ok = pool.bmc(sim.redfish(&name)).health().await.unwrap();
        assert!(
            ok.sensors.iter().all(|s| s.health == Health::Ok),
            "{f}: healthy before the fault: {:#?}",
            ok.sensors.iter().filter(|s| s.health != Health::Ok).collect::<Vec<_>>()
        );
        sim.fleet.devices().inject(&name, &"psu-fail=1".parse::<Fault>().unwrap()).await.unwrap();
        for t in [sim.redfish(&name), sim.ipmi(&name)] {
            let what = format!("{f} over {}", t.protocol);
            let bmc = pool.bmc(t);
            let log = bmc.events(20).await.unwrap_or_else(|e| panic!("{what}: {}", error_chain(&e)));
            assert!(!log.no_log_service && !log.logs.is_empty(), "{what}: {log:#?}");
            assert!(log.entries.iter().all(|e| e.log.is_some()), "{what}: every entry names its log");
            let critical: Vec<_> = log.entries.iter().filter(|e| e.severity == Health::Critical).collect();
            assert!(
                critical.iter().any(|e| e.message.to_ascii_lowercase().contains("power supply")),
                "{what}: {log:#?}"
            );
            // The simulator's IPMI side lists PSU power readings only (no discrete PSU status sensor, no
            // chassis power fault): there the SEL is the evidence.
            if bmc.target().protocol == BmcProtocol::Ipmi {
                continue;
            }
            let h = bmc.health().await.unwrap_or_else(|e| panic!("{what}: {}", error_chain(&e)));
            assert_eq!(h.health, Health::Critical, "{what}: {h:#?}");
            let failed: Vec<_> = h.sensors.iter().filter(|s| s.health != Health::Ok).collect();
            assert!(
                failed.iter().any(|s| s.health == Health::Critical),
                "{what}: the failed supply is critical: {h:#?}"
            );
            assert!(
                failed.iter().all(|s| {
                    let n = s.name.to_ascii_lowercase();
                    s.kind == "PowerSupply"
                        || s.kind == "PowerRedundancy"
                        || s.kind == "Power Supply"
                        || n.contains("psu")
                        || n.contains("power supply")
                }),
                "{what}: nothing but the supply (and its redundancy) fails: {failed:#?}"
            );
        }
        sim.fleet.devices().clear(&name).await.unwrap();
        let h = pool.bmc(sim.redfish(&name)).health().await.unwrap();
        assert!(h.sensors.iter().all(|s| s.health == Health::Ok), "{f}: cleared: {h:#?}");
    }
}

/// A Redfish `PowerCycle` whose off phase is shorter than the normal poll interval (40 ms with the default
/// timings at `lifeline sim --time-scale 0.02`, as the CLI tests run it) is still observed: the state is
/// polled fast right after the request. On every flavor the cycle is confirmed by a transition.
#[tokio::test]
async fn a_short_off_phase_is_observed_on_every_flavor() {
    let servers: Vec<ServerSpec> =
        RedfishFlavor::EVERY.iter().map(|f| server(&format!("s-{}", f.as_str()), *f, vec![], None)).collect();
    let sim = start_with(servers, Timings::default(), 0.02).await;
    let mut opts = options(sim.store.clone());
    opts.power.poll_interval = Duration::from_millis(250);
    let pool = BmcPool::new(opts, Arc::new(MemoryAuditSink::new()));
    for f in RedfishFlavor::EVERY {
        let bmc = pool.bmc(sim.redfish(&format!("s-{}", f.as_str())));
        let r = bmc.power(PowerAction::Cycle, None).await.unwrap();
        assert!(r.confirmed, "{f}: {r:#?}");
        assert_eq!(r.confirmation, Confirmation::TransitionObserved, "{f}: {r:#?}");
        assert!(r.transitions.iter().any(|t| t.state == PowerState::Off), "{f}: {r:#?}");
    }
}

/// Each refused default costs the BMC exactly one failed login, over Redfish as over IPMI: the audit's
/// guard counts attempts, and a BMC locks an account on consecutive failures (the simulator at 5, as many
/// BMCs). A probe that sent a second request with the same guessed password (the first-contact Basic read
/// of Systems beside the check's own read) counted twice, locked `admin` out on a slow machine, and the
/// inventory's own, right password was refused for the lockout's minute.
#[tokio::test]
async fn every_refused_default_is_one_failed_login_and_nothing_locks() {
    let mut spec = server("lk", RedfishFlavor::Generic, vec![3], None);
    spec.bmc.password = "n0t-a-default".into();
    let sim = start(vec![spec]).await;
    let (pool, _) = sim.pool();
    let opts = hygiene::HygieneOptions {
        max_failures_per_bmc: 14,
        // Four tries for `admin` before the list's own two: under the lockout threshold only when each
        // is one request.
        extra_credentials: vec![("admin".into(), "wrong-1".into()), ("admin".into(), "wrong-2".into())],
        check_ipmi: false,
        ..Default::default()
    };
    let admin_failures = || sim.fleet.host("lk").unwrap().accounts().by_name("admin").unwrap().failures;
    for round in 0..2 {
        let rows = pool.hygiene_audit(vec![sim.redfish("lk")], &opts).await;
        let row = &rows[0];
        let refused = row
            .attempts
            .iter()
            .filter(|a| a.username == "admin" && a.outcome == hygiene::AttemptOutcome::Refused)
            .count();
        assert_eq!(refused, 4, "round {round}: {row:#?}");
        assert!(row.accepted_defaults.is_empty(), "{row:#?}");
        assert_eq!(admin_failures(), 4, "round {round}: one failed login per refused attempt");
        // The right password still logs in (and clears the count, as on a real BMC).
        assert_eq!(pool.bmc(sim.redfish("lk")).power_state().await.unwrap(), PowerState::On, "round {round}");
        assert_eq!(admin_failures(), 0, "round {round}");
    }
}
