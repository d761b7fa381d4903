//! Redfish over plain HTTP (issue 16 item 8), against a real sushy-emulator started with the shared peers'
//! `start-redfish-emulator.sh --http` in a private run directory: reached only when asked for
//! (`redfish+http://`), power and health work, and the hygiene audit reports it as insecure.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::*;
use lifeline_bmc::*;
use lifeline_test_utils::unique_loopback;
use lifeline_types::{PowerAction, PowerState};

struct Emulator {
    run: tempfile::TempDir,
    script_dir: PathBuf,
    url: String,
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = Command::new(self.script_dir.join("stop-all.sh"))
            .arg("redfish")
            .env("OOB_PEERS_RUN", self.run.path())
            .status();
    }
}

fn start_http() -> Option<Emulator> {
    let Some(dir) = peers_dir() else { return skip("shared peers not found (set OOB_PEERS_DIR)".into()) };
    if std::env::var("OOB_PEERS_VENV").is_err() && !have("sushy-emulator") {
        return skip("sushy-emulator not found (set OOB_PEERS_VENV)".into());
    }
    let run = tempfile::tempdir().unwrap();
    let ip = unique_loopback();
    let port = std::net::TcpListener::bind((ip, 0)).unwrap().local_addr().unwrap().port();
    let out = Command::new(dir.join("start-redfish-emulator.sh"))
        .args(["--http", "--instant-power", "--static-port", "0", "--systems", "1"])
        .args(["--addr", &ip.to_string(), "--port", &port.to_string()])
        .env("OOB_PEERS_RUN", run.path())
        .output()
        .expect("run start-redfish-emulator.sh");
    let e = Emulator { run, script_dir: dir, url: format!("redfish+http://admin@{ip}:{port}") };
    if !out.status.success() {
        let why =
            format!("start-redfish-emulator.sh --http failed: {}", String::from_utf8_lossy(&out.stderr));
        return skip(why);
    }
    Some(e)
}

#[tokio::test]
async fn plain_http_only_when_asked_and_audited_as_insecure() {
    let Some(emu) = start_http() else { return };
    let t = BmcTarget::parse_url(&emu.url, "password").unwrap();
    assert!(!t.redfish_tls);
    let (pool, _) = pool_with(quick_options());
    let bmc = pool.bmc(t.clone());
    assert_eq!(bmc.power_state().await.unwrap(), PowerState::On);
    let h = bmc.health().await.unwrap();
    assert!(!h.sensors.is_empty(), "{h:#?}");
    let r = bmc.power(PowerAction::Off, None).await.unwrap();
    assert!(r.confirmed, "{r:#?}");
    bmc.power(PowerAction::On, None).await.unwrap();

    // `redfish://` to the same service is TLS and fails: plain HTTP is never a silent fallback.
    let tls = BmcTarget::parse_url(&emu.url.replace("redfish+http://", "redfish://"), "password").unwrap();
    let e = pool.bmc(tls).power_state().await.unwrap_err();
    assert!(matches!(e, BmcError::Redfish { .. }), "{}", error_chain(&e));

    let rows = pool
        .hygiene_audit(vec![t], &hygiene::HygieneOptions { check_defaults: false, ..Default::default() })
        .await;
    let row = &rows[0];
    assert!(row.redfish_plain_http, "{row:#?}");
    let f = row.findings.iter().find(|f| f.code == "redfish-plain-http").expect("finding");
    assert_eq!(f.severity, lifeline_types::Health::Critical);
    assert!(row.certificate.is_none());
}
