//! IPMI 2.0 lanplus responder for one simulated BMC: RMCP+ sessions (RAKP with cipher
//! suites 3 and 17), the commands Lifeline and the usual tools send, and Serial-over-LAN
//! wired to the host's console.
//!
//! Why one task per BMC with plain owned state: 1,000 BMCs must fit in one process, so a
//! BMC is a UDP socket, a small session table and (only while SOL is active) one console
//! subscription. Everything on the wire comes from `lifeline_ipmi::wire` (the same codecs
//! the client uses), never from the client itself. Faults (`bmc-unresponsive`, `bmc-slow`,
//! `udp-loss`, `sessions-full`, `sol-stuck`, BMC reset) are read on every datagram.

mod boot;
mod commands;
mod sdr;
mod session;
mod sol;
#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::net::UdpSocket;
use tokio::sync::broadcast;
use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;

use crate::host::Host;

pub use session::Bmc;

/// Sessions idle this long are dropped (IPMI's default session inactivity timeout is 60 s).
pub const SESSION_IDLE: Duration = Duration::from_secs(60);
/// Half-open sessions (Open Session done, RAKP not finished) are dropped after this.
pub const HANDSHAKE_IDLE: Duration = Duration::from_secs(10);

/// Serve IPMI for `host`'s BMC on `socket` until `cancel` fires.
///
/// Credentials, offered cipher suites, session limit and identity come from
/// [`Host::bmc_config`]; faults from [`Host::bmc`].
pub async fn serve(socket: UdpSocket, host: Arc<Host>, cancel: CancellationToken) {
    let port = socket.local_addr().map(|a| a.port()).unwrap_or(623);
    let mut bmc = Bmc::new(host.clone(), port);
    let mut buf = vec![0u8; 1500];
    let mut console: Option<broadcast::Receiver<Bytes>> = None;
    let mut housekeeping = tokio::time::interval(Duration::from_secs(5));
    housekeeping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let sol_deadline = bmc.sol_deadline().unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
        let mut out: Vec<(Vec<u8>, SocketAddr)> = Vec::new();
        tokio::select! {
            _ = cancel.cancelled() => return,
            r = socket.recv_from(&mut buf) => {
                let Ok((n, from)) = r else { continue };
                let faults = host.bmc();
                if faults.unresponsive() || faults.drop_datagram() {
                    continue;
                }
                bmc.check_reset();
                out = bmc.handle(&buf[..n], from);
            }
            chunk = recv_console(&mut console) => match chunk {
                Ok(c) => out = bmc.sol_output(&c),
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => console = None,
            },
            _ = sleep_until(sol_deadline) => out = bmc.sol_retransmit(),
            _ = housekeeping.tick() => {
                bmc.check_reset();
                bmc.expire();
            }
        }
        // Subscribe to the console only while SOL is active (idle BMCs stay cheap).
        match (bmc.sol_active(), console.is_some()) {
            (true, false) => console = Some(host.console().subscribe()),
            (false, true) => console = None,
            _ => {}
        }
        if out.is_empty() {
            continue;
        }
        if let Some(d) = host.bmc().slow() {
            tokio::time::sleep(d).await;
        }
        for (dgram, to) in out {
            if host.bmc().drop_datagram() {
                continue;
            }
            let _ = socket.send_to(&dgram, to).await;
        }
    }
}

async fn recv_console(
    rx: &mut Option<broadcast::Receiver<Bytes>>,
) -> Result<Bytes, broadcast::error::RecvError> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}
