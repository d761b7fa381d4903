//! Kept IPMI sessions (`lifeline_bmc::kept`), checked on the BMC side: against OpenIPMI `ipmi_sim` (a real
//! third-party BMC) by counting its active sessions with `ipmitool session info active`, and against
//! Lifeline's simulator through its session limit (a BMC that holds one session refuses a second login
//! while ours is kept, and accepts one again once ours is closed), a BMC reset that drops our session, and
//! a lossy link that fails a kept session the BMC still holds.

mod common;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use lifeline_bmc::*;
use lifeline_sim::{EndpointKind, Fault, Fleet, FleetSpec, ServerSpec, SimOptions};
use lifeline_test_utils::{UdpRelay, unique_loopback};
use lifeline_types::{BmcProtocol, PowerState};
use tokio_util::sync::CancellationToken;

fn kept_options(keep: KeepOptions) -> (BmcOptions, KeptSessions) {
    let kept = KeptSessions::new(keep);
    (BmcOptions { kept: Some(kept.clone()), ..quick_options() }, kept)
}

/// Active sessions on ipmi_sim instance `i`, ipmitool's own included.
async fn active_sessions(sim: &Arc<IpmiSims>, i: u16) -> usize {
    let sim = sim.clone();
    let out =
        tokio::task::spawn_blocking(move || sim.ipmitool(i, &["session", "info", "active"])).await.unwrap();
    out.lines()
        .find_map(|l| l.strip_prefix("active sessions"))
        .and_then(|v| v.trim_start_matches([' ', ':']).trim().parse().ok())
        .unwrap_or_else(|| panic!("no `active sessions` line in: {out}"))
}

fn power_only() -> SweepOptions {
    SweepOptions { health: false, events: 0, per_bmc_timeout: Duration::from_secs(20), ..Default::default() }
}

#[tokio::test]
async fn ipmi_sim_holds_one_kept_session_per_bmc_between_sweeps_and_none_after_close() {
    let Some(sim) = IpmiSims::start(2) else { return };
    let sim = Arc::new(sim);
    let (opts, kept) = kept_options(KeepOptions::default());
    let pool = BmcPool::new(opts, Arc::new(MemoryAuditSink::new()));
    let targets = || (0..2).map(|i| sim.target(i, &format!("node{i}"))).collect::<Vec<_>>();
    let full = SweepOptions { events: 2, per_bmc_timeout: Duration::from_secs(20), ..Default::default() };

    let rows = pool.sweep(targets(), &full, |_, _| {}).await;
    assert!(rows.iter().all(|r| r.ok() && r.power == Some(PowerState::On)), "{rows:#?}");
    assert_eq!(kept.bmcs(), ["node0", "node1"]);
    // Ours and ipmitool's.
    assert_eq!(active_sessions(&sim, 0).await, 2);
    assert_eq!(active_sessions(&sim, 1).await, 2);

    for round in 0..2 {
        let rows = pool.sweep(targets(), &full, |_, _| {}).await;
        assert!(rows.iter().all(|r| r.ok() && r.sensors == 6 && r.events.len() == 2), "{rows:#?}");
        assert_eq!(kept.stats().reused, 2 * (round + 1), "{:?}", kept.stats());
        assert_eq!(active_sessions(&sim, 0).await, 2, "round {round}");
        assert_eq!(active_sessions(&sim, 1).await, 2, "round {round}");
    }
    // A power action still logs in on its own (ADMINISTRATOR) and closes: the kept session stays alone.
    let bmc = pool.bmc(sim.target(0, "node0"));
    assert_eq!(bmc.power_state().await.unwrap(), PowerState::On);
    assert_eq!(active_sessions(&sim, 0).await, 2);

    assert_eq!(kept.close_all().await, 2);
    assert_eq!(active_sessions(&sim, 0).await, 1, "kept session left on the BMC after close_all");
    assert_eq!(active_sessions(&sim, 1).await, 1, "kept session left on the BMC after close_all");
    // Closed for good: a sweep after it logs in and out again.
    let rows = pool.sweep(targets(), &power_only(), |_, _| {}).await;
    assert!(rows.iter().all(|r| r.ok()), "{rows:#?}");
    assert!(kept.is_empty());
    assert_eq!(active_sessions(&sim, 0).await, 1);
}

