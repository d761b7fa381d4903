//! Against a real third-party BMC: OpenIPMI `ipmi_sim`, one private instance per test started with
//! `shared/peers/start-ipmi-sim.sh` on a per-test loopback address. The host side of the BMC's serial
//! line is a TCP port (socat): what we write there is what the "host" prints.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use lifeline_console::{
    AttachOptions, ConsoleError, ConsoleManager, DirLogIndex, ManagerConfig, RecordKind, SolTransport,
    TransportError, Viewer, ViewerEvent, WriteMode,
};
use lifeline_ipmi::CipherSuite;
use lifeline_ipmi::ClientConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

mod common;
use common::{IpmiSim, ipmitool};

type Bmc = IpmiSim;

fn ipmitool_args(b: &Bmc) -> Vec<String> {
    b.ipmitool_args()
}

fn transport(name: &str, b: &Bmc) -> SolTransport {
    let mut client = ClientConfig::new(b.user.clone(), b.password.clone());
    // ipmi_sim has no suite 17: skip the probe.
    client.cipher_suites = vec![CipherSuite::Suite3];
    SolTransport::new(name, b.addr, client)
}

fn manager(dir: &std::path::Path) -> ConsoleManager {
    let mut cfg = ManagerConfig::new(dir);
    cfg.keepalive = Duration::from_secs(2);
    cfg.reconnect_min = Duration::from_millis(200);
    cfg.reconnect_max = Duration::from_secs(1);
    ConsoleManager::new(cfg.clone(), Arc::new(DirLogIndex::new(cfg.log_root()))).unwrap()
}

async fn read_until(v: &mut Viewer, needle: &str, within: Duration) -> String {
    let mut got = String::new();
    let r = tokio::time::timeout(within, async {
        while !got.contains(needle) {
            match v.recv().await {
                ViewerEvent::Data(b) => got.push_str(&String::from_utf8_lossy(&b)),
                ViewerEvent::Closed => return,
                _ => {}
            }
        }
    })
    .await;
    assert!(r.is_ok() && got.contains(needle), "waiting for {needle:?}; got {got:?}");
    got
}

async fn serial_read_until(s: &mut TcpStream, needle: &[u8]) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    tokio::time::timeout(Duration::from_secs(10), async {
        while !got.windows(needle.len()).any(|w| w == needle) {
            let n = s.read(&mut buf).await.unwrap();
            assert!(n > 0, "serial line closed");
            got.extend_from_slice(&buf[..n]);
        }
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "host side never got {:?}; got {:?}",
            String::from_utf8_lossy(needle),
            String::from_utf8_lossy(&got)
        )
    });
    got
}

async fn log_text(m: &ConsoleManager, name: &str) -> (String, Vec<String>) {
    m.flush_logs().await;
    let mut r = m.log(name, None, false).unwrap();
    let (mut out, mut markers) = (Vec::new(), Vec::new());
    while let Some(rec) = r.next().await {
        let rec = rec.unwrap();
        match rec.kind {
            RecordKind::Output => out.extend(rec.data),
            RecordKind::Marker => markers.push(String::from_utf8_lossy(&rec.data).into_owned()),
        }
    }
    (String::from_utf8_lossy(&out).into_owned(), markers)
}

#[tokio::test]
async fn host_text_reaches_two_viewers_and_the_log_and_keys_reach_the_host() {
    let Some(b) = IpmiSim::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path());
    m.add("bmc1", Arc::new(transport("bmc1", &b))).unwrap();
    let mut serial = TcpStream::connect(b.serial).await.unwrap();
    let (mut alice, rep) = m
        .attach("bmc1", AttachOptions { who: "alice".into(), mode: WriteMode::Write, steal: false })
        .await
        .unwrap();
    let rep = rep.unwrap();
    assert!(!rep.stole && rep.detail.contains("cipher suite 3"), "{rep:?}");
    let (mut bob, _) =
        m.attach("bmc1", AttachOptions { who: "bob".into(), ..Default::default() }).await.unwrap();
    // Let SOL settle, then the host prints.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let text = "Debian GNU/Linux 12 leaf1 ttyS0\r\n\r\nleaf1 login: ";
    serial.write_all(text.as_bytes()).await.unwrap();
    let a = read_until(&mut alice, "login: ", Duration::from_secs(10)).await;
    let bb = read_until(&mut bob, "login: ", Duration::from_secs(10)).await;
    assert!(a.contains(text) && bb.contains(text), "{a:?} / {bb:?}");
    // Keys typed by the writer arrive on the host side; the read-only viewer cannot type.
    // ipmi_sim quirk: it keeps the inbound SOL sequence number across activations and silently drops
    // (after acking) a new activation's first packet when it reuses the previous activation's last
    // number (ipmitool loses its first keystrokes the same way). A lone CR goes first for that.
    alice.write(b"\r").await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    alice.write(b"root\r").await.unwrap();
    serial_read_until(&mut serial, b"root\r").await;
    assert!(matches!(bob.write(b"x").await, Err(ConsoleError::NotWriter { .. })));
    // A larger burst (several SOL packets) arrives complete and in order.
    let burst: String = (0..40).map(|i| format!("[ {i:3}.000000] kernel line {i}\r\n")).collect();
    serial.write_all(burst.as_bytes()).await.unwrap();
    read_until(&mut alice, "kernel line 39\r\n", Duration::from_secs(10)).await;
    drop(bob);
    drop(alice);
    m.shutdown().await;
    let (out, markers) = log_text(&m, "bmc1").await;
    assert!(out.contains(text) && out.contains(&burst), "log: {out:?}");
    eprintln!("markers: {markers:?}");
    assert!(markers.iter().any(|t| t == "console session closed"), "{markers:?}");
    // No orphan: the payload is free again (a plain activation succeeds without stealing).
    let m2 = manager(dir.path());
    m2.add("bmc1", Arc::new(transport("bmc1", &b))).unwrap();
    let (_v, rep) =
        m2.attach("bmc1", AttachOptions { who: "carol".into(), ..Default::default() }).await.unwrap();
    assert!(!rep.unwrap().stole);
    m2.shutdown().await;
}

