//! Kept Redfish sessions (the Redfish half of `lifeline_bmc::KeptSessions`), checked on the BMC side: the
//! simulator counts the sessions it holds and the requests it receives by method, so a sweep that logs in
//! (POST) or out (DELETE) shows. Every simulated flavor; a BMC reset that drops the kept token; the graceful
//! end and a dropped keeper that delete every kept session; and sushy-emulator, a third-party Redfish
//! service, swept with kept sessions on.

mod common;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use lifeline_bmc::*;
use lifeline_redfish::MemoryPinStore;
use lifeline_sim::{EndpointKind, Fleet, FleetSpec, RedfishFlavor, RunningFleet, ServerSpec, SimOptions};
use lifeline_test_utils::unique_loopback;
use lifeline_types::BmcProtocol;

/// One simulated server per flavor, and their Redfish targets.
async fn fleet(flavors: &[RedfishFlavor]) -> (RunningFleet, Vec<BmcTarget>) {
    let specs: Vec<ServerSpec> = flavors
        .iter()
        .map(|f| {
            let mut s = ServerSpec::bare(
                format!("rf-{}", f.as_str()),
                IpAddr::V4(unique_loopback()),
                "admin",
                "password",
            );
            s.bmc.flavor = *f;
            s
        })
        .collect();
    let fleet = Fleet::start(FleetSpec { servers: specs.clone(), switches: vec![] }, SimOptions::for_tests())
        .await
        .expect("fleet starts");
    let targets = specs
        .iter()
        .map(|s| {
            let e = fleet.endpoint(&s.name, EndpointKind::Redfish).expect("a Redfish endpoint");
            let mut t = BmcTarget::new(
                &s.name,
                e.address.to_string(),
                BmcProtocol::Redfish,
                &e.username,
                &e.password,
            );
            t.redfish_port = e.port;
            t
        })
        .collect();
    (fleet, targets)
}

fn pool(kept: Option<KeptSessions>) -> BmcPool {
    let opts =
        BmcOptions { tls: TlsPolicy::Pin(Arc::new(MemoryPinStore::default())), kept, ..quick_options() };
    BmcPool::new(opts, Arc::new(MemoryAuditSink::new()))
}

/// Health, power and the newest events: what the server's scheduled sweep reads.
fn health_sweep() -> SweepOptions {
    SweepOptions { per_bmc_timeout: Duration::from_secs(20), ..Default::default() }
}

async fn sweep_ok(pool: &BmcPool, targets: &[BmcTarget]) {
    let rows = pool.sweep(targets.to_vec(), &health_sweep(), |_, _| {}).await;
    for r in &rows {
        assert!(r.ok(), "{r:#?}");
        assert!(r.power.is_some() && r.health.is_some(), "{r:#?}");
    }
}

/// Logins (POST) and logouts (DELETE) each simulated BMC received.
fn logins_logouts(fleet: &RunningFleet, targets: &[BmcTarget]) -> Vec<(usize, usize)> {
    targets
        .iter()
        .map(|t| {
            let c = fleet.redfish(&t.name).unwrap().requests();
            (c.post, c.delete)
        })
        .collect()
}

fn sessions(fleet: &RunningFleet, targets: &[BmcTarget]) -> Vec<usize> {
    targets.iter().map(|t| fleet.redfish(&t.name).unwrap().session_count()).collect()
}

#[tokio::test]
async fn later_sweeps_reuse_the_kept_session_of_every_flavor_and_close_all_deletes_them() {
    let (fleet, targets) = fleet(&RedfishFlavor::EVERY).await;
    let n = targets.len();
    let kept = KeptSessions::new(KeepOptions::default());
    let pool = pool(Some(kept.clone()));

    sweep_ok(&pool, &targets).await;
    assert_eq!(sessions(&fleet, &targets), vec![1; n], "one session kept on each BMC");
    assert_eq!(kept.stats().redfish_kept, n, "{:?}", kept.stats());
    let after_first = logins_logouts(&fleet, &targets);
    assert!(after_first.iter().all(|(post, delete)| *post == 1 && *delete == 0), "{after_first:?}");

    for round in 1..=2u64 {
        sweep_ok(&pool, &targets).await;
        assert_eq!(logins_logouts(&fleet, &targets), after_first, "sweep {round} logged in or out again");
        assert_eq!(sessions(&fleet, &targets), vec![1; n]);
        assert_eq!(kept.stats().reused, n as u64 * round, "{:?}", kept.stats());
    }

    assert_eq!(kept.close_all().await, n);
    assert_eq!(sessions(&fleet, &targets), vec![0; n], "the graceful end left a session on a BMC");
    assert!(logins_logouts(&fleet, &targets).iter().all(|(_, delete)| *delete == 1));
    assert!(kept.is_empty() && kept.is_closed());
    // After the end a sweep still works, and keeps nothing.
    sweep_ok(&pool, &targets).await;
    assert_eq!(sessions(&fleet, &targets), vec![0; n]);
    assert!(kept.is_empty());
}

/// The contrast that makes the test above mean something: without kept sessions every visit logs in and out.
#[tokio::test]
async fn without_kept_sessions_every_redfish_visit_logs_in_and_out() {
    let (fleet, targets) = fleet(&[RedfishFlavor::Generic, RedfishFlavor::OpenbmcLike]).await;
    let pool = pool(None);
    for round in 1..=2 {
        sweep_ok(&pool, &targets).await;
        assert_eq!(logins_logouts(&fleet, &targets), vec![(round, round); 2]);
        assert_eq!(sessions(&fleet, &targets), vec![0; 2]);
    }
}

