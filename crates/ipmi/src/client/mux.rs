//! A shared IPMI transport: a few unconnected UDP sockets, each with ONE reader task, that carry the
//! sessions and logins of many BMCs at once.
//!
//! Why: a standalone [`Session`] owns a connected socket and a spawned reader task (with its 2 KiB buffer)
//! for its whole life. A sweep of 1,000 BMCs then creates, binds, connects and closes 1,000 sockets and
//! spawns 1,000 tasks, and a server that keeps one session per BMC holds 10,000 of each between sweeps.
//! On a mux a session is an entry in a routing table; the reader demultiplexes every datagram:
//! - by (source address, session id in the RMCP+ header) to the registered session, which decodes it;
//! - anything else from an address (pre-session replies: Get Channel Auth Caps, Get Channel Cipher Suites,
//!   Open Session response, RAKP 2/4 carry session id 0; late replies of a closed session) to every login
//!   or close waiting on that address, each of which filters by its own tag / console session id / rqSeq,
//!   so several concurrent logins to one BMC work;
//! - to nobody when nothing waits: dropped (and counted).
//!
//! Sessions register when their login completes and leave the table on close and on drop; a session holds
//! the mux, so the mux outlives its sessions; the reader tasks end when the last handle is dropped.

use super::error::{Error, Result};
use super::session::{ClientConfig, Inner, Session};
use crate::wire::packet;
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex, Weak};
use tokio::net::UdpSocket;
use tokio::sync::Notify;

/// Receive buffer asked for each socket: a sweep's replies arrive in bursts (hundreds of BMCs answering
/// within a millisecond), and the default (~200 KiB) would drop some of them. The kernel caps it at
/// `net.core.rmem_max`.
const RECV_BUFFER: usize = 4 << 20;

/// Datagrams queued for one waiter before further ones are dropped (a login reads them at once; the
/// bound only matters against a flood).
const WAITER_QUEUE: usize = 64;

/// Largest datagram read (IPMI payloads are at most a few hundred bytes).
const MAX_DATAGRAM: usize = 2048;

/// Where a datagram goes, from its header alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteKey {
    /// An RMCP+ packet of the session with this (console) session id.
    Session(u32),
    /// Anything else (IPMI 1.5 framing, RMCP+ session id 0, ASF, garbage): for whoever waits on the source.
    Address,
}

/// The routing decision for `datagram` (pure: the reader's first step, property-tested).
pub fn route_key(datagram: &[u8]) -> RouteKey {
    match packet::peek_session_id(datagram) {
        Some(id) if id != 0 => RouteKey::Session(id),
        _ => RouteKey::Address,
    }
}

/// What the mux holds and did (tests and metrics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MuxStats {
    /// Sockets (and reader tasks).
    pub sockets: usize,
    /// Sessions registered now.
    pub sessions: usize,
    /// Addresses with a login or close waiting now.
    pub waiting_addresses: usize,
    /// Datagrams delivered to a session or a waiter.
    pub delivered: u64,
    /// Datagrams no session or waiter wanted (unknown source or session id), dropped.
    pub dropped: u64,
}

/// One waiter's queue of datagrams.
#[derive(Default)]
struct Slot {
    queue: StdMutex<VecDeque<Vec<u8>>>,
    notify: Notify,
}

#[derive(Default)]
struct Routes {
    sessions: HashMap<(SocketAddr, u32), Weak<Inner>>,
    waiters: HashMap<SocketAddr, Vec<Arc<Slot>>>,
}

struct Shared {
    sockets: Vec<UdpSocket>,
    routes: StdMutex<Routes>,
    next_socket: AtomicUsize,
    delivered: AtomicU64,
    dropped: AtomicU64,
}

/// Aborts the reader tasks when the last handle of the mux is dropped.
struct Readers(Vec<tokio::task::JoinHandle<()>>);

impl Drop for Readers {
    fn drop(&mut self) {
        for h in &self.0 {
            h.abort();
        }
    }
}

/// A shared IPMI transport (see the module docs). Cheap to clone; every clone is the same mux.
#[derive(Clone)]
pub struct Mux {
    shared: Arc<Shared>,
    _readers: Arc<Readers>,
}

impl std::fmt::Debug for Mux {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mux").field("stats", &self.stats()).finish()
    }
}

fn lock<T>(m: &StdMutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock only means a panic elsewhere; the table is still consistent for us.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn bind_one(bind: SocketAddr) -> std::io::Result<UdpSocket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::for_address(bind), Type::DGRAM, Some(Protocol::UDP))?;
    // Best effort: an unprivileged process gets at most rmem_max.
    if let Err(e) = s.set_recv_buffer_size(RECV_BUFFER) {
        tracing::debug!(error = %e, "IPMI mux: receive buffer size not set");
    }
    s.set_nonblocking(true)?;
    s.bind(&bind.into())?;
    UdpSocket::from_std(s.into())
}