/// ipmitool holding the SOL payload (stdin kept open so it stays attached).
struct IpmitoolSol(Child);

impl Drop for IpmitoolSol {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn a_stuck_payload_is_reported_and_stolen_only_with_steal() {
    let Some(b) = IpmiSim::start() else { return };
    let Some(tool) = ipmitool() else { return };
    let mut holder = IpmitoolSol(
        Command::new(tool)
            .args(ipmitool_args(&b))
            .args(["sol", "activate"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path());
    m.add("bmc2", Arc::new(transport("bmc2", &b))).unwrap();
    // Wait until ipmitool really holds it (our attach then reports busy).
    let mut busy = None;
    for _ in 0..50 {
        match m.attach("bmc2", AttachOptions { who: "alice".into(), ..Default::default() }).await {
            Err(ConsoleError::Open { source: TransportError::PayloadBusy { instance, .. }, .. }) => {
                busy = Some(instance);
                break;
            }
            Ok((v, _)) => {
                drop(v);
                m.stop("bmc2", true).await.unwrap();
            }
            Err(e) => panic!("{e:?}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(busy, Some(1), "ipmitool never held the payload");
    // With steal: ipmitool's session is deactivated, ours is active, and the caller is told.
    let (mut v, rep) = m
        .attach("bmc2", AttachOptions { who: "alice".into(), mode: WriteMode::Write, steal: true })
        .await
        .unwrap();
    assert!(rep.unwrap().stole);
    let mut serial = TcpStream::connect(b.serial).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    serial.write_all(b"after the steal\r\n").await.unwrap();
    read_until(&mut v, "after the steal", Duration::from_secs(10)).await;
    // ipmitool noticed it lost the payload and exited.
    let mut gone = false;
    for _ in 0..10 {
        if holder.0.try_wait().unwrap().is_some() {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, markers) = log_text(&m, "bmc2").await;
    assert!(markers.iter().any(|t| t.contains("stolen")), "{markers:?}");
    drop(v);
    m.shutdown().await;
    eprintln!("ipmitool exited after the steal: {gone}");
}

#[tokio::test]
async fn a_session_dropped_mid_stream_is_reconnected_and_the_log_shows_the_gap() {
    let Some(b) = IpmiSim::start() else { return };
    let Some(tool) = ipmitool() else { return };
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path());
    m.add("bmc3", Arc::new(transport("bmc3", &b))).unwrap();
    let mut serial = TcpStream::connect(b.serial).await.unwrap();
    let (mut v, _) =
        m.attach("bmc3", AttachOptions { who: "alice".into(), ..Default::default() }).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    serial.write_all(b"before the drop\r\n").await.unwrap();
    read_until(&mut v, "before the drop", Duration::from_secs(10)).await;
    // Another client deactivates our payload (what a BMC does when it drops a session).
    let st = Command::new(tool).args(ipmitool_args(&b)).args(["sol", "deactivate"]).output().unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    // The manager notices and reconnects on its own.
    let mut saw_lost = false;
    let mut saw_back = false;
    tokio::time::timeout(Duration::from_secs(20), async {
        while !saw_back {
            match v.recv().await {
                ViewerEvent::Marker(t) if t.starts_with("console link lost") => saw_lost = true,
                ViewerEvent::Marker(t) if t.starts_with("reconnected after a gap") => saw_back = true,
                _ => {}
            }
        }
    })
    .await
    .expect("no reconnect within 20 s");
    assert!(saw_lost);
    tokio::time::sleep(Duration::from_millis(300)).await;
    serial.write_all(b"after the reconnect\r\n").await.unwrap();
    read_until(&mut v, "after the reconnect", Duration::from_secs(10)).await;
    drop(v);
    m.shutdown().await;
    let (out, markers) = log_text(&m, "bmc3").await;
    let lost = markers.iter().position(|t| t.starts_with("console link lost")).expect("gap start in log");
    let back = markers.iter().position(|t| t.starts_with("reconnected after a gap")).expect("gap end in log");
    assert!(lost < back, "{markers:?}");
    let (x, y) = (out.find("before the drop").unwrap(), out.find("after the reconnect").unwrap());
    assert!(x < y);
}

/// The simulator's bootloader machine plugged into ipmi_sim's serial line: the profile drives a
/// boot-looping switch through real lanplus + SOL (a third-party BMC) into its rescue shell.
async fn rescue_over_real_sol(
    flavor: lifeline_sim::bootloader::Flavor,
    profile: lifeline_console::Bootloader,
) {
    use lifeline_sim::bootloader::{BootConsole, MachineConfig, Stage};
    let Some(b) = IpmiSim::start() else { return };
    let serial = TcpStream::connect(b.serial).await.unwrap();
    let (mut rd, mut wr) = serial.into_split();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<bytes::Bytes>();
    let mc = MachineConfig { flavor, hostname: "sw-real-sol".into(), boot_loop: true };
    let boot = Arc::new(BootConsole::spawn(mc, 0.2, move |b| {
        let _ = tx.send(b);
    }));
    let pump_out = tokio::spawn(async move {
        while let Some(b) = rx.recv().await {
            if wr.write_all(&b).await.is_err() {
                return;
            }
        }
    });
    let b2 = boot.clone();
    let pump_in = tokio::spawn(async move {
        let mut buf = [0u8; 512];
        while let Ok(n) = rd.read(&mut buf).await {
            if n == 0 {
                return;
            }
            b2.input(&buf[..n]);
        }
    });
    // It is already looping when we arrive.
    assert!(boot.wait_for(Stage::Panicked, Duration::from_secs(30)).await);
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path());
    m.add("sw", Arc::new(transport("sw", &b))).unwrap();
    let (v, _) = m
        .attach("sw", AttachOptions { who: "runbook".into(), mode: WriteMode::Write, steal: false })
        .await
        .unwrap();
    let mut e = lifeline_console::Expect::new("sw", v);
    let opts = lifeline_console::RescueOptions {
        wait_for_bootloader: Duration::from_secs(30),
        step_timeout: Duration::from_secs(5),
        attempts: 6,
        ..Default::default()
    };
    let rep = match lifeline_console::break_into_rescue(&mut e, profile, &opts).await {
        Ok(r) => r,
        Err(err) => panic!("{profile:?} over ipmi_sim SOL: {err}\n{}", e.transcript_text()),
    };
    let want =
        if profile == lifeline_console::Bootloader::Aboot { Stage::LoaderShell } else { Stage::RescueShell };
    assert_eq!(boot.stage(), want, "{}", e.transcript_text());
    assert!(boot.boots() >= 2, "rescued out of a boot loop");
    eprintln!("{profile:?} over real SOL: {rep:?}, {} boots", boot.boots());
    drop(e);
    m.shutdown().await;
    pump_in.abort();
    pump_out.abort();
}

#[tokio::test]
async fn aboot_profile_over_ipmi_sim_sol() {
    rescue_over_real_sol(lifeline_sim::bootloader::Flavor::Aboot, lifeline_console::Bootloader::Aboot).await;
}

#[tokio::test]
async fn onie_profile_over_ipmi_sim_sol() {
    rescue_over_real_sol(lifeline_sim::bootloader::Flavor::OnieGrub, lifeline_console::Bootloader::Onie)
        .await;
}

/// A host that resets in POST and never reaches a bootloader, printed through a real BMC's SOL: the GRUB
/// rescue fails within two cycles, naming what repeats, instead of waiting out its 300 s.
#[tokio::test]
async fn a_post_loop_fails_the_rescue_early_with_what_was_seen() {
    let Some(b) = IpmiSim::start() else { return };
    let mut serial = TcpStream::connect(b.serial).await.unwrap();
    let looping = tokio::spawn(async move {
        for cycle in 0u32.. {
            let post = format!(
                "\r\nAMI BIOS v2.21 (C) 2026\r\nCPU0: Intel Xeon Platinum 8480+\r\nMemory test: {}K OK\r\n\
                 PCIe slot 3: link training failed\r\nWatchdog reset (cycle {cycle})\r\n",
                2_097_152 + cycle
            );
            if serial.write_all(post.as_bytes()).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(700)).await;
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path());
    m.add("n1", Arc::new(transport("n1", &b))).unwrap();
    let (v, _) = m
        .attach("n1", AttachOptions { who: "t".into(), mode: WriteMode::Write, steal: false })
        .await
        .unwrap();
    let mut e = lifeline_console::Expect::new("n1", v);
    let opts = lifeline_console::RescueOptions {
        wait_for_bootloader: Duration::from_secs(300),
        ..Default::default()
    };
    let started = std::time::Instant::now();
    let err = lifeline_console::break_into_rescue(&mut e, lifeline_console::Bootloader::Grub, &opts)
        .await
        .expect_err("a POST loop cannot be rescued");
    let took = started.elapsed();
    let msg = err.to_string();
    assert!(took < Duration::from_secs(20), "took {took:?}: {msg}");
    assert!(msg.contains("without reaching a bootloader") && msg.contains("AMI BIOS"), "{msg}");
    drop(e);
    m.shutdown().await;
    looping.abort();
}
