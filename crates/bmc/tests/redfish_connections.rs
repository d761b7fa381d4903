//! TLS connections a Redfish health sweep opens, counted by the simulated BMC (`lifeline-sim`): over HTTP/2
//! the service root, the login, the health and event reads in flight together, and the logout share one
//! connection; the next sweep of the same pool resumes the TLS session instead of a full handshake, yet a
//! replaced certificate is still refused; and a BMC that serves only HTTP/1.1 answers the same sweep.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use lifeline_bmc::*;
use lifeline_redfish::MemoryPinStore;
use lifeline_sim::redfish::ConnectionCounts;
use lifeline_sim::{EndpointKind, Fault, Fleet, FleetSpec, GpuSpec, RedfishFlavor, ServerSpec, SimOptions};
use lifeline_test_utils::unique_loopback;
use lifeline_types::BmcProtocol;

fn server(name: &str) -> ServerSpec {
    let mut s = ServerSpec::bare(name, IpAddr::V4(unique_loopback()), "admin", "password");
    s.role = "gpu-node".into();
    s.bmc.flavor = RedfishFlavor::OpenbmcLike;
    s.gpus = GpuSpec::default();
    s
}

/// What `lifeline sweep` reads by default: power, the health rollup and the 3 newest events.
fn cli_sweep() -> SweepOptions {
    SweepOptions { events: 3, per_bmc_timeout: Duration::from_secs(30), ..SweepOptions::default() }
}

#[tokio::test]
async fn http2_sweep_uses_one_connection_resumes_the_next_and_http1_still_works() {
    let fleet = Fleet::start(
        FleetSpec { servers: vec![server("h2"), server("h1")], switches: vec![] },
        SimOptions::for_tests(),
    )
    .await
    .expect("fleet starts");
    fleet.redfish("h1").expect("h1 serves Redfish").set_http2(false);
    let target = |name: &str| {
        let e = fleet.endpoint(name, EndpointKind::Redfish).expect("endpoint");
        let mut t =
            BmcTarget::new(name, e.address.to_string(), BmcProtocol::Redfish, &e.username, &e.password);
        t.redfish_port = e.port;
        t
    };
    let opts = BmcOptions { tls: TlsPolicy::Pin(Arc::new(MemoryPinStore::new())), ..BmcOptions::default() };
    let tickets = opts.redfish.resumption.clone();
    let pool = BmcPool::new(opts, Arc::new(MemoryAuditSink::new()));
    let counts = |name: &str| fleet.redfish(name).expect("bmc").connections();
    let sweep = || async {
        let rows = pool.sweep(vec![target("h2"), target("h1")], &cli_sweep(), |_, _| {}).await;
        for r in &rows {
            assert!(r.ok(), "{}: {:?}", r.name, r.errors);
            assert!(r.health.is_some(), "{r:?}");
        }
    };

    // First sweep: nothing pinned yet, so the certificate is pinned on this connection (trust on first use).
    // The speculative login waits for the root GET's connection and rides it: still one connection.
    sweep().await;
    assert_eq!(counts("h2"), ConnectionCounts { tls: 1, h2: 1, resumed: 0 });
    let h1 = counts("h1");
    assert_eq!(h1.h2, 0, "{h1:?}");
    assert!(h1.tls >= 1, "{h1:?}");

    // Second: the pin is known now, so the session it verifies is kept for the next client of this BMC.
    sweep().await;
    assert_eq!(counts("h2"), ConnectionCounts { tls: 2, h2: 2, resumed: 0 });
    // Third: a new client resumes that session.
    sweep().await;
    assert_eq!(counts("h2"), ConnectionCounts { tls: 3, h2: 3, resumed: 1 });
    let h1_after = counts("h1");
    assert_eq!(h1_after.h2, 0, "{h1_after:?}");
    assert!(h1_after.resumed >= 1, "HTTP/1.1 BMCs resume too: {h1_after:?}");
    // Every later sweep resumes too, while the tickets kept stay at two per BMC however many the BMC sends
    // (the simulator sends two per connection).
    for resumed in 2..5 {
        sweep().await;
        assert_eq!(counts("h2").resumed, resumed);
    }
    assert!(
        tickets.tickets() <= 2 * tickets.len(),
        "{} tickets for {} BMCs",
        tickets.tickets(),
        tickets.len()
    );

    // A client told to speak HTTP/1.1 only does so with a BMC that offers HTTP/2.
    let h1_only = BmcOptions {
        redfish: lifeline_redfish::ClientOptions { http2: false, ..BmcOptions::default().redfish },
        ..BmcOptions::default()
    };
    let before = counts("h2");
    let rows = BmcPool::new(h1_only, Arc::new(MemoryAuditSink::new()))
        .sweep(vec![target("h2")], &cli_sweep(), |_, _| {})
        .await;
    assert!(rows[0].ok(), "{:?}", rows[0]);
    let after = counts("h2");
    assert!(after.tls > before.tls && after.h2 == before.h2, "{before:?} -> {after:?}");

    // A replaced certificate is still refused although a ticket is kept: the BMC no longer accepts it, so
    // the handshake is a full one, through the pin.
    fleet.devices().inject("h2", &"tls-cert-change".parse::<Fault>().expect("fault")).await.expect("inject");
    let rows = pool.sweep(vec![target("h2")], &cli_sweep(), |_, _| {}).await;
    let text = rows[0].errors.join("; ");
    assert!(!rows[0].ok() && text.contains("certificate changed"), "{:?}", rows[0]);
    fleet.shutdown().await;
}
