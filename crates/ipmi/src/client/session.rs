//! One authenticated RMCP+ session over tokio UDP: handshake (Get Channel Auth Caps,
//! Open Session, RAKP 1-4, Set Session Privilege Level), request/response matching,
//! retransmission, and closing.
//!
//! Why the shape: a reader (the session's own task, or a shared [`super::Mux`]'s) demultiplexes replies
//! (by rqSeq + cmd) and SOL packets, so commands and a console can share one session; every request has a
//! bounded number of attempts with exponential backoff; the session is closed on
//! `close()`, and on drop of the last handle a best-effort Close Session is spawned, so a
//! BMC's small session table never fills with our orphans.

use super::error::{Error, Result};
use super::handshake::{Established, login};
use super::mux::Mux;
use super::record::SessionRecorder;
pub use super::timing::{LinkCounters, LinkStats, Timing};
use super::transport::{Link, Transport, decode_err, exchange, io_err};
use crate::wire::{
    self, Body, Command, Privilege,
    app::{ChannelAuthCaps, CloseOutcome, CloseSession, SetSessionPrivilege},
    crypto::{CipherSuite, SessionKeys},
    message::{Request, Response},
    packet::{self, Packet, PayloadType, V20Packet},
    payload::{DeactivatePayload, PAYLOAD_SOL},
    sol::SolPacket,
};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, Ordering};
use std::sync::{Arc, Mutex as StdMutex, Weak};
use std::time::Duration;
use tokio::net::UdpSocket;
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Instant, timeout};

/// How to log in.
#[derive(Clone)]
pub struct ClientConfig {
    pub username: String,
    pub password: String,
    /// Session privilege requested in Open Session and set after RAKP.
    pub privilege: Privilege,
    /// Tried in order; the default prefers 17 (SHA-256) and falls back to 3.
    pub cipher_suites: Vec<CipherSuite>,
    /// BMC key (Kg); `None` = unset (Kuid is used), as on most BMCs.
    pub kg: Option<Vec<u8>>,
    pub timing: Timing,
    /// Requests one session may have outstanding at once (rqSeq keeps them apart). Only concurrent callers
    /// use more than one; a sensor sweep over a lossy link then waits for one retransmission timeout per
    /// batch instead of per sensor.
    pub max_in_flight: usize,
    /// A suite this BMC was seen to accept (the caller's memory): tried first, without asking the BMC for
    /// its cipher suite list, and silence on it is a lost datagram, never a reason to fall back.
    pub known_suite: Option<CipherSuite>,
    /// Where the session's id is written down while it is open (see [`super::record`]); `None`: nowhere.
    pub record: Option<SessionRecorder>,
}

impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConfig")
            .field("username", &self.username)
            .field("privilege", &self.privilege)
            .field("cipher_suites", &self.cipher_suites)
            .field("timing", &self.timing)
            .field("max_in_flight", &self.max_in_flight)
            .field("known_suite", &self.known_suite)
            .finish_non_exhaustive()
    }
}

impl ClientConfig {
    pub fn new(username: impl Into<String>, password: impl Into<String>) -> Self {
        Self {
            username: username.into(),
            password: password.into(),
            privilege: Privilege::Administrator,
            cipher_suites: vec![CipherSuite::Suite17, CipherSuite::Suite3],
            kg: None,
            timing: Timing::default(),
            max_in_flight: 4,
            known_suite: None,
            record: None,
        }
    }
}

struct Pending {
    netfn: u8,
    cmd: u8,
    tx: oneshot::Sender<Response>,
}

/// Anti-replay window over inbound session sequence numbers (duplicated datagrams).
#[derive(Default)]
struct ReplayWindow {
    highest: u32,
    mask: u64,
}

impl ReplayWindow {
    /// True if `seq` is new (and records it).
    fn accept(&mut self, seq: u32) -> bool {
        if seq > self.highest {
            let shift = seq - self.highest;
            self.mask = if shift >= 64 { 0 } else { self.mask << shift };
            self.mask |= 1;
            self.highest = seq;
            true
        } else {
            let back = self.highest - seq;
            if back >= 64 || self.mask & (1 << back) != 0 {
                return false;
            }
            self.mask |= 1 << back;
            true
        }
    }
}

