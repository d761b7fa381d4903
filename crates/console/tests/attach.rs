//! Terminal attach: raw mode restored on every exit path (drop and panic), escapes handled, and the
//! copy loop between a terminal and a console.

use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::Duration;

use lifeline_console::{
    AttachOptions, ConsoleManager, Detach, DirLogIndex, HostInput, ManagerConfig, RawModeGuard, WriteMode,
    attach_io, memory_line,
};
use nix::sys::termios::{LocalFlags, tcgetattr};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn canonical(fd: impl AsFd) -> bool {
    let t = tcgetattr(fd).unwrap();
    t.local_flags.contains(LocalFlags::ICANON) && t.local_flags.contains(LocalFlags::ECHO)
}

#[test]
fn raw_mode_is_restored_on_drop_and_on_panic() {
    let pty = nix::pty::openpty(None, None).unwrap();
    assert!(canonical(&pty.slave), "a fresh pty is in cooked mode");
    {
        let _g = RawModeGuard::enter(&pty.slave).unwrap();
        assert!(!canonical(&pty.slave), "raw inside the guard");
    }
    assert!(canonical(&pty.slave), "restored after drop");

    // A panic while raw (the guard is leaked on purpose, as if a task died holding it): the hook
    // restores the terminal before the panic message is printed.
    let slave = pty.slave.try_clone().unwrap();
    let r = std::thread::spawn(move || {
        let g = RawModeGuard::enter(&slave).unwrap();
        std::mem::forget(g);
        panic!("boom while the terminal is raw");
    })
    .join();
    assert!(r.is_err());
    assert!(canonical(&pty.slave), "restored by the panic hook");
}

#[tokio::test]
async fn attach_copies_both_ways_and_handles_escapes() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = ManagerConfig::new(dir.path());
    let m = ConsoleManager::new(cfg.clone(), Arc::new(DirLogIndex::new(cfg.log_root()))).unwrap();
    let (t, mut host) = memory_line("leaf1", 64);
    m.add("leaf1", Arc::new(t)).unwrap();
    let (viewer, _) = m
        .attach("leaf1", AttachOptions { who: "alice".into(), mode: WriteMode::Write, steal: false })
        .await
        .unwrap();
    let (mut term_in, input) = tokio::io::duplex(1024);
    let (output, mut term_out) = tokio::io::duplex(64 * 1024);
    let task = tokio::spawn(attach_io(viewer, input, output));

    host.write(&b"leaf1 login: "[..]);
    term_in.write_all(b"ls ~/x\r").await.unwrap();
    assert_eq!(
        host.recv_input().await,
        Some(HostInput::Data("ls ~/x\r".into())),
        "a ~ inside a line is plain"
    );
    term_in.write_all(b"~?").await.unwrap();
    term_in.write_all(b"~B").await.unwrap();
    assert_eq!(host.recv_input().await, Some(HostInput::Break));
    term_in.write_all(b"~.").await.unwrap();
    let how = tokio::time::timeout(Duration::from_secs(5), task).await.unwrap().unwrap().unwrap();
    assert_eq!(how, Detach::Escape);
    let mut shown = Vec::new();
    term_out.read_to_end(&mut shown).await.unwrap();
    let shown = String::from_utf8_lossy(&shown);
    for needle in [
        "connected to leaf1 as alice (writing)",
        "leaf1 login: ",
        "~.  - leave the console",
        "break sent",
        "detached",
    ] {
        assert!(shown.contains(needle), "missing {needle:?} in {shown:?}");
    }
    // Detaching gave the session back (last viewer).
    lifeline_test_utils::wait_until_async("session closed", Duration::from_secs(5), || async {
        (!host.is_linked()).then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_read_only_terminal_is_told_and_can_take_over() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = ManagerConfig::new(dir.path());
    let m = ConsoleManager::new(cfg.clone(), Arc::new(DirLogIndex::new(cfg.log_root()))).unwrap();
    let (t, mut host) = memory_line("leaf2", 64);
    m.add("leaf2", Arc::new(t)).unwrap();
    let (_alice, _) = m
        .attach("leaf2", AttachOptions { who: "alice".into(), mode: WriteMode::Write, steal: false })
        .await
        .unwrap();
    let (bob, _) =
        m.attach("leaf2", AttachOptions { who: "bob".into(), ..Default::default() }).await.unwrap();
    let (mut term_in, input) = tokio::io::duplex(1024);
    let (output, mut term_out) = tokio::io::duplex(64 * 1024);
    let task = tokio::spawn(attach_io(bob, input, output));
    term_in.write_all(b"x").await.unwrap();
    term_in.write_all(b"\r~W").await.unwrap();
    term_in.write_all(b"y").await.unwrap();
    assert_eq!(host.recv_input().await, Some(HostInput::Data("y".into())), "only what came after ~W");
    drop(term_in);
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(5), task).await.unwrap().unwrap().unwrap(),
        Detach::InputClosed
    );
    let mut shown = Vec::new();
    term_out.read_to_end(&mut shown).await.unwrap();
    let shown = String::from_utf8_lossy(&shown);
    assert!(shown.contains("read-only (alice is writing)"), "{shown}");
    assert!(shown.contains("you took over writing from alice"), "{shown}");
}
