//! The SOL transport and the manager against the simulator's IPMI/SOL responder (`lifeline-sim`): a
//! boot-looping switch's console is read and logged over real lanplus + SOL, a `sol-stuck` payload is
//! stolen only when asked, and a BMC reset (sessions dropped) is reconnected with the gap in the log.
//!
//! The simulated host still prints its own boot texts here; the bootloader state machines
//! (`lifeline_sim::bootloader`) are tested through the in-memory line in `profiles.rs` until the host
//! model drives its console with them.

use std::sync::Arc;
use std::time::Duration;

use lifeline_console::{
    AttachOptions, ConsoleError, ConsoleManager, DirLogIndex, ManagerConfig, SolTransport, TransportError,
    Viewer, ViewerEvent, WriteMode,
};
use lifeline_ipmi::{CipherSuite, ClientConfig};
use lifeline_sim::host::HostKind;
use lifeline_sim::{Fault, Host, HostConfig};
use lifeline_types::Platform;
use tokio_util::sync::CancellationToken;

struct Sim {
    host: Arc<Host>,
    addr: std::net::SocketAddr,
    cancel: CancellationToken,
}

impl Drop for Sim {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

async fn switch(name: &str) -> Sim {
    let mut cfg = HostConfig::server(name);
    cfg.kind = HostKind::Switch(Platform::Eos);
    cfg.time_scale = 0.05;
    let host = Host::new(cfg);
    let ip = lifeline_test_utils::unique_loopback();
    let socket = tokio::net::UdpSocket::bind((ip, 0)).await.unwrap();
    let addr = socket.local_addr().unwrap();
    let cancel = CancellationToken::new();
    tokio::spawn(lifeline_sim::ipmi::serve(socket, host.clone(), cancel.clone()));
    Sim { host, addr, cancel }
}

fn manager(dir: &std::path::Path) -> ConsoleManager {
    let mut cfg = ManagerConfig::new(dir);
    cfg.keepalive = Duration::from_millis(500);
    cfg.reconnect_min = Duration::from_millis(100);
    cfg.reconnect_max = Duration::from_millis(500);
    ConsoleManager::new(cfg.clone(), Arc::new(DirLogIndex::new(cfg.log_root()))).unwrap()
}

fn transport(name: &str, s: &Sim) -> SolTransport {
    let mut c = ClientConfig::new("admin", "password");
    c.cipher_suites = vec![CipherSuite::Suite17, CipherSuite::Suite3];
    let mut t = SolTransport::new(name, s.addr, c);
    t.keepalive_timeout = Duration::from_secs(3);
    t
}

async fn read_until(v: &mut Viewer, needle: &str, within: Duration) -> String {
    let mut got = String::new();
    let _ = tokio::time::timeout(within, async {
        while !got.contains(needle) {
            match v.recv().await {
                ViewerEvent::Data(b) => got.push_str(&String::from_utf8_lossy(&b)),
                ViewerEvent::Marker(m) => got.push_str(&format!("\n[{m}]\n")),
                ViewerEvent::Closed => return,
                _ => {}
            }
        }
    })
    .await;
    assert!(got.contains(needle), "waiting for {needle:?}; got {got:?}");
    got
}

#[tokio::test]
async fn a_boot_looping_switch_console_is_read_and_logged_over_sol() {
    let s = switch("spine1").await;
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path());
    m.add("spine1", Arc::new(transport("spine1", &s))).unwrap();
    let (mut v, rep) = m
        .attach("spine1", AttachOptions { who: "alice".into(), mode: WriteMode::Write, steal: false })
        .await
        .unwrap();
    assert!(rep.unwrap().detail.contains("cipher suite 17"));
    s.host.inject(&Fault::BootLoop).unwrap();
    let text = read_until(&mut v, "Rebooting in 5 seconds", Duration::from_secs(10)).await;
    assert!(text.contains("Kernel panic"), "{text}");
    read_until(&mut v, "Aboot", Duration::from_secs(10)).await;
    drop(v);
    m.shutdown().await;
    m.flush_logs().await;
    let mut r = m.log("spine1", None, false).unwrap();
    let mut all = Vec::new();
    while let Some(rec) = r.next().await {
        all.extend(rec.unwrap().data);
    }
    assert!(String::from_utf8_lossy(&all).contains("Kernel panic"));
}

#[tokio::test]
async fn a_stuck_payload_is_stolen_only_with_steal_and_a_bmc_reset_is_reconnected() {
    let s = switch("spine2").await;
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path());
    m.add("spine2", Arc::new(transport("spine2", &s))).unwrap();
    s.host.inject(&Fault::SolStuck).unwrap();
    let err =
        m.attach("spine2", AttachOptions { who: "alice".into(), ..Default::default() }).await.unwrap_err();
    assert!(matches!(err, ConsoleError::Open { source: TransportError::PayloadBusy { .. }, .. }), "{err:?}");
    let (mut v, rep) = m
        .attach("spine2", AttachOptions { who: "alice".into(), mode: WriteMode::Write, steal: true })
        .await
        .unwrap();
    assert!(rep.unwrap().stole);
    // The BMC resets: every session is gone; the manager notices (keepalive) and comes back.
    s.host.reset_bmc();
    let text = read_until(&mut v, "reconnected after a gap", Duration::from_secs(20)).await;
    assert!(text.contains("console link lost"), "{text}");
    // Still a working console afterwards.
    s.host.inject(&Fault::BootLoop).unwrap();
    read_until(&mut v, "Kernel panic", Duration::from_secs(10)).await;
    drop(v);
    m.shutdown().await;
}