pub(crate) struct Inner {
    pub(crate) bmc: String,
    transport: Transport,
    pub(crate) timing: Timing,
    keys: SessionKeys,
    bmc_session_id: u32,
    console_session_id: u32,
    out_seq: AtomicU32,
    rq_seq: AtomicU8,
    pending: StdMutex<HashMap<u8, Pending>>,
    replay: StdMutex<ReplayWindow>,
    pub(crate) sol_tx: StdMutex<Option<mpsc::Sender<SolPacket>>>,
    /// SOL instance this session activated (deactivated before Close Session).
    pub(crate) sol_active: StdMutex<Option<u8>>,
    /// `max_in_flight` permits: bounds the requests outstanding on this session.
    request_slots: tokio::sync::Semaphore,
    /// Link statistics (see [`LinkStats`]).
    link: Arc<LinkCounters>,
    closed: AtomicBool,
    auth_caps: ChannelAuthCaps,
    privilege: Privilege,
    record: Option<SessionRecorder>,
}

/// An established lanplus session. Cheap to share by reference; commands are
/// serialised on the session (one in flight), SOL runs alongside.
pub struct Session {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("bmc", &self.inner.bmc)
            .field("suite", &self.inner.keys.suite)
            .field("bmc_session_id", &format_args!("{:#010x}", self.inner.bmc_session_id))
            .finish()
    }
}

