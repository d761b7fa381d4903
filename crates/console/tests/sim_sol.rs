//! The SOL transport and the manager against the simulator's IPMI/SOL responder (`lifeline-sim`): a
//! boot-looping switch's console is read and logged over real lanplus + SOL, a `sol-stuck` payload is
//! stolen only when asked, and a BMC reset (sessions dropped) is reconnected with the gap in the log.
//!
//! Simulated switches boot through the simulator's bootloader models (ONIE/GRUB for SONiC, U-Boot for
//! Cumulus, Aboot for EOS), so the last tests here are the whole path: a boot-looping switch broken into
//! its bootloader by the expect profiles over lanplus + SOL.

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
    switch_on(name, Platform::Eos, 0.05).await
}

async fn switch_on(name: &str, platform: Platform, time_scale: f64) -> Sim {
    let mut cfg = HostConfig::server(name);
    cfg.kind = HostKind::Switch(platform);
    cfg.time_scale = time_scale;
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

/// A boot-looping switch of `platform`, rescued over SOL by `profile`; the console ends at `prompt`.
async fn rescue_over_sim_sol(platform: Platform, profile: lifeline_console::Bootloader, prompt: &str) {
    let name = format!("sw-{platform:?}").to_lowercase();
    let s = switch_on(&name, platform, 0.1).await;
    s.host.inject(&Fault::BootLoop).unwrap();
    // Let it panic and reboot at least once: the profile arrives at a switch already looping.
    lifeline_test_utils::wait_until_async("the switch panicked", Duration::from_secs(30), || async {
        s.host.console().history().contains("Kernel panic").then_some(())
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path());
    m.add(&name, Arc::new(transport(&name, &s))).unwrap();
    let (v, _) = m
        .attach(&name, AttachOptions { who: "runbook".into(), mode: WriteMode::Write, steal: false })
        .await
        .unwrap();
    let mut e = lifeline_console::Expect::new(&name, v);
    let opts = lifeline_console::RescueOptions {
        wait_for_bootloader: Duration::from_secs(30),
        step_timeout: Duration::from_secs(5),
        attempts: 6,
        ..Default::default()
    };
    let rep = match lifeline_console::break_into_rescue(&mut e, profile, &opts).await {
        Ok(r) => r,
        Err(err) => panic!("{profile:?} on simulated {platform:?}: {err}\n{}", e.transcript_text()),
    };
    assert!(rep.prompt.starts_with(prompt), "{rep:?}");
    assert!(
        s.host.console().history().trim_end().ends_with(prompt.trim_end()),
        "{}",
        s.host.console().history()
    );
    assert_eq!(s.host.phase(), lifeline_sim::Phase::Bootloader);
    drop(e);
    m.shutdown().await;
}

#[tokio::test]
async fn a_boot_looping_eos_switch_is_broken_into_aboot_over_sol() {
    rescue_over_sim_sol(Platform::Eos, lifeline_console::Bootloader::Aboot, "Aboot#").await;
}

#[tokio::test]
async fn a_boot_looping_sonic_switch_is_broken_into_onie_rescue_over_sol() {
    rescue_over_sim_sol(Platform::Sonic, lifeline_console::Bootloader::Onie, "ONIE:/ #").await;
}

#[tokio::test]
async fn a_boot_looping_cumulus_switch_is_broken_into_onie_rescue_via_uboot_over_sol() {
    rescue_over_sim_sol(Platform::Cumulus, lifeline_console::Bootloader::UBoot, "ONIE:/ #").await;
}