impl Mux {
    /// A mux of `sockets` IPv4 sockets (at least one) on ephemeral ports. Needs a tokio runtime (the
    /// readers are spawned on it).
    pub fn bind(sockets: usize) -> std::io::Result<Self> {
        Self::bind_on(([0, 0, 0, 0], 0).into(), sockets)
    }

    /// As [`Mux::bind`] on a given local address (IPv6 BMCs need an IPv6 one; tests bind loopback).
    pub fn bind_on(local: SocketAddr, sockets: usize) -> std::io::Result<Self> {
        // Outside a runtime tokio would panic (no reactor to register with): an error instead.
        let rt = tokio::runtime::Handle::try_current().map_err(std::io::Error::other)?;
        let _guard = rt.enter();
        let sockets = (0..sockets.max(1)).map(|_| bind_one(local)).collect::<std::io::Result<Vec<_>>>()?;
        let shared = Arc::new(Shared {
            sockets,
            routes: StdMutex::new(Routes::default()),
            next_socket: AtomicUsize::new(0),
            delivered: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        });
        let readers = (0..shared.sockets.len()).map(|i| rt.spawn(read_loop(shared.clone(), i))).collect();
        Ok(Mux { shared, _readers: Arc::new(Readers(readers)) })
    }

    /// A mux sized for this machine: one socket per core, at most 4 (each reader decodes its sessions'
    /// replies, so a sweep's decryption spreads over the cores; more sockets would only add wake-ups).
    pub fn for_fleet() -> std::io::Result<Self> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self::bind(cores.clamp(1, 4))
    }

    /// The local addresses of the sockets.
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.shared.sockets.iter().filter_map(|s| s.local_addr().ok()).collect()
    }

    pub fn stats(&self) -> MuxStats {
        let r = lock(&self.shared.routes);
        MuxStats {
            sockets: self.shared.sockets.len(),
            sessions: r.sessions.len(),
            waiting_addresses: r.waiters.len(),
            delivered: self.shared.delivered.load(Ordering::Relaxed),
            dropped: self.shared.dropped.load(Ordering::Relaxed),
        }
    }

    /// Open a session to `addr` over this mux (see [`Session::open_on_mux`]).
    pub async fn open(&self, addr: SocketAddr, cfg: &ClientConfig) -> Result<Session> {
        Session::open_on_mux(self, addr, cfg).await
    }

    /// Session-less Get Channel Authentication Capabilities over this mux (an `auto` probe without a socket
    /// of its own).
    pub async fn get_channel_auth_caps(
        &self,
        addr: SocketAddr,
        timing: &super::Timing,
        privilege: crate::wire::Privilege,
    ) -> Result<crate::wire::app::ChannelAuthCaps> {
        let w = self.waiter(addr);
        super::sessionless::auth_caps_on(
            super::transport::Link::Mux(&w),
            &addr.to_string(),
            timing,
            privilege,
        )
        .await
    }

    /// A waiter for what `addr` sends, on the next socket in turn (its session will use the same one).
    pub(crate) fn waiter(&self, addr: SocketAddr) -> Waiter {
        let n = self.shared.sockets.len();
        let socket = self.shared.next_socket.fetch_add(1, Ordering::Relaxed) % n;
        self.waiter_on(socket, addr)
    }

    pub(crate) fn waiter_on(&self, socket: usize, addr: SocketAddr) -> Waiter {
        let slot = Arc::new(Slot::default());
        lock(&self.shared.routes).waiters.entry(addr).or_default().push(slot.clone());
        Waiter { mux: self.clone(), socket, addr, slot }
    }

    /// Route `addr`'s datagrams with `console_session_id` to `session`. Fails if the id is taken (the
    /// caller picked a fresh random one, so only by a 2^-32 chance).
    pub(crate) fn register(
        &self,
        addr: SocketAddr,
        console_session_id: u32,
        session: Weak<Inner>,
    ) -> Result<()> {
        let mut r = lock(&self.shared.routes);
        match r.sessions.entry((addr, console_session_id)) {
            std::collections::hash_map::Entry::Occupied(e) if e.get().strong_count() > 0 => {
                Err(Error::Closed { bmc: addr.to_string() })
            }
            e => {
                e.insert_entry(session);
                Ok(())
            }
        }
    }

    /// Removes the route of the session at `me` (only that session's: a stale entry never removes a newer
    /// session's).
    pub(crate) fn unregister(&self, addr: SocketAddr, console_session_id: u32, me: *const Inner) {
        let mut r = lock(&self.shared.routes);
        if let std::collections::hash_map::Entry::Occupied(e) = r.sessions.entry((addr, console_session_id))
            && (std::ptr::eq(e.get().as_ptr(), me) || e.get().strong_count() == 0)
        {
            e.remove();
        }
    }

    pub(crate) async fn send_to(
        &self,
        socket: usize,
        datagram: &[u8],
        addr: SocketAddr,
    ) -> std::io::Result<()> {
        self.shared.sockets[socket].send_to(datagram, addr).await.map(|_| ())
    }

    pub(crate) fn try_send_to(
        &self,
        socket: usize,
        datagram: &[u8],
        addr: SocketAddr,
    ) -> std::io::Result<usize> {
        self.shared.sockets[socket].try_send_to(datagram, addr)
    }
}