impl Session {
    /// Open a session to `addr` (UDP, normally port 623).
    pub async fn open(addr: SocketAddr, cfg: &ClientConfig) -> Result<Self> {
        let bmc = addr.to_string();
        let bind: SocketAddr = if addr.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }.parse().unwrap_or(addr);
        let socket = UdpSocket::bind(bind).await.map_err(io_err(&bmc))?;
        socket.connect(addr).await.map_err(io_err(&bmc))?;
        Self::open_on(socket, bmc, cfg).await
    }

    /// Open a session on an already connected socket (tests use this to route through a proxy).
    pub async fn open_on(socket: UdpSocket, bmc: String, cfg: &ClientConfig) -> Result<Self> {
        let (auth_caps, est) = login(Link::Socket(&socket), &bmc, cfg).await?;
        let socket = Arc::new(socket);
        let transport = Transport::Own { socket: socket.clone(), reader: StdMutex::new(None) };
        let inner = Arc::new(Inner::new(bmc, transport, cfg, auth_caps, &est));
        let reader = tokio::spawn(read_loop(socket, Arc::downgrade(&inner)));
        if let Transport::Own { reader: slot, .. } = &inner.transport {
            *lock(slot) = Some(reader);
        }
        let session = Session { inner };
        session.write_down().await;
        Self::first_request(session, est.confirmed, cfg).await
    }

    /// Open a session to `addr` on a shared [`Mux`]: no socket or task of its own; the mux routes its
    /// replies to it until it is closed or dropped (and the session keeps the mux alive meanwhile).
    pub async fn open_on_mux(mux: &Mux, addr: SocketAddr, cfg: &ClientConfig) -> Result<Self> {
        let bmc = addr.to_string();
        let waiter = mux.waiter(addr);
        let (auth_caps, est) = login(Link::Mux(&waiter), &bmc, cfg).await?;
        let transport = Transport::Mux { mux: mux.clone(), socket: waiter.socket(), addr };
        let inner = Arc::new(Inner::new(bmc, transport, cfg, auth_caps, &est));
        mux.register(addr, est.console_session_id, Arc::downgrade(&inner))?;
        drop(waiter);
        let session = Session { inner };
        session.write_down().await;
        Self::first_request(session, est.confirmed, cfg).await
    }

    /// The session is open on the BMC from RAKP 3 on: written down before anything else can fail (a failed
    /// first request drops it, and the drop-time close strikes it off once the BMC answers).
    async fn write_down(&self) {
        if let Some(r) = &self.inner.record {
            r.0.opened(self.inner.bmc_session_id).await;
        }
    }

    async fn first_request(session: Session, confirmed: bool, cfg: &ClientConfig) -> Result<Self> {
        // Sessions start at USER on many BMCs (ipmi_sim: chassis control -> 0xD4 otherwise). A USER session
        // whose RAKP 4 was verified needs no first request (one round trip less per read-only login); an
        // unconfirmed one proves itself with Get Device ID before the caller relies on it.
        let first = if cfg.privilege > Privilege::User {
            session.call(&SetSessionPrivilege { privilege: cfg.privilege as u8 }).await.map(|_| ())
        } else if confirmed {
            Ok(())
        } else {
            session.call(&crate::wire::app::GetDeviceId).await.map(|_| ())
        };
        match first {
            Ok(()) => Ok(session),
            Err(Error::Timeout { bmc, after, .. }) if !confirmed => {
                Err(Error::Timeout { bmc, what: "RAKP 3", after })
            }
            Err(e) => Err(e),
        }
    }

    pub fn bmc(&self) -> &str {
        &self.inner.bmc
    }
    pub fn cipher_suite(&self) -> CipherSuite {
        self.inner.keys.suite
    }
    pub fn privilege(&self) -> Privilege {
        self.inner.privilege
    }
    pub fn bmc_session_id(&self) -> u32 {
        self.inner.bmc_session_id
    }
    /// What the BMC said before login (anonymous login, null user names, Kg...).
    /// How many datagrams the answered requests of this session took (a measure of the link's loss).
    pub fn link_stats(&self) -> LinkStats {
        self.inner.link.snapshot()
    }

    /// The live counters behind [`Session::link_stats`], to watch while a read runs on the session.
    pub fn link_counters(&self) -> Arc<LinkCounters> {
        self.inner.link.clone()
    }

    pub fn auth_caps(&self) -> &ChannelAuthCaps {
        &self.inner.auth_caps
    }

    /// Send a typed command (retransmitted on loss) and decode its reply.
    pub async fn call<C: Command>(&self, req: &C) -> Result<C::Response> {
        self.inner.call(req, std::any::type_name::<C>(), true).await
    }

    /// Send a typed command ONCE (no retransmission): for actions that must not be
    /// doubled. A lost reply yields [`Error::Unconfirmed`].
    pub async fn call_once<C: Command>(&self, req: &C) -> Result<C::Response> {
        self.inner.call(req, std::any::type_name::<C>(), false).await
    }

    /// Raw request: returns the completion code and data whatever they are.
    pub async fn raw(&self, netfn: u8, cmd: u8, data: Vec<u8>) -> Result<Response> {
        self.inner.call_raw(netfn, cmd, data, "raw command", true).await
    }

    /// Deactivate our SOL payload (if any) and close the session. Idempotent. Takes `&self` so that a
    /// holder can free the BMC's session slot before it gives up the handle (a one-slot BMC refuses the
    /// next login while the old session lives); requests after it fail with [`Error::Closed`].
    pub async fn close(&self) -> Result<()> {
        self.inner.close().await
    }

    /// Close Session naming another session's BMC-side id (one a dead process of the caller's left open):
    /// what the BMC did with it ([`CloseSession::outcome`]). Most BMCs (OpenIPMI's lanserv among them)
    /// close another session only for an ADMINISTRATOR session and answer 0xD4 otherwise; an id the BMC no
    /// longer has is answered 0x87. Retransmitted on loss: a retransmission after a lost reply finds the
    /// session gone, which is the same outcome.
    pub async fn close_other(&self, bmc_session_id: u32) -> Result<CloseOutcome> {
        let req = CloseSession { session_id: bmc_session_id };
        let name = "Close Session (another session)";
        let resp =
            self.inner.call_raw(CloseSession::NETFN, CloseSession::CMD, req.encode(), name, true).await?;
        Ok(CloseSession::outcome(resp.completion))
    }
}

