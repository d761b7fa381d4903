//! The server's scheduled sweeps keep one session per BMC between rounds (an IPMI session, a Redfish
//! session's token), and its ordered end (the graceful SIGTERM path, `Running::stop`) closes them: counted
//! on a real BMC, OpenIPMI `ipmi_sim`, with `ipmitool session info active`, and on Lifeline's simulated
//! Redfish BMC by its sessions and the logins and logouts it received.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

mod common;

use lifeline_engine::{Identity, Lifeline};
use lifeline_test_utils::{IPMI_SIM_BASE_PORT, IpmiSims};

/// Active sessions on the BMC, ipmitool's own included.
async fn active_sessions(sim: &Arc<IpmiSims>) -> usize {
    let sim = sim.clone();
    let out =
        tokio::task::spawn_blocking(move || sim.ipmitool(0, &["session", "info", "active"])).await.unwrap();
    out.lines()
        .find_map(|l| l.strip_prefix("active sessions"))
        .and_then(|v| v.trim_start_matches([' ', ':']).trim().parse().ok())
        .unwrap_or_else(|| panic!("no `active sessions` line in: {out}"))
}

/// A server over an inventory of one device `name` whose BMC is `bmc` (an inline table), sweeping every
/// second, once it has swept three times; its kept sessions; and the directory its files live in.
async fn serve_until_three_sweeps(
    name: &str,
    bmc: &str,
) -> (lifeline_server::Running, lifeline_bmc::KeptSessions, tempfile::TempDir) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = tempfile::tempdir().unwrap();
    let config = "[server]\nsweep-interval = \"1s\"\nconsole-logging = false\n";
    let settings = common::one_bmc_settings(dir.path(), name, bmc, Some(config));
    let base = Lifeline::new(&settings, Identity::new("server")).unwrap();
    let opts = lifeline_server::ServeOptions {
        listen: Some("127.0.0.1:0".into()),
        plain_http: true,
        responder: Some(Arc::new(lifeline_server::policy::RecordOnly)),
        ..Default::default()
    };
    let running = lifeline_server::start(base, &opts).await.unwrap();
    let st = running.state.clone();
    let t0 = Instant::now();
    while st.metrics.sweeps.load(Ordering::Relaxed) < 3 {
        assert!(t0.elapsed() < Duration::from_secs(60), "three sweeps did not run in 60 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let kept = st.base.bmc_pool().await.unwrap().options().kept.clone().expect("the server keeps sessions");
    let row = st.base.latest_observation(name, "sweep").await.unwrap().expect("a sweep observation");
    assert_eq!(row.value["power"], "on", "{:?}", row.value);
    (running, kept, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduled_sweeps_keep_one_ipmi_session_and_the_graceful_end_closes_it() {
    let Some(sim) = IpmiSims::start(1) else { return };
    let sim = Arc::new(sim);
    let bmc = format!("{{ address = \"{}\", port = {IPMI_SIM_BASE_PORT}, protocol = \"ipmi\" }}", sim.ip);
    let (running, kept, _dir) = serve_until_three_sweeps("node", &bmc).await;
    let stats = kept.stats();
    assert!(stats.reused >= 2, "later sweeps reuse the first one's session: {stats:?}");
    assert_eq!(stats.kept, 1, "{stats:?}");
    // Ours and ipmitool's: three sweeps, one session.
    assert_eq!(active_sessions(&sim).await, 2);

    running.stop().await.unwrap();
    assert!(kept.is_closed() && kept.is_empty(), "{:?}", kept.stats());
    assert_eq!(active_sessions(&sim).await, 1, "the server left its kept session on the BMC");
}

/// The same for a Redfish BMC (Lifeline's simulator, which counts its sessions and the requests it gets by
/// method): the scheduled sweeps log in once and keep that session's token, and the ordered end deletes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduled_sweeps_keep_one_redfish_session_and_the_graceful_end_deletes_it() {
    let ip = std::net::IpAddr::V4(lifeline_test_utils::unique_loopback());
    let spec = lifeline_sim::ServerSpec::bare("rfnode", ip, "admin", "password");
    let fleet = lifeline_sim::Fleet::start(
        lifeline_sim::FleetSpec { servers: vec![spec], switches: vec![] },
        lifeline_sim::SimOptions::for_tests(),
    )
    .await
    .expect("fleet starts");
    let ep = fleet.endpoint("rfnode", lifeline_sim::EndpointKind::Redfish).expect("a Redfish endpoint");
    let bmc = fleet.redfish("rfnode").unwrap();
    let inline = format!("{{ address = \"{}\", port = {}, protocol = \"redfish\" }}", ep.address, ep.port);
    let (running, kept, _dir) = serve_until_three_sweeps("rfnode", &inline).await;
    let stats = kept.stats();
    assert!(stats.reused >= 2, "later sweeps reuse the first one's session: {stats:?}");
    assert_eq!((stats.kept, stats.redfish_kept), (1, 1), "{stats:?}");
    let requests = bmc.requests();
    assert_eq!((requests.post, requests.delete), (1, 0), "three sweeps, one login: {requests:?}");
    assert_eq!(bmc.session_count(), 1);

    running.stop().await.unwrap();
    assert!(kept.is_closed() && kept.is_empty(), "{:?}", kept.stats());
    assert_eq!(bmc.session_count(), 0, "the server left its kept session on the BMC");
    assert_eq!(bmc.requests().delete, 1);
}
