//! IPMI 2.0 lanplus responder for one simulated BMC: RMCP+ sessions (RAKP with cipher
//! suites 3 and 17), the commands Lifeline and the usual tools send, and Serial-over-LAN
//! wired to the host's console.
//!
//! Why the protocol state is lazy: 100,000 BMCs must fit in one process, so a BMC that nobody
//! talks to is only an [`Endpoint`] (its host and a slot). The first datagram starts a worker
//! task holding the BMC's protocol state (session table, SOL); once it has no session, no SOL
//! and has heard nothing for [`WORKER_IDLE`], the worker ends and the state goes with it
//! (state that must outlive sessions belongs in the `Host`). Datagrams arrive from a socket
//! shared by many BMCs (`crate::listen`) or from a socket of the BMC's own ([`serve`]).
//! Everything on the wire comes from `lifeline_ipmi::wire` (the same codecs the client uses),
//! never from the client itself. Faults (`bmc-unresponsive`, `bmc-slow`, `udp-loss`,
//! `sessions-full`, `sol-stuck`, BMC reset) are read on every datagram.

mod boot;
mod commands;
mod sdr;
mod session;
mod sol;
#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::net::UdpSocket;
use tokio::sync::{broadcast, mpsc};
use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;

use crate::host::Host;
use crate::listen::{DatagramService, UdpReply};

pub use session::Bmc;

/// Sessions idle this long are dropped (IPMI's default session inactivity timeout is 60 s).
pub const SESSION_IDLE: Duration = Duration::from_secs(60);
/// Half-open sessions (Open Session done, RAKP not finished) are dropped after this.
pub const HANDSHAKE_IDLE: Duration = Duration::from_secs(10);

/// An idle worker (no session, no SOL) ends after this long without a datagram.
pub const WORKER_IDLE: Duration = Duration::from_secs(30);
/// Datagrams queued for one BMC's worker; more are dropped (a lossy link, to the client).
const QUEUE: usize = 64;

type Datagram = (Vec<u8>, SocketAddr);
type Slot = Arc<Mutex<Option<mpsc::Sender<Datagram>>>>;

/// The IPMI face of one BMC address: its host, and the worker serving it while anyone talks to it.
pub struct Endpoint {
    host: Arc<Host>,
    /// UDP port the BMC answers on (reported in Activate Payload so SOL comes back here).
    port: u16,
    cancel: CancellationToken,
    worker: Slot,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint").field("host", &self.host.name()).field("port", &self.port).finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Endpoint {
    pub fn new(host: Arc<Host>, port: u16, cancel: CancellationToken) -> Arc<Endpoint> {
        Arc::new(Endpoint { host, port, cancel, worker: Arc::default() })
    }
}

impl DatagramService for Endpoint {
    fn datagram(&self, data: &[u8], from: SocketAddr, reply: &UdpReply) {
        let faults = self.host.bmc();
        if faults.unresponsive() || faults.drop_datagram() {
            return;
        }
        let mut slot = lock(&self.worker);
        let mut item = (data.to_vec(), from);
        if let Some(tx) = slot.as_ref() {
            match tx.try_send(item) {
                Ok(()) | Err(mpsc::error::TrySendError::Full(_)) => return,
                Err(mpsc::error::TrySendError::Closed(i)) => item = i,
            }
        }
        let (tx, rx) = mpsc::channel(QUEUE);
        let _ = tx.try_send(item);
        *slot = Some(tx);
        let w =
            worker(self.host.clone(), self.port, rx, self.worker.clone(), reply.clone(), self.cancel.clone());
        tokio::spawn(w);
    }
}

/// Serve IPMI for `host`'s BMC on a socket of its own until `cancel` fires.
///
/// Credentials, offered cipher suites, session limit and identity come from
/// [`Host::bmc_config`]; faults from [`Host::bmc`].
pub async fn serve(socket: UdpSocket, host: Arc<Host>, cancel: CancellationToken) {
    let port = socket.local_addr().map(|a| a.port()).unwrap_or(623);
    let socket = Arc::new(socket);
    let reply = UdpReply::direct(socket.clone());
    let endpoint = Endpoint::new(host, port, cancel.clone());
    let mut buf = vec![0u8; 1500];
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            r = socket.recv_from(&mut buf) => {
                if let Ok((n, from)) = r {
                    endpoint.datagram(&buf[..n], from, &reply);
                }
            }
        }
    }
}

/// No session, no SOL, nothing that a new worker would not start with.
fn idle(bmc: &Bmc) -> bool {
    bmc.sessions.is_empty() && bmc.sol.is_none() && !bmc.stuck_released && bmc.pending_close.is_none()
}

/// One BMC's protocol state, alive while anyone talks to it.
async fn worker(
    host: Arc<Host>,
    port: u16,
    mut rx: mpsc::Receiver<Datagram>,
    slot: Slot,
    socket: UdpReply,
    cancel: CancellationToken,
) {
    let mut bmc = Bmc::new(host.clone(), port);
    let mut console: Option<broadcast::Receiver<Bytes>> = None;
    let mut housekeeping = tokio::time::interval(Duration::from_secs(5));
    housekeeping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_heard = Instant::now();
    loop {
        let sol_deadline = bmc.sol_deadline().unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
        let mut out: Vec<(Vec<u8>, SocketAddr)> = Vec::new();
        tokio::select! {
            _ = cancel.cancelled() => return,
            r = rx.recv() => {
                let Some((data, from)) = r else { return };
                last_heard = Instant::now();
                bmc.check_reset();
                out = bmc.handle(&data, from);
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
                if idle(&bmc) && last_heard.elapsed() >= WORKER_IDLE {
                    // Under the slot's lock no datagram can be queued behind our back.
                    let mut s = lock(&slot);
                    if rx.is_empty() {
                        *s = None;
                        return;
                    }
                }
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