fn lock<T>(m: &StdMutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock only means a panic elsewhere; the data is still consistent for us.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn short_name(type_name: &'static str) -> &'static str {
    type_name.rsplit("::").next().unwrap_or(type_name)
}

impl Inner {
    fn new(
        bmc: String,
        transport: Transport,
        cfg: &ClientConfig,
        auth_caps: ChannelAuthCaps,
        est: &Established,
    ) -> Self {
        Inner {
            bmc,
            transport,
            timing: est.timing.clone(),
            keys: est.keys.clone(),
            bmc_session_id: est.bmc_session_id,
            console_session_id: est.console_session_id,
            out_seq: AtomicU32::new(1),
            rq_seq: AtomicU8::new(1),
            pending: StdMutex::new(HashMap::new()),
            replay: StdMutex::new(ReplayWindow::default()),
            sol_tx: StdMutex::new(None),
            sol_active: StdMutex::new(None),
            request_slots: tokio::sync::Semaphore::new(cfg.max_in_flight.clamp(1, 32)),
            link: Arc::default(),
            closed: AtomicBool::new(false),
            auth_caps,
            privilege: cfg.privilege,
            record: cfg.record.clone(),
        }
    }

    /// One datagram from the BMC (from the session's reader or the mux's): ours if it carries our session id
    /// and passes the integrity check.
    pub(crate) fn receive(&self, datagram: &[u8]) {
        if packet::peek_session_id(datagram) != Some(self.console_session_id) {
            return;
        }
        match packet::decode(datagram, Some(&self.keys)) {
            Ok(Packet::V20(p)) => self.dispatch(p),
            Ok(_) => {}
            Err(e) => tracing::debug!(bmc = %self.bmc, error = %e, "dropping undecodable datagram"),
        }
    }

    /// Takes the session off its reader (own task stopped, or the mux's route removed).
    fn detach(&self) {
        self.transport.stop_reader();
        if let Transport::Mux { mux, addr, .. } = &self.transport {
            mux.unregister(*addr, self.console_session_id, self);
        }
    }

    fn next_out_seq(&self) -> u32 {
        loop {
            let s = self.out_seq.fetch_add(1, Ordering::Relaxed);
            if s != 0 {
                return s;
            }
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    pub(crate) async fn send_payload(&self, payload_type: PayloadType, payload: Vec<u8>) -> Result<()> {
        if self.is_closed() {
            return Err(Error::Closed { bmc: self.bmc.clone() });
        }
        let dgram = self.seal(payload_type, payload);
        self.transport.send(&dgram).await.map_err(io_err(&self.bmc))?;
        Ok(())
    }

    fn seal(&self, payload_type: PayloadType, payload: Vec<u8>) -> Vec<u8> {
        let p = V20Packet {
            payload_type,
            encrypted: true,
            authenticated: true,
            session_id: self.bmc_session_id,
            seq: self.next_out_seq(),
            payload,
        };
        packet::encode(&Packet::V20(p), Some(&self.keys), rand::random())
    }

    pub(crate) async fn call<C: Command>(
        &self,
        req: &C,
        name: &'static str,
        resend: bool,
    ) -> Result<C::Response> {
        let name = short_name(name);
        let resp = self.call_raw(C::NETFN, C::CMD, req.encode(), name, resend).await?;
        if resp.completion != wire::cc::OK {
            return Err(Error::CompletionCode { bmc: self.bmc.clone(), cmd: name, code: resp.completion });
        }
        C::Response::decode(&resp.data).map_err(decode_err(&self.bmc, name))
    }

    pub(crate) async fn call_raw(
        &self,
        netfn: u8,
        cmd: u8,
        data: Vec<u8>,
        name: &'static str,
        resend: bool,
    ) -> Result<Response> {
        // The semaphore is never closed.
        let _slot =
            self.request_slots.acquire().await.map_err(|_| Error::Closed { bmc: self.bmc.clone() })?;
        let (tx, mut rx) = oneshot::channel();
        let seq = {
            // rqSeq is 6 bits: skip numbers still outstanding (at most 32 are, so one is free).
            let mut pending = lock(&self.pending);
            let seq = loop {
                let s = self.rq_seq.fetch_add(1, Ordering::Relaxed) & 0x3F;
                if !pending.contains_key(&s) {
                    break s;
                }
            };
            pending.insert(seq, Pending { netfn, cmd, tx });
            seq
        };
        // Removes the pending entry on every exit path, including cancellation.
        struct Unregister<'a>(&'a Inner, u8);
        impl Drop for Unregister<'_> {
            fn drop(&mut self) {
                lock(&self.0.pending).remove(&self.1);
            }
        }
        let _unregister = Unregister(self, seq);
        let msg = Request::new(netfn, cmd, seq, data).encode();
        let started = Instant::now();
        let attempts = if resend { self.timing.attempts.max(1) } else { 1 };
        for i in 0..attempts {
            // A fresh session sequence number per transmission (BMCs reject replays);
            // the same rqSeq, so a late reply to any transmission completes the request.
            self.send_payload(PayloadType::Ipmi, msg.clone()).await?;
            let wait = if resend { self.timing.attempt(i) } else { self.timing.max_attempt_timeout };
            match timeout(wait, &mut rx).await {
                Ok(Ok(resp)) => {
                    self.link.record(i + 1);
                    return Ok(resp);
                }
                Ok(Err(_)) => return Err(Error::Closed { bmc: self.bmc.clone() }),
                Err(_) => {
                    tracing::debug!(bmc = %self.bmc, cmd = name, attempt = i, "no reply, retransmitting")
                }
            }
        }
        if resend {
            Err(Error::Timeout { bmc: self.bmc.clone(), what: name, after: started.elapsed() })
        } else {
            Err(Error::Unconfirmed { bmc: self.bmc.clone(), cmd: name })
        }
    }

    fn dispatch(&self, p: V20Packet) {
        if !p.authenticated || p.session_id != self.console_session_id {
            return;
        }
        if !lock(&self.replay).accept(p.seq) {
            return;
        }
        match p.payload_type {
            PayloadType::Ipmi => {
                let Ok(resp) = Response::decode(&p.payload) else { return };
                let mut pending = lock(&self.pending);
                let matches = pending
                    .get(&resp.rq_seq)
                    .is_some_and(|w| w.cmd == resp.cmd && (w.netfn | 1) == resp.netfn);
                if matches && let Some(w) = pending.remove(&resp.rq_seq) {
                    let _ = w.tx.send(resp);
                }
            }
            PayloadType::Sol => {
                let Ok(sp) = SolPacket::decode(&p.payload) else { return };
                if let Some(tx) = lock(&self.sol_tx).as_ref() {
                    // Full queue: drop; the BMC retransmits what we did not ack.
                    let _ = tx.try_send(sp);
                }
            }
            _ => {}
        }
    }

    async fn close(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Ok(());
        }
        let sol = lock(&self.sol_active).take();
        if let Some(instance) = sol {
            // ipmi_sim crashes if a session closes with SOL active: deactivate first.
            let d = DeactivatePayload { payload_type: PAYLOAD_SOL, instance };
            match self.call(&d, "DeactivatePayload", true).await {
                Ok(_) => {}
                Err(Error::CompletionCode { code: wire::cc::PAYLOAD_ALREADY_ACTIVE, .. }) => {}
                Err(e) => tracing::debug!(bmc = %self.bmc, error = %e, "deactivate before close failed"),
            }
        }
        // A BMC closes on the first Close Session it receives and ignores retransmissions (the session is
        // gone), so after a lost reply no answer ever comes: give up after a few transmissions, not all.
        let budget: Duration = (0..self.timing.attempts.clamp(1, 4)).map(|i| self.timing.attempt(i)).sum();
        let req = CloseSession { session_id: self.bmc_session_id };
        let close = self.call(&req, "CloseSession", true);
        let r = match timeout(budget, close).await {
            Ok(r) => r,
            Err(_) => Err(Error::Timeout { bmc: self.bmc.clone(), what: "CloseSession", after: budget }),
        };
        self.closed.store(true, Ordering::Release);
        self.detach();
        lock(&self.pending).clear();
        *lock(&self.sol_tx) = None;
        // Struck off only when the BMC answered (closed, or no such session): after silence the session may
        // live on, and the record lets the next process close it.
        if matches!(r, Ok(_) | Err(Error::CompletionCode { code: 0x87, .. }))
            && let Some(rec) = &self.record
        {
            rec.0.closed(self.bmc_session_id).await;
        }
        match r {
            Ok(_) => Ok(()),
            // 0x87 "invalid session id": the BMC already dropped it (idle timeout).
            Err(Error::CompletionCode { code: 0x87, .. }) => Ok(()),
            // A BMC closes on the first Close Session it receives and ignores the
            // retransmissions (the session no longer exists), so silence after several
            // transmissions means our reply was lost, not that the session lives on.
            Err(Error::Timeout { .. }) if self.timing.attempts > 1 => {
                tracing::debug!(bmc = %self.bmc, "no reply to Close Session; assuming closed");
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.detach();
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        // Best effort: datagrams sealed now (keys move into the task), sent twice.
        let mut dgrams = Vec::new();
        let mut seq = 1u8;
        if let Some(instance) = lock(&self.sol_active).take() {
            let d = DeactivatePayload { payload_type: PAYLOAD_SOL, instance };
            let msg =
                Request::new(DeactivatePayload::NETFN, DeactivatePayload::CMD, seq, d.encode()).encode();
            dgrams.push(self.seal(PayloadType::Ipmi, msg));
            seq += 1;
        }
        let c = CloseSession { session_id: self.bmc_session_id };
        let msg = Request::new(CloseSession::NETFN, CloseSession::CMD, seq, c.encode()).encode();
        let close = self.seal(PayloadType::Ipmi, msg);
        let bmc = self.bmc.clone();
        let (record, id) = (self.record.clone(), self.bmc_session_id);
        // The close's replies come back on the session's path: its own socket, or a waiter on the mux
        // (registered now, before anything is sent; the session's route is gone already).
        let path = match &self.transport {
            Transport::Own { socket, .. } => DropPath::Socket(socket.clone()),
            Transport::Mux { mux, socket, addr } => DropPath::Mux(mux.waiter_on(*socket, *addr)),
        };
        match tokio::runtime::Handle::try_current() {
            Ok(h) => {
                h.spawn(async move {
                    let timing = Timing {
                        attempt_timeout: Duration::from_millis(200),
                        max_attempt_timeout: Duration::from_millis(400),
                        attempts: 3,
                    };
                    let link = match &path {
                        DropPath::Socket(s) => Link::Socket(s),
                        DropPath::Mux(w) => Link::Mux(w),
                    };
                    for d in dgrams {
                        let _ =
                            exchange(link, &bmc, &timing, "DeactivatePayload", &d, |_| Some(Ok(()))).await;
                    }
                    let r = exchange(link, &bmc, &timing, "CloseSession", &close, |_| Some(Ok(()))).await;
                    tracing::debug!(%bmc, ok = r.is_ok(), "session closed on drop");
                    if let (Ok(()), Some(rec)) = (r, record) {
                        rec.0.closed(id).await;
                    }
                });
            }
            Err(_) => {
                for d in dgrams.iter().chain(std::iter::once(&close)) {
                    self.transport.try_send(d);
                }
            }
        }
    }
}

/// The path a dropped session's Close Session takes (owned by the task that sends it).
enum DropPath {
    Socket(Arc<UdpSocket>),
    Mux(super::mux::Waiter),
}

async fn read_loop(socket: Arc<UdpSocket>, inner: Weak<Inner>) {
    let mut buf = vec![0u8; 2048];
    loop {
        let n = match socket.recv(&mut buf).await {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => continue,
            Err(e) => {
                tracing::debug!(error = %e, "session socket receive failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Some(inner) = inner.upgrade() else { return };
        inner.receive(&buf[..n]);
    }
}
