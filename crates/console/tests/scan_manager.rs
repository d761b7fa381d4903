//! The console as a sensor inside the manager: every complete line a session logs goes through the
//! scanner and findings are published on `ConsoleManager::findings` — over the in-memory line (chunked
//! real kernel lines) and over real lanplus + SOL from the simulator's boot-looping switch.

use std::sync::Arc;
use std::time::Duration;

use lifeline_console::scan::{ConsoleFinding, FindingKind, RuleSet};
use lifeline_console::{ConsoleManager, DirLogIndex, ManagerConfig, SolTransport, memory_line};
use lifeline_ipmi::{CipherSuite, ClientConfig};
use lifeline_sim::host::HostKind;
use lifeline_sim::{Fault, Host, HostConfig};
use lifeline_types::Platform;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

fn scanning_manager(dir: &std::path::Path) -> ConsoleManager {
    let mut cfg = ManagerConfig::new(dir);
    cfg.reconnect_min = Duration::from_millis(50);
    cfg.reconnect_max = Duration::from_millis(500);
    cfg.scan = Some(RuleSet::builtin());
    ConsoleManager::new(cfg.clone(), Arc::new(DirLogIndex::new(cfg.log_root()))).unwrap()
}

async fn next_of(
    rx: &mut broadcast::Receiver<ConsoleFinding>,
    kind: FindingKind,
    within: Duration,
) -> ConsoleFinding {
    let mut seen = Vec::new();
    let r = tokio::time::timeout(within, async {
        loop {
            match rx.recv().await {
                Ok(f) if f.finding.kind == kind => return f,
                Ok(f) => seen.push(format!("{} {}", f.finding.rule, f.finding.line)),
                Err(broadcast::error::RecvError::Lagged(n)) => seen.push(format!("lagged {n}")),
                Err(broadcast::error::RecvError::Closed) => panic!("findings closed"),
            }
        }
    })
    .await;
    r.unwrap_or_else(|_| panic!("no {kind} finding within {within:?}; saw {seen:?}"))
}

#[tokio::test]
async fn chunked_real_lines_become_findings_named_by_console_and_the_log_is_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let m = scanning_manager(dir.path());
    let mut rx = m.findings();
    let (t, host) = memory_line("gpu-node-07", 64);
    m.add("gpu-node-07", Arc::new(t)).unwrap();
    m.start("gpu-node-07", false).await.unwrap();
    // Source S8 and S27 (tests/data/console_scan/SOURCES.md), cut mid-line and mid-escape.
    let stream: &[u8] = b"\x1b[0m[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4).\r\n[ 4443.974372] mlx5_core 0000:53:00.0 mlx5_3: Port: 1 Link DOWN\r\n";
    for part in stream.chunks(17) {
        assert!(host.write(part.to_vec()));
    }
    let xid = next_of(&mut rx, FindingKind::GpuXid, Duration::from_secs(10)).await;
    assert_eq!(xid.console, "gpu-node-07");
    assert_eq!(xid.finding.xid(), Some(119));
    assert_eq!(xid.finding.pci(), Some("0000:9b:00"));
    let link = next_of(&mut rx, FindingKind::LinkDown, Duration::from_secs(10)).await;
    assert_eq!(link.finding.field("device"), Some("mlx5_3"));
    m.shutdown().await;
    let mut r = m.log("gpu-node-07", None, false).unwrap();
    let mut logged = Vec::new();
    while let Some(rec) = r.next().await {
        let rec = rec.unwrap();
        if rec.kind == lifeline_console::RecordKind::Output {
            logged.extend(rec.data);
        }
    }
    assert_eq!(logged, stream, "scanning never changes what is logged");
}

#[tokio::test]
async fn without_rules_nothing_is_scanned() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = ManagerConfig::new(dir.path());
    assert!(cfg.scan.is_none(), "scanning is opt-in");
    let m = ConsoleManager::new(cfg.clone(), Arc::new(DirLogIndex::new(cfg.log_root()))).unwrap();
    let mut rx = m.findings();
    let (t, host) = memory_line("n1", 64);
    m.add("n1", Arc::new(t)).unwrap();
    m.start("n1", false).await.unwrap();
    host.write(b"[    5.390622] Kernel panic - not syncing: Fatal exception\r\n".to_vec());
    m.flush_logs().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(matches!(rx.try_recv(), Err(broadcast::error::TryRecvError::Empty)));
    m.shutdown().await;
}

#[tokio::test]
async fn a_boot_looping_switch_over_sol_raises_a_kernel_panic_and_then_a_boot_loop() {
    let mut hc = HostConfig::server("spine7");
    hc.kind = HostKind::Switch(Platform::Eos);
    hc.time_scale = 0.05;
    let host = Host::new(hc);
    let ip = lifeline_test_utils::unique_loopback();
    let socket = tokio::net::UdpSocket::bind((ip, 0)).await.unwrap();
    let addr = socket.local_addr().unwrap();
    let cancel = CancellationToken::new();
    tokio::spawn(lifeline_sim::ipmi::serve(socket, host.clone(), cancel.clone()));
    let _stop = cancel.clone().drop_guard();

    let dir = tempfile::tempdir().unwrap();
    let m = scanning_manager(dir.path());
    let mut rx = m.findings();
    let mut c = ClientConfig::new("admin", "password");
    c.cipher_suites = vec![CipherSuite::Suite17, CipherSuite::Suite3];
    m.add("spine7", Arc::new(SolTransport::new("spine7", addr, c))).unwrap();
    m.start("spine7", false).await.unwrap();
    host.inject(&Fault::BootLoop).unwrap();
    let panic = next_of(&mut rx, FindingKind::KernelPanic, Duration::from_secs(20)).await;
    assert_eq!(panic.console, "spine7");
    // The simulated Aboot machine panics the way a NOS without its root does.
    assert!(panic.finding.field("reason").is_some_and(|r| r.contains("Attempted to kill init")), "{panic:?}");
    let looping = next_of(&mut rx, FindingKind::BootLoop, Duration::from_secs(40)).await;
    assert_eq!(looping.finding.field("boots"), Some("3"));
    m.shutdown().await;
}
