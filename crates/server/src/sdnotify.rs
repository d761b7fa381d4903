//! systemd's readiness and watchdog protocol (`sd_notify(3)`), spoken directly: one datagram of
//! `KEY=VALUE` lines to the socket named by `$NOTIFY_SOCKET`.
//!
//! Why not libsystemd: the protocol is a datagram, and the jump host's unit (`deploy/lifeline.service`,
//! `Type=notify`) only needs three messages: READY=1 once the listener is bound and the scheduler started,
//! WATCHDOG=1 while the runtime still runs tasks (a wedged runtime misses pings and systemd restarts the
//! service), STOPPING=1 on the way out. Without `$NOTIFY_SOCKET` (not under systemd) every call does
//! nothing. Children the server starts (ssh, scontrol) inherit `$NOTIFY_SOCKET` (removing it from the
//! environment needs `unsafe`); the unit's `NotifyAccess=main` makes systemd ignore anything they send.

use std::io;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// Sends `state` to `$NOTIFY_SOCKET`; `Ok(false)` when not run by systemd.
pub fn notify(state: &str) -> io::Result<bool> {
    match std::env::var("NOTIFY_SOCKET") {
        Ok(socket) if !socket.is_empty() => notify_to(&socket, state).map(|()| true),
        _ => Ok(false),
    }
}

/// Sends `state` to `socket`: a path, or `@name` for a Linux abstract socket (systemd uses both).
pub fn notify_to(socket: &str, state: &str) -> io::Result<()> {
    let addr = match socket.strip_prefix('@') {
        Some(name) => abstract_addr(name.as_bytes())?,
        None => SocketAddr::from_pathname(socket)?,
    };
    let sock = UnixDatagram::unbound()?;
    // A full socket buffer (a stuck manager) must not stall the server.
    sock.set_write_timeout(Some(Duration::from_secs(2)))?;
    sock.send_to_addr(state.as_bytes(), &addr)?;
    Ok(())
}

#[cfg(target_os = "linux")]
fn abstract_addr(name: &[u8]) -> io::Result<SocketAddr> {
    use std::os::linux::net::SocketAddrExt;
    SocketAddr::from_abstract_name(name)
}

#[cfg(not(target_os = "linux"))]
fn abstract_addr(_name: &[u8]) -> io::Result<SocketAddr> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "abstract sockets are Linux-only"))
}

/// The watchdog period systemd asked for (`$WATCHDOG_USEC`), if it is meant for this process
/// (`$WATCHDOG_PID`, when set, is our pid).
pub fn watchdog_interval() -> Option<Duration> {
    parse_watchdog(
        std::env::var("WATCHDOG_USEC").ok().as_deref(),
        std::env::var("WATCHDOG_PID").ok().as_deref(),
        std::process::id(),
    )
}

fn parse_watchdog(usec: Option<&str>, pid: Option<&str>, me: u32) -> Option<Duration> {
    let usec: u64 = usec?.trim().parse().ok().filter(|u| *u > 0)?;
    if let Some(pid) = pid
        && pid.trim().parse::<u32>().ok() != Some(me)
    {
        return None;
    }
    Some(Duration::from_micros(usec))
}

/// Tells systemd the server is ready (with where it listens) and, when a watchdog is configured, pings
/// it at half the period until `shutdown`. Errors are logged: a lost notification is systemd's timeout to
/// handle, not a reason to stop serving.
pub fn started(url: &str, shutdown: CancellationToken) {
    let msg = format!("READY=1\nSTATUS=listening on {url}\nMAINPID={}", std::process::id());
    match notify(&msg) {
        Ok(true) => tracing::info!("told systemd we are ready"),
        Ok(false) => return,
        Err(e) => tracing::warn!(error = %e, "sd_notify READY=1 failed"),
    }
    let Some(period) = watchdog_interval() else { return };
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(period / 2);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tick.tick() => {
                    if let Err(e) = notify("WATCHDOG=1") {
                        tracing::warn!(error = %e, "sd_notify WATCHDOG=1 failed");
                    }
                }
            }
        }
    });
}

/// Tells systemd the server is shutting down (so `systemctl stop` waits instead of calling it a crash).
pub fn stopping() {
    if let Err(e) = notify("STOPPING=1") {
        tracing::warn!(error = %e, "sd_notify STOPPING=1 failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_socket_receives_the_message() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify.sock");
        let rx = UnixDatagram::bind(&path).unwrap();
        notify_to(path.to_str().unwrap(), "READY=1\nSTATUS=x").unwrap();
        let mut buf = [0u8; 64];
        let n = rx.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1\nSTATUS=x");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn an_abstract_socket_receives_the_message() {
        use std::os::linux::net::SocketAddrExt;
        let name = format!("lifeline-test-{}-{:?}", std::process::id(), std::thread::current().id());
        let rx = UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap()).unwrap();
        notify_to(&format!("@{name}"), "WATCHDOG=1").unwrap();
        let mut buf = [0u8; 64];
        let n = rx.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"WATCHDOG=1");
    }

    #[test]
    fn nobody_listening_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        assert!(notify_to(dir.path().join("absent.sock").to_str().unwrap(), "READY=1").is_err());
    }

    #[test]
    fn watchdog_period_is_for_our_pid_only() {
        assert_eq!(parse_watchdog(Some("30000000"), None, 7), Some(Duration::from_secs(30)));
        assert_eq!(parse_watchdog(Some("30000000"), Some("7"), 7), Some(Duration::from_secs(30)));
        assert_eq!(parse_watchdog(Some("30000000"), Some("8"), 7), None);
        assert_eq!(parse_watchdog(Some("0"), None, 7), None);
        assert_eq!(parse_watchdog(Some("soon"), None, 7), None);
        assert_eq!(parse_watchdog(None, None, 7), None);
    }
}