#[tokio::test]
async fn ipmi_sim_kept_session_survives_on_keepalives_and_closes_when_unused() {
    let Some(sim) = IpmiSims::start(1) else { return };
    let sim = Arc::new(sim);
    let keep = KeepOptions {
        keepalive_after: Duration::from_millis(200),
        close_idle_after: Duration::from_secs(3),
        ..KeepOptions::default()
    };
    let (opts, kept) = kept_options(keep);
    let pool = BmcPool::new(opts, Arc::new(MemoryAuditSink::new()));
    let rows = pool.sweep(vec![sim.target(0, "node0")], &power_only(), |_, _| {}).await;
    assert!(rows[0].ok(), "{rows:#?}");
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let s = kept.stats();
    assert!(s.keepalives >= 3, "{s:?}");
    assert_eq!((s.kept, s.dropped), (1, 0), "{s:?}");
    // The same session serves the next sweep (no login): still one of ours on the BMC.
    let rows = pool.sweep(vec![sim.target(0, "node0")], &power_only(), |_, _| {}).await;
    assert!(rows[0].ok(), "{rows:#?}");
    assert_eq!(kept.stats().reused, 1);
    assert_eq!(active_sessions(&sim, 0).await, 2);
    // No operation for `close_idle_after`: closed on the BMC.
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(kept.is_empty(), "{:?}", kept.stats());
    assert_eq!(active_sessions(&sim, 0).await, 1, "an unused kept session was not closed");
}

#[tokio::test]
async fn ipmi_sim_dropping_the_pool_closes_kept_sessions() {
    let Some(sim) = IpmiSims::start(1) else { return };
    let sim = Arc::new(sim);
    let (opts, kept) = kept_options(KeepOptions::default());
    let pool = BmcPool::new(opts, Arc::new(MemoryAuditSink::new()));
    let rows = pool.sweep(vec![sim.target(0, "node0")], &power_only(), |_, _| {}).await;
    assert!(rows[0].ok(), "{rows:#?}");
    assert_eq!(active_sessions(&sim, 0).await, 2);
    drop(pool);
    drop(kept);
    // Each dropped session sends Close Session from a task of its own.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(active_sessions(&sim, 0).await, 1, "a dropped kept session was left on the BMC");
}

/// One simulated BMC holding at most `limit` IPMI sessions, served on a socket of its own.
async fn sim_bmc(limit: usize) -> (lifeline_sim::RunningFleet, BmcTarget, CancellationToken) {
    let mut spec = ServerSpec::bare("k1", IpAddr::V4(unique_loopback()), "admin", "password");
    spec.bmc.session_limit = Some(limit);
    let fleet =
        Fleet::start(FleetSpec { servers: vec![spec.clone()], switches: vec![] }, SimOptions::for_tests())
            .await
            .expect("fleet starts");
    let cancel = CancellationToken::new();
    let t = ipmi_target(&fleet, &spec, &cancel).await;
    (fleet, t, cancel)
}

/// The IPMI target of a simulated server (served on a socket of its own when the fleet has no endpoint).
async fn ipmi_target(
    fleet: &lifeline_sim::RunningFleet,
    spec: &ServerSpec,
    cancel: &CancellationToken,
) -> BmcTarget {
    let name = &spec.name;
    let addr = match fleet.endpoint(name, EndpointKind::Ipmi) {
        Some(e) => SocketAddr::new(e.address, e.port),
        None => {
            let sock = tokio::net::UdpSocket::bind((spec.bmc.address, 0)).await.unwrap();
            let addr = sock.local_addr().unwrap();
            tokio::spawn(lifeline_sim::ipmi::serve(sock, fleet.host(name).unwrap(), cancel.clone()));
            addr
        }
    };
    let mut t = BmcTarget::new(name, addr.ip().to_string(), BmcProtocol::Ipmi, "admin", "password");
    t.ipmi_port = addr.port();
    t
}

