//! The SSH console transport against a real OpenSSH `sshd` started by the test (own loopback address,
//! key auth, `ForceCommand` standing in for `obmc-console-client`): bytes both ways through the
//! manager, host-key pinning, and reconnect when the console command ends.

use std::sync::Arc;
use std::time::Duration;

use lifeline_console::{
    AttachOptions, ConsoleManager, ConsoleTransport, DirLogIndex, ManagerConfig, OpenOptions, SshLogin,
    SshTransport, TransportError, Viewer, ViewerEvent, WriteMode,
};

use lifeline_test_utils::Sshd;

/// The console: greets with its pid, echoes lines, ends after a line `quit` (the "BMC" drops us).
const CONSOLE: &str = r#"printf 'obmc console %s ready\r\n' $$; while read -r l; do [ "$l" = quit ] && exit 0; printf 'got:%s\r\n' "$l"; done"#;

fn start_sshd() -> Option<Sshd> {
    lifeline_test_utils::start_sshd_in("ed25519", |d| {
        std::fs::write(d.join("console.sh"), CONSOLE).unwrap();
        format!("ForceCommand sh {}", d.join("console.sh").display())
    })
}

fn transport(s: &Sshd, pin: Option<String>) -> SshTransport {
    let key = russh::keys::load_secret_key(&s.client_key, None).unwrap();
    let mut t = SshTransport::new(
        "bmc-ssh",
        s.addr.to_string(),
        s.port,
        s.user.clone(),
        SshLogin::Key(Arc::new(key)),
    );
    t.pinned_host_key = pin;
    t.pty = false;
    t
}

async fn read_until(v: &mut Viewer, needle: &str) -> String {
    let mut got = String::new();
    tokio::time::timeout(Duration::from_secs(10), async {
        while !got.contains(needle) {
            match v.recv().await {
                ViewerEvent::Data(b) => got.push_str(&String::from_utf8_lossy(&b)),
                ViewerEvent::Marker(m) => got.push_str(&format!("[{m}]")),
                ViewerEvent::Closed => return,
                _ => {}
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("waiting for {needle:?}; got {got:?}"));
    got
}

#[tokio::test]
async fn ssh_console_carries_bytes_and_reconnects_when_the_console_ends() {
    let Some(s) = start_sshd() else { return };
    // First contact reports the host key; pinning it works, a wrong pin is refused before auth.
    let (link, rep) = transport(&s, None).open(OpenOptions::default()).await.unwrap();
    link.close().await.unwrap();
    let fp = rep.detail.rsplit("sha256:").next().unwrap().to_owned();
    assert_eq!(fp.len(), 64, "{rep:?}");
    let bad = transport(&s, Some("00".repeat(32))).open(OpenOptions::default()).await.err().unwrap();
    assert!(matches!(bad, TransportError::HostKeyMismatch { .. }), "{bad:?}");

    let dir = tempfile::tempdir().unwrap();
    let mut cfg = ManagerConfig::new(dir.path());
    cfg.reconnect_min = Duration::from_millis(100);
    let m = ConsoleManager::new(cfg.clone(), Arc::new(DirLogIndex::new(cfg.log_root()))).unwrap();
    m.add("bmc-ssh", Arc::new(transport(&s, Some(fp)))).unwrap();
    let (mut v, _) = m
        .attach("bmc-ssh", AttachOptions { who: "alice".into(), mode: WriteMode::Write, steal: false })
        .await
        .unwrap();
    let first = read_until(&mut v, "ready\r\n").await;
    v.write(b"hello\n").await.unwrap();
    read_until(&mut v, "got:hello").await;
    // The console command ends (like obmc-console dropping the client): the manager reconnects.
    v.write(b"quit\n").await.unwrap();
    let after = read_until(&mut v, "reconnected after a gap").await;
    assert!(after.contains("console link lost"), "{after}");
    let second = read_until(&mut v, "ready\r\n").await;
    assert_ne!(first, second, "a new console process: {first:?} / {second:?}");
    assert!(matches!(
        v.send_break().await,
        Err(lifeline_console::ConsoleError::Open { source: TransportError::Unsupported { .. }, .. })
    ));
    drop(v);
    m.shutdown().await;
}
