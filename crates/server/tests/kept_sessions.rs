//! The server's scheduled sweeps keep one IPMI session per BMC between rounds, and its ordered end
//! (the graceful SIGTERM path, `Running::stop`) closes them: counted on a real BMC, OpenIPMI `ipmi_sim`,
//! with `ipmitool session info active`.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use lifeline_engine::{Identity, Lifeline, Settings};
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduled_sweeps_keep_one_ipmi_session_and_the_graceful_end_closes_it() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let Some(sim) = IpmiSims::start(1) else { return };
    let sim = Arc::new(sim);
    let dir = tempfile::tempdir().unwrap();
    let pw = dir.path().join("bmc-pass");
    std::fs::write(&pw, "password\n").unwrap();
    std::fs::set_permissions(&pw, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let inv = dir.path().join("inventory.toml");
    std::fs::write(
        &inv,
        format!(
            "[cluster]\nname = \"k\"\noob-subnets = [\"127.0.0.0/8\"]\n\n[defaults.bmc]\nusername = \"admin\"\n\
             credential = \"file:{}\"\n\n[[site]]\nname = \"s\"\n\n[[rack]]\nname = \"r\"\nsite = \"s\"\n\n\
             [[device]]\nname = \"node\"\nrole = \"head-node\"\nrack = \"r\"\n\
             bmc = {{ address = \"{}\", port = {IPMI_SIM_BASE_PORT}, protocol = \"ipmi\" }}\n",
            pw.display(),
            sim.ip
        ),
    )
    .unwrap();
    let cfg = dir.path().join("lifeline.toml");
    std::fs::write(&cfg, "[server]\nsweep-interval = \"1s\"\nconsole-logging = false\n").unwrap();
    let settings = Settings {
        config: Some(cfg),
        inventory: Some(inv),
        data_dir: Some(dir.path().join("data")),
        ..Settings::default()
    };
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
    let stats = kept.stats();
    assert!(stats.reused >= 2, "later sweeps reuse the first one's session: {stats:?}");
    assert_eq!(stats.kept, 1, "{stats:?}");
    // Ours and ipmitool's: three sweeps, one session.
    assert_eq!(active_sessions(&sim).await, 2);
    let row = st.store.latest_observation("node", "sweep").await.unwrap().expect("a sweep observation");
    assert_eq!(row.value["power"], "on", "{:?}", row.value);

    running.stop().await.unwrap();
    assert!(kept.is_closed() && kept.is_empty(), "{:?}", kept.stats());
    assert_eq!(active_sessions(&sim).await, 1, "the server left its kept session on the BMC");
}