/// A login's (or a close's) place on the mux: what its BMC sends that no session claims is queued here.
/// Leaves the table on drop.
pub(crate) struct Waiter {
    mux: Mux,
    socket: usize,
    addr: SocketAddr,
    slot: Arc<Slot>,
}

impl Waiter {
    pub(crate) fn socket(&self) -> usize {
        self.socket
    }

    pub(crate) async fn send(&self, datagram: &[u8]) -> std::io::Result<()> {
        self.mux.send_to(self.socket, datagram, self.addr).await
    }

    /// The next datagram for this waiter (cancel-safe: nothing is lost when the future is dropped).
    pub(crate) async fn recv(&self) -> Vec<u8> {
        loop {
            let notified = self.slot.notify.notified();
            if let Some(d) = lock(&self.slot.queue).pop_front() {
                return d;
            }
            notified.await;
        }
    }

    pub(crate) fn session_id_free(&self, console_session_id: u32) -> bool {
        !lock(&self.mux.shared.routes).sessions.contains_key(&(self.addr, console_session_id))
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        let mut r = lock(&self.mux.shared.routes);
        if let Some(v) = r.waiters.get_mut(&self.addr) {
            v.retain(|s| !Arc::ptr_eq(s, &self.slot));
            if v.is_empty() {
                r.waiters.remove(&self.addr);
            }
        }
    }
}

impl Shared {
    /// Deliver one datagram from `from` (see the module docs).
    fn route(&self, datagram: &[u8], from: SocketAddr) {
        let session = {
            let r = lock(&self.routes);
            let session = match route_key(datagram) {
                RouteKey::Session(id) => r.sessions.get(&(from, id)).and_then(Weak::upgrade),
                RouteKey::Address => None,
            };
            if session.is_none() {
                let Some(waiters) = r.waiters.get(&from) else {
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                    return;
                };
                for w in waiters {
                    let mut q = lock(&w.queue);
                    if q.len() < WAITER_QUEUE {
                        q.push_back(datagram.to_vec());
                        w.notify.notify_one();
                    }
                }
                self.delivered.fetch_add(1, Ordering::Relaxed);
                return;
            }
            session
        };
        // Decoded outside the table's lock (the decryption is the expensive part).
        if let Some(s) = session {
            self.delivered.fetch_add(1, Ordering::Relaxed);
            s.receive(datagram);
        }
    }
}

async fn read_loop(shared: Arc<Shared>, socket: usize) {
    let mut buf = vec![0u8; MAX_DATAGRAM];
    loop {
        let (n, from) = match shared.sockets[socket].recv_from(&mut buf).await {
            Ok(r) => r,
            // ICMP errors (a BMC's port unreachable) surface on some platforms: a loss for whoever waits.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => continue,
            Err(e) => {
                tracing::debug!(error = %e, "IPMI mux receive failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        shared.route(&buf[..n], from);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::packet::{Packet, PayloadType, V15Packet, V20Packet};
    use proptest::prelude::*;

    proptest! {
        /// Any datagram gets a decision, never a panic.
        #[test]
        fn route_key_never_panics(d in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = route_key(&d);
        }

        /// An RMCP+ packet goes to the session named in its header; session id 0 (the login's messages)
        /// to the address's waiters.
        #[test]
        fn rmcp_plus_routes_by_session_id(id in any::<u32>(), seq in any::<u32>(),
                                          payload in proptest::collection::vec(any::<u8>(), 0..40)) {
            let p = V20Packet { payload_type: PayloadType::Ipmi, encrypted: false, authenticated: false,
                                session_id: id, seq, payload };
            let d = packet::encode(&Packet::V20(p), None, [0; 16]);
            let want = if id == 0 { RouteKey::Address } else { RouteKey::Session(id) };
            prop_assert_eq!(route_key(&d), want);
        }

        /// IPMI 1.5 framing (the session-less requests' replies) never names a session.
        #[test]
        fn ipmi15_routes_by_address(id in any::<u32>(), message in proptest::collection::vec(any::<u8>(), 0..40)) {
            let p = V15Packet { auth_type: 0, seq: 0, session_id: id, auth_code: None, message };
            let d = packet::encode(&Packet::V15(p), None, [0; 16]);
            prop_assert_eq!(route_key(&d), RouteKey::Address);
        }
    }
}