/// A pool with kept sessions that has swept `target` once (so it keeps one session there), and a pool of
/// another client without kept sessions.
async fn one_kept_session(target: &BmcTarget) -> (BmcPool, KeptSessions, BmcPool) {
    let (opts, kept) = kept_options(KeepOptions::default());
    let pool = BmcPool::new(opts, Arc::new(MemoryAuditSink::new()));
    let other = BmcPool::new(quick_options(), Arc::new(MemoryAuditSink::new()));

    let rows = pool.sweep(vec![target.clone()], &power_only(), |_, _| {}).await;
    assert!(rows[0].ok(), "{rows:#?}");
    assert_eq!(kept.len(), 1);
    (pool, kept, other)
}

#[tokio::test]
async fn sim_kept_session_holds_the_bmcs_only_slot_is_replaced_after_a_reset_and_freed_on_close() {
    let (fleet, target, cancel) = sim_bmc(1).await;
    let (pool, kept, other) = one_kept_session(&target).await;
    // The BMC's one session is ours: another client is refused...
    let err = other.bmc(target.clone()).power_state().await.unwrap_err();
    assert!(error_chain(&err).contains("Open Session"), "{}", error_chain(&err));
    // ...and even with new logins refused, the next sweep reads over the kept session.
    fleet.devices().inject("k1", &Fault::SessionsFull).await.unwrap();
    let rows = pool.sweep(vec![target.clone()], &power_only(), |_, _| {}).await;
    assert!(rows[0].ok(), "{rows:#?}");
    assert_eq!(kept.stats().reused, 1);
    fleet.devices().clear("k1").await.unwrap();

    // A BMC reset drops every session: the kept one fails once, is dropped, and a fresh login reads.
    fleet.host("k1").unwrap().reset_bmc();
    let rows = pool.sweep(vec![target.clone()], &power_only(), |_, _| {}).await;
    assert!(rows[0].ok(), "{rows:#?}");
    let s = kept.stats();
    assert_eq!((s.reused, s.dropped, s.kept), (2, 1, 1), "{s:?}");
    let rows = pool.sweep(vec![target.clone()], &power_only(), |_, _| {}).await;
    assert!(rows[0].ok(), "{rows:#?}");
    assert_eq!(kept.stats().reused, 3);

    // Closed: the slot is free again.
    assert_eq!(kept.close_all().await, 1);
    assert_eq!(other.bmc(target.clone()).power_state().await.unwrap(), PowerState::On);
    cancel.cancel();
}