/// A BMC reset drops every session: the kept token is answered with 401, the client logs in once, and the
/// new session is kept in its place (still one on the BMC).
#[tokio::test]
async fn a_token_the_bmc_dropped_costs_one_login_and_the_new_session_is_kept() {
    let (fleet, targets) = fleet(&[RedfishFlavor::IdracLike]).await;
    let kept = KeptSessions::new(KeepOptions::default());
    let pool = pool(Some(kept.clone()));
    sweep_ok(&pool, &targets).await;
    assert_eq!(logins_logouts(&fleet, &targets), vec![(1, 0)]);

    fleet.host(&targets[0].name).unwrap().reset_bmc();
    assert_eq!(sessions(&fleet, &targets), vec![0], "the reset dropped the session");
    sweep_ok(&pool, &targets).await;
    assert_eq!(logins_logouts(&fleet, &targets), vec![(2, 0)], "one login after the 401, no logout");
    assert_eq!(sessions(&fleet, &targets), vec![1]);
    assert_eq!(kept.stats().redfish_kept, 1);

    sweep_ok(&pool, &targets).await;
    assert_eq!(logins_logouts(&fleet, &targets), vec![(2, 0)]);
    kept.close_all().await;
    assert_eq!(sessions(&fleet, &targets), vec![0]);
}

/// Kept sessions no sweep uses are deleted after `close_idle_after`, and a keeper dropped without
/// `close_all` still deletes what it kept: no session is left behind on a BMC either way.
#[tokio::test]
async fn unused_kept_sessions_are_deleted_and_a_dropped_keeper_leaves_none() {
    let (fleet, targets) = fleet(&[RedfishFlavor::Generic, RedfishFlavor::SupermicroLike]).await;
    let wait_for_none = |what: &str| {
        let t0 = Instant::now();
        let what = what.to_owned();
        let (fleet, targets) = (&fleet, &targets);
        async move {
            while sessions(fleet, targets) != vec![0; 2] {
                assert!(t0.elapsed() < Duration::from_secs(10), "{what}: {:?}", sessions(fleet, targets));
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };

    let keep = KeepOptions {
        close_idle_after: Duration::from_millis(600),
        keepalive_after: Duration::from_millis(400),
        ..KeepOptions::default()
    };
    let kept = KeptSessions::new(keep);
    let pool_a = pool(Some(kept.clone()));
    sweep_ok(&pool_a, &targets).await;
    assert_eq!(sessions(&fleet, &targets), vec![1; 2]);
    wait_for_none("idle kept sessions were not deleted").await;
    assert!(kept.is_empty(), "{:?}", kept.stats());

    let kept = KeptSessions::new(KeepOptions::default());
    let pool_b = pool(Some(kept.clone()));
    sweep_ok(&pool_b, &targets).await;
    assert_eq!(sessions(&fleet, &targets), vec![1; 2]);
    drop((pool_b, kept));
    wait_for_none("a dropped keeper left its sessions").await;
}

/// sushy-emulator, a third-party Redfish service: sweeps with kept sessions on read it as they do without.
/// It refuses the session login (401: its htpasswd guard covers the Sessions collection too), so the
/// client reads with HTTP Basic, and a Basic client has no session to keep: nothing is kept, nothing is
/// reused, nothing is left to delete.
#[tokio::test]
async fn sushy_emulator_swept_with_kept_sessions() {
    let Some(s) = sushy() else { return };
    let kept = KeptSessions::new(KeepOptions::default());
    let opts =
        BmcOptions { tls: TlsPolicy::CaFile(s.ca.clone()), kept: Some(kept.clone()), ..quick_options() };
    let pool = BmcPool::new(opts, Arc::new(MemoryAuditSink::new()));
    let targets = vec![s.target("sushy-kept", "gpu-node-2")];
    let power_health = SweepOptions { events: 0, ..health_sweep() };
    for _ in 0..3 {
        let rows = pool.sweep(targets.clone(), &power_health, |_, _| {}).await;
        assert!(rows[0].ok() && rows[0].power.is_some(), "{:#?}", rows[0]);
    }
    let stats = kept.stats();
    assert_eq!((stats.kept, stats.reused, stats.returned), (0, 0, 0), "{stats:?}");
    assert_eq!(kept.close_all().await, 0);
}

/// A visit that adopts a kept session sends its first reads at once; they share one TLS connection (an
/// HTTP/2 BMC): the first goes alone until the connection is up. Sent together, each opened its own.
#[tokio::test]
async fn a_visit_over_a_kept_session_opens_one_connection() {
    let (fleet, targets) = fleet(&[RedfishFlavor::Generic, RedfishFlavor::OpenbmcLike]).await;
    let kept = KeptSessions::new(KeepOptions::default());
    let pool = pool(Some(kept.clone()));
    let tls = |fleet: &RunningFleet| -> Vec<usize> {
        targets.iter().map(|t| fleet.redfish(&t.name).unwrap().connections().tls).collect()
    };
    sweep_ok(&pool, &targets).await;
    let before = tls(&fleet);
    for round in 1..=2 {
        sweep_ok(&pool, &targets).await;
        let after = tls(&fleet);
        let opened: Vec<usize> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
        assert_eq!(opened, vec![round; 2], "TLS connections per BMC after {round} warm visits");
    }
    assert_eq!(kept.stats().reused, 4);
    kept.close_all().await;
}
