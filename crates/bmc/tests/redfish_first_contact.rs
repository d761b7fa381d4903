//! First contact with a Redfish BMC, as `lifeline sweep` makes it (power, health rollup, 3 newest events,
//! nothing remembered), against one simulated BMC of every flavor (`lifeline-sim`, which counts requests):
//! how many round trips it costs (with 500 ms injected per request, so the count shows in the wall time
//! above any scheduling noise), how many requests it sends, and that it leaves no session behind.
//!
//! Why it matters: at 200 ms per round trip a first-contact sweep of 1,000 BMCs was 8 round trips deep
//! (root, login, Systems, the system, Managers..., LogServices, the log service, logout) on BMCs without
//! `$expand`; the login and the Basic reads of Systems and Managers now go out with the root GET, and the
//! schema-fixed collections are read with the documents that link them.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lifeline_bmc::*;
use lifeline_redfish::MemoryPinStore;
use lifeline_sim::{EndpointKind, Fault, Fleet, FleetSpec, GpuSpec, RedfishFlavor, ServerSpec, SimOptions};
use lifeline_test_utils::unique_loopback;
use lifeline_types::BmcProtocol;

const LATENCY_MS: u64 = 500;

fn server(flavor: RedfishFlavor) -> ServerSpec {
    let name = format!("{flavor:?}").to_lowercase();
    let mut s = ServerSpec::bare(&name, IpAddr::V4(unique_loopback()), "admin", "password");
    s.role = "gpu-node".into();
    s.bmc.flavor = flavor;
    s.gpus = GpuSpec::default();
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_contact_is_four_round_trips_on_every_flavor_and_leaves_no_session() {
    let servers: Vec<ServerSpec> = RedfishFlavor::ALL.iter().map(|f| server(*f)).collect();
    let names: Vec<String> = servers.iter().map(|s| s.name.clone()).collect();
    // Flavor latencies scaled to nothing: only the injected latency counts.
    let sim = SimOptions { time_scale: 0.001, ..SimOptions::for_tests() };
    let fleet = Fleet::start(FleetSpec { servers, switches: vec![] }, sim).await.expect("fleet starts");
    let slow: Fault = format!("bmc-slow={LATENCY_MS}").parse().expect("fault");
    for n in &names {
        fleet.devices().inject(n, &slow).await.expect("inject");
    }
    let targets: Vec<BmcTarget> = names
        .iter()
        .map(|name| {
            let e = fleet.endpoint(name, EndpointKind::Redfish).expect("endpoint");
            let mut t =
                BmcTarget::new(name, e.address.to_string(), BmcProtocol::Redfish, &e.username, &e.password);
            t.redfish_port = e.port;
            t
        })
        .collect();
    let opts = BmcOptions { tls: TlsPolicy::Pin(Arc::new(MemoryPinStore::new())), ..BmcOptions::default() };
    let pool = BmcPool::new(opts, Arc::new(MemoryAuditSink::new()));
    let sweep =
        SweepOptions { events: 3, per_bmc_timeout: Duration::from_secs(30), ..SweepOptions::default() };
    let t0 = Instant::now();
    let rows = pool.sweep(targets, &sweep, |_, _| {}).await;
    let wall = t0.elapsed();
    let mut report = Vec::new();
    for r in &rows {
        assert!(r.ok(), "{}: {:?}", r.name, r.errors);
        assert!(r.power.is_some() && r.health.is_some(), "{r:?}");
        let bmc = fleet.redfish(&r.name).expect("bmc");
        let q = bmc.requests();
        report.push(format!("{}: {} ms, {q:?}", r.name, r.elapsed_ms));
        assert_eq!(bmc.session_count(), 0, "{}: a session was left on the BMC", r.name);
        assert_eq!(q.post, 1, "{}: one login: {q:?}", r.name);
        assert_eq!(q.delete, 1, "{}: one logout: {q:?}", r.name);
        // Flavors whose system reports `HealthRollup` need no chassis read; bmcweb has two event logs. No
        // flavor's Manager is read: its `LogServices` answer where the schema puts them.
        let most = match r.name.as_str() {
            "generic" | "idraclike" => 9,
            "ilolike" => 10,
            "supermicrolike" => 11,
            _ => 13,
        };
        assert!(q.total() <= most, "{}: {q:?}, at most {most}", r.name);
    }
    eprintln!("{}", report.join("\n"));
    // Four round trips: root with the login and the collections, members with their LogServices, log
    // services with their entries, logout. Five would be 2.5 s.
    let rts = wall.as_secs_f64() / (LATENCY_MS as f64 / 1000.0);
    assert!(
        rts < 4.7,
        "first contact took {wall:?} = {rts:.1} round trips of {LATENCY_MS} ms:\n{}",
        report.join("\n")
    );
    fleet.shutdown().await;
}

/// A wrong password: the first visit's Basic reads fail with its login (three failed logins), and the
/// pool's next first contact sends the login alone, so a BMC's lockout counts one failure per visit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_failed_visit_first_contact_sends_no_basic_reads() {
    let spec = server(RedfishFlavor::Generic);
    let name = spec.name.clone();
    let sim = SimOptions { time_scale: 0.001, ..SimOptions::for_tests() };
    let fleet = Fleet::start(FleetSpec { servers: vec![spec], switches: vec![] }, sim).await.expect("fleet");
    let e = fleet.endpoint(&name, EndpointKind::Redfish).expect("endpoint");
    let mut t = BmcTarget::new(&name, e.address.to_string(), BmcProtocol::Redfish, &e.username, "wrong");
    t.redfish_port = e.port;
    let opts = BmcOptions { tls: TlsPolicy::Pin(Arc::new(MemoryPinStore::new())), ..BmcOptions::default() };
    let pool = BmcPool::new(opts, Arc::new(MemoryAuditSink::new()));
    let sweep =
        SweepOptions { events: 3, per_bmc_timeout: Duration::from_secs(30), ..SweepOptions::default() };
    let bmc = fleet.redfish(&name).expect("bmc");

    let rows = pool.sweep(vec![t.clone()], &sweep, |_, _| {}).await;
    assert!(!rows[0].ok(), "{rows:?}");
    let first = bmc.requests();
    assert_eq!((first.get, first.post), (3, 1), "root and the two Basic reads, one login: {first:?}");

    let rows = pool.sweep(vec![t.clone()], &sweep, |_, _| {}).await;
    assert!(!rows[0].ok(), "{rows:?}");
    let second = bmc.requests();
    assert_eq!(
        (second.get - first.get, second.post - first.post),
        (1, 1),
        "the root and the login only: {second:?}"
    );

    // The password fixed: the visit works, and the pool reads with the login again from then on.
    t.password = e.password.clone();
    let rows = pool.sweep(vec![t.clone()], &sweep, |_, _| {}).await;
    assert!(rows[0].ok(), "{rows:?}");
    assert_eq!(bmc.session_count(), 0);
    fleet.shutdown().await;
}