/// A kept session whose request is lost on the link fails in use, yet the BMC still holds it. On a BMC
/// with one session slot the new login is refused until the old session is closed: the reopen closes it
/// first and logs in again, so the sweep reads, and the BMC ends with our one new session.
#[tokio::test]
async fn sim_one_slot_bmc_kept_session_lost_on_the_link_is_closed_before_the_new_login() {
    let (_fleet, direct, cancel) = sim_bmc(1).await;
    let link =
        UdpRelay::start(SocketAddr::new(direct.address.parse().unwrap(), direct.ipmi_port), 0.0, 1).await;
    let mut target = direct.clone();
    target.address = link.addr.ip().to_string();
    target.ipmi_port = link.addr.port();
    let (pool, kept, other) = one_kept_session(&target).await;

    // The link drops everything toward the BMC until the kept session's request has spent its four
    // attempts (quick_options: 0.3 + 0.6 + 1 + 1 s), then carries again before that request gives up.
    link.cut(true);
    let sweep = {
        let (pool, target) = (pool.clone(), target.clone());
        tokio::spawn(async move { pool.sweep(vec![target], &power_only(), |_, _| {}).await })
    };
    let waited = std::time::Instant::now();
    while link.dropped() < 4 {
        assert!(
            waited.elapsed() < Duration::from_secs(10),
            "the kept session's request never reached the link"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    link.cut(false);
    let rows = sweep.await.unwrap();
    assert!(rows[0].ok(), "the reopen did not get past the BMC's one slot: {rows:#?}");
    let s = kept.stats();
    assert_eq!((s.reused, s.dropped, s.kept), (1, 1, 1), "{s:?}");
    // The BMC's one slot is the new session's: another client is refused until it is closed.
    let err = other.bmc(direct.clone()).power_state().await.unwrap_err();
    assert!(error_chain(&err).contains("Open Session"), "{}", error_chain(&err));
    assert_eq!(kept.close_all().await, 1);
    assert_eq!(other.bmc(direct.clone()).power_state().await.unwrap(), PowerState::On);
    cancel.cancel();
}

#[tokio::test]
async fn without_kept_sessions_every_sweep_logs_in_and_out() {
    let (_fleet, target, cancel) = sim_bmc(1).await;
    let pool = BmcPool::new(quick_options(), Arc::new(MemoryAuditSink::new()));
    for _ in 0..3 {
        let rows = pool.sweep(vec![target.clone()], &power_only(), |_, _| {}).await;
        assert!(rows[0].ok(), "{rows:#?}");
        // The slot is free after each sweep.
        assert_eq!(pool.bmc(target.clone()).power_state().await.unwrap(), PowerState::On);
    }
    cancel.cancel();
}

/// A sweep of many simulated BMCs runs on the pool's IPMI mux: a handful of sockets however many BMCs, one
/// route per kept session between sweeps, and an empty routing table once they are closed; a pool without
/// kept sessions leaves no route behind after its sweep either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_sweep_of_many_bmcs_shares_a_few_sockets() {
    let n = 40;
    let specs: Vec<ServerSpec> = (0..n)
        .map(|i| ServerSpec::bare(format!("m{i}"), IpAddr::V4(unique_loopback()), "admin", "password"))
        .collect();
    let fleet = Fleet::start(FleetSpec { servers: specs.clone(), switches: vec![] }, SimOptions::for_tests())
        .await
        .expect("fleet starts");
    let cancel = CancellationToken::new();
    let mut targets = Vec::new();
    for s in &specs {
        targets.push(ipmi_target(&fleet, s, &cancel).await);
    }
    let (opts, kept) = kept_options(KeepOptions::default());
    let pool = BmcPool::new(opts, Arc::new(MemoryAuditSink::new()));
    for round in 0..2 {
        let rows = pool.sweep(targets.clone(), &power_only(), |_, _| {}).await;
        assert!(rows.iter().all(|r| r.ok() && r.power == Some(PowerState::On)), "{rows:#?}");
        let m = pool.ipmi_mux_stats().expect("the sweep used the pool's mux");
        assert!(m.sockets <= 4, "{m:?}");
        assert_eq!((m.sessions, m.waiting_addresses), (n, 0), "round {round}: {m:?}");
    }
    assert_eq!(kept.stats().reused, n as u64);
    assert_eq!(kept.close_all().await, n);
    let m = pool.ipmi_mux_stats().unwrap();
    assert_eq!((m.sessions, m.waiting_addresses), (0, 0), "routes left after close_all: {m:?}");

    let plain = BmcPool::new(quick_options(), Arc::new(MemoryAuditSink::new()));
    let rows = plain.sweep(targets.clone(), &power_only(), |_, _| {}).await;
    assert!(rows.iter().all(|r| r.ok()), "{rows:#?}");
    let m = plain.ipmi_mux_stats().unwrap();
    assert_eq!((m.sessions, m.waiting_addresses), (0, 0), "routes left after a sweep: {m:?}");
    cancel.cancel();
}
