//! One authenticated RMCP+ session over tokio UDP: handshake (Get Channel Auth Caps,
//! Open Session, RAKP 1-4, Set Session Privilege Level), request/response matching,
//! retransmission, and closing.
//!
//! Why the shape: a background reader task demultiplexes replies (by rqSeq + cmd) and
//! SOL packets, so commands and a console can share one session; every request has a
//! bounded number of attempts with exponential backoff; the session is closed on
//! `close()`, and on drop of the last handle a best-effort Close Session is spawned, so a
//! BMC's small session table never fills with our orphans.

use super::error::{Error, Result};
use super::sessionless::{get_channel_auth_caps, get_channel_cipher_suites};
pub use super::timing::{LinkCounters, LinkStats, Timing};
use crate::wire::{
    self, Body, Command, DecodeError, Privilege,
    app::{ChannelAuthCaps, CloseSession, SetSessionPrivilege},
    crypto::{CipherSuite, RakpParams, SessionKeys, codes_equal},
    message::{Request, Response},
    packet::{self, Packet, PayloadType, V20Packet},
    payload::{DeactivatePayload, PAYLOAD_SOL},
    rakp::{self, OpenSessionRequest, OpenSessionResponse, Rakp1, Rakp2, Rakp34},
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
    socket: Arc<UdpSocket>,
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
    reader: StdMutex<Option<tokio::task::JoinHandle<()>>>,
    auth_caps: ChannelAuthCaps,
    privilege: Privilege,
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

pub(super) fn io_err(bmc: &str) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io { bmc: bmc.to_string(), source }
}

pub(super) fn decode_err<'a>(bmc: &'a str, what: &'static str) -> impl FnOnce(DecodeError) -> Error + 'a {
    move |source| Error::Decode { bmc: bmc.to_string(), what, source }
}

/// Send `datagram` and wait for a reply `accept` likes, retransmitting per `timing`.
/// Replies that `accept` rejects (late duplicates, other sessions' packets) are ignored.
pub(super) async fn exchange<T>(
    socket: &UdpSocket,
    bmc: &str,
    timing: &Timing,
    what: &'static str,
    datagram: &[u8],
    mut accept: impl FnMut(&[u8]) -> Option<Result<T>>,
) -> Result<T> {
    let mut buf = vec![0u8; 2048];
    let started = Instant::now();
    for i in 0..timing.attempts.max(1) {
        socket.send(datagram).await.map_err(io_err(bmc))?;
        let deadline = Instant::now() + timing.attempt(i);
        loop {
            match tokio::time::timeout_at(deadline, socket.recv(&mut buf)).await {
                Err(_) => break,
                // ICMP port unreachable etc.: the BMC may come back; treat like a loss.
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                    tokio::time::sleep_until(deadline).await;
                    break;
                }
                Ok(Err(e)) => return Err(io_err(bmc)(e)),
                Ok(Ok(n)) => {
                    if let Some(r) = accept(&buf[..n]) {
                        return r;
                    }
                }
            }
        }
    }
    Err(Error::Timeout { bmc: bmc.to_string(), what, after: started.elapsed() })
}

struct Established {
    keys: SessionKeys,
    bmc_session_id: u32,
    console_session_id: u32,
    /// RAKP 4 was received and verified.
    confirmed: bool,
}

/// Why a suite attempt failed in a way that justifies trying the next suite. Silence on Open Session only
/// counts when the BMC's suite list is unknown (`silence_is_refusal`), and only after every retransmission:
/// ipmi_sim and some firmware ignore Open Session for a suite they lack, but one lost datagram is not that.
fn suite_rejected(e: &Error, silence_is_refusal: bool) -> bool {
    match e {
        Error::SessionRefused { stage: "Open Session", status, .. } => matches!(
            *status,
            rakp::status::INVALID_AUTH_ALG
                | rakp::status::INVALID_INTEGRITY_ALG
                | 0x06
                | 0x07
                | rakp::status::INVALID_CONF_ALG
                | rakp::status::NO_CIPHER_SUITE_MATCH
                | rakp::status::ILLEGAL_PARAMETER
        ),
        Error::Timeout { what: "Open Session", .. } => silence_is_refusal,
        Error::NoCipherSuite { .. } => true,
        _ => false,
    }
}

async fn handshake(
    socket: &UdpSocket,
    bmc: &str,
    cfg: &ClientConfig,
    suite: CipherSuite,
) -> Result<Established> {
    let console_session_id = loop {
        let id: u32 = rand::random();
        if id != 0 {
            break id;
        }
    };
    let tag: u8 = rand::random();
    let algorithms = suite.algorithms();
    let req = OpenSessionRequest { tag, max_privilege: cfg.privilege as u8, console_session_id, algorithms };
    let dgram = packet::encode(
        &Packet::V20(V20Packet::sessionless(PayloadType::OpenSessionRequest, req.encode())),
        None,
        [0; 16],
    );
    // Every attempt, even for a suite that may be unsupported: a lost reply must not look like a refusal.
    let open = exchange(socket, bmc, &cfg.timing, "Open Session", &dgram, |b| {
        let Ok(Packet::V20(p)) = packet::decode(b, None) else { return None };
        if p.payload_type != PayloadType::OpenSessionResponse {
            return None;
        }
        let r = OpenSessionResponse::decode(&p.payload).ok()?;
        (r.tag == tag && r.console_session_id == console_session_id).then_some(Ok(r))
    })
    .await?;
    if open.status != rakp::status::OK {
        return Err(Error::SessionRefused {
            bmc: bmc.to_string(),
            stage: "Open Session",
            status: open.status,
        });
    }
    if open.algorithms != Some(algorithms) {
        return Err(Error::NoCipherSuite { bmc: bmc.to_string(), tried: vec![suite.id()] });
    }

    let username = cfg.username.as_bytes()[..cfg.username.len().min(16)].to_vec();
    let console_random: [u8; 16] = rand::random();
    // Name-only lookup (bit 4), as ipmitool does.
    let role = 0x10 | cfg.privilege as u8;
    let r1 =
        Rakp1 { tag, bmc_session_id: open.bmc_session_id, console_random, role, username: username.clone() };
    let dgram =
        packet::encode(&Packet::V20(V20Packet::sessionless(PayloadType::Rakp1, r1.encode())), None, [0; 16]);
    let r2 = exchange(socket, bmc, &cfg.timing, "RAKP 1", &dgram, |b| {
        let Ok(Packet::V20(p)) = packet::decode(b, None) else { return None };
        if p.payload_type != PayloadType::Rakp2 {
            return None;
        }
        let r = Rakp2::decode(&p.payload).ok()?;
        (r.tag == tag && r.console_session_id == console_session_id).then_some(Ok(r))
    })
    .await?;
    match r2.status {
        rakp::status::OK => {}
        rakp::status::UNAUTHORIZED_NAME => {
            return Err(Error::Auth { bmc: bmc.to_string(), reason: "user name not accepted by the BMC" });
        }
        s => return Err(Error::SessionRefused { bmc: bmc.to_string(), stage: "RAKP 2", status: s }),
    }
    let params = RakpParams {
        suite,
        console_session_id,
        bmc_session_id: open.bmc_session_id,
        console_random,
        bmc_random: r2.bmc_random,
        bmc_guid: r2.bmc_guid,
        role,
        username,
    };
    let password = cfg.password.as_bytes();
    if !codes_equal(&params.rakp2_code(password), &r2.auth_code) {
        // Tell the BMC to drop the half-open session now (RAKP 3 with an error status) rather than leave it
        // holding one of its few session slots until it times out: a password check that fails a few
        // times in a row (a rotation being resumed, an audit) must not exhaust them.
        let abort = Rakp34 {
            tag,
            status: rakp::status::INVALID_INTEGRITY_CHECK,
            session_id: open.bmc_session_id,
            auth_code: Vec::new(),
        };
        let d = packet::encode(
            &Packet::V20(V20Packet::sessionless(PayloadType::Rakp3, abort.encode())),
            None,
            [0; 16],
        );
        let _ = socket.send(&d).await;
        return Err(Error::Auth { bmc: bmc.to_string(), reason: "RAKP 2 code mismatch (wrong password?)" });
    }

    let r3 = Rakp34 {
        tag,
        status: rakp::status::OK,
        session_id: open.bmc_session_id,
        auth_code: params.rakp3_code(password),
    };
    let dgram =
        packet::encode(&Packet::V20(V20Packet::sessionless(PayloadType::Rakp3, r3.encode())), None, [0; 16]);
    let sik = params.sik(password, cfg.kg.as_deref());
    let r4 = exchange(socket, bmc, &cfg.timing, "RAKP 3", &dgram, |b| {
        let Ok(Packet::V20(p)) = packet::decode(b, None) else { return None };
        if p.payload_type != PayloadType::Rakp4 {
            return None;
        }
        let r = Rakp34::decode(&p.payload).ok()?;
        (r.tag == tag && r.session_id == console_session_id).then_some(Ok(r))
    })
    .await;
    let established = |confirmed| Established {
        keys: SessionKeys::derive(suite, &sik),
        bmc_session_id: open.bmc_session_id,
        console_session_id,
        confirmed,
    };
    // When RAKP 4 is lost the BMC has already activated the session and (ipmi_sim) ignores
    // or refuses a retransmitted RAKP 3. The keys are known, so the session is used
    // unconfirmed: the first authenticated reply proves the BMC derived the same SIK, and
    // if none comes, dropping the session sends Close Session so nothing is orphaned.
    let r4 = match r4 {
        Ok(r4) => r4,
        Err(Error::Timeout { .. }) => return Ok(established(false)),
        Err(e) => return Err(e),
    };
    match r4.status {
        rakp::status::OK => {}
        rakp::status::INVALID_INTEGRITY_CHECK => {
            return Err(Error::Auth { bmc: bmc.to_string(), reason: "BMC rejected our RAKP 3 code" });
        }
        _ => return Ok(established(false)),
    }
    if !codes_equal(&params.rakp4_icv(&sik), &r4.auth_code) {
        return Err(Error::Auth { bmc: bmc.to_string(), reason: "RAKP 4 integrity check value mismatch" });
    }
    Ok(established(true))
}

/// The suites to try, in order, and whether the BMC listed them (so silence on one is never a refusal).
/// A remembered suite goes first without asking; otherwise the BMC's list filters the configured order.
/// When the BMC does not answer the list request (a few attempts), every configured suite is tried.
async fn candidate_suites(socket: &UdpSocket, bmc: &str, cfg: &ClientConfig) -> (Vec<CipherSuite>, bool) {
    let mut suites = cfg.cipher_suites.clone();
    if let Some(known) = cfg.known_suite
        && let Some(i) = suites.iter().position(|s| *s == known)
    {
        suites.remove(i);
        suites.insert(0, known);
        return (suites, false);
    }
    if suites.len() < 2 {
        return (suites, false);
    }
    let timing = Timing { attempts: cfg.timing.attempts.clamp(1, 4), ..cfg.timing.clone() };
    match get_channel_cipher_suites(socket, bmc, &timing).await {
        Ok(ids) => {
            let offered: Vec<CipherSuite> =
                suites.iter().copied().filter(|s| ids.contains(&s.id())).collect();
            tracing::debug!(%bmc, ?ids, "BMC cipher suites");
            if offered.is_empty() {
                // A list without any suite we speak may be wrong (OEM records): try them all anyway.
                (suites, false)
            } else {
                (offered, true)
            }
        }
        Err(e) => {
            tracing::debug!(%bmc, error = %e, "no cipher suite list; trying each configured suite");
            (suites, false)
        }
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
        let auth_caps = get_channel_auth_caps(&socket, &bmc, &cfg.timing, cfg.privilege).await?;
        if !auth_caps.supports_v2() {
            return Err(Error::NoIpmi2 { bmc });
        }
        let (candidates, listed) = candidate_suites(&socket, &bmc, cfg).await;
        let mut last_err = None;
        let mut tried = Vec::new();
        let mut est = None;
        for suite in &candidates {
            tried.push(suite.id());
            let mut result = handshake(&socket, &bmc, cfg, *suite).await;
            // A lost RAKP 2 leaves only a pending (never active) session on the BMC, which it
            // expires itself: starting over is safe.
            for _ in 0..2 {
                if !matches!(result, Err(Error::Timeout { what: "RAKP 1", .. })) {
                    break;
                }
                result = handshake(&socket, &bmc, cfg, *suite).await;
            }
            match result {
                Ok(e) => {
                    est = Some(e);
                    break;
                }
                Err(e) if suite_rejected(&e, !listed && cfg.known_suite != Some(*suite)) => {
                    tracing::debug!(%bmc, suite = suite.id(), error = %e, "cipher suite rejected, trying the next");
                    last_err = Some(e);
                }
                Err(e) => return Err(e),
            }
        }
        let Some(est) = est else {
            // A timeout (silence) is reported as such: it also means "session table full"
            // on BMCs such as ipmi_sim; explicit algorithm refusals mean no common suite.
            return Err(match last_err {
                Some(e @ Error::Timeout { .. }) => e,
                _ => Error::NoCipherSuite { bmc, tried },
            });
        };
        let socket = Arc::new(socket);
        let confirmed = est.confirmed;
        let inner = Arc::new(Inner {
            bmc,
            socket: socket.clone(),
            timing: cfg.timing.clone(),
            keys: est.keys,
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
            reader: StdMutex::new(None),
            auth_caps,
            privilege: cfg.privilege,
        });
        let reader = tokio::spawn(read_loop(socket, Arc::downgrade(&inner)));
        *lock(&inner.reader) = Some(reader);
        let session = Session { inner };
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

    /// Deactivate our SOL payload (if any) and close the session. Idempotent.
    pub async fn close(self) -> Result<()> {
        self.inner.close().await
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
        self.socket.send(&dgram).await.map_err(io_err(&self.bmc))?;
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
        if let Some(h) = lock(&self.reader).take() {
            h.abort();
        }
        lock(&self.pending).clear();
        *lock(&self.sol_tx) = None;
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
        if let Some(h) = lock(&self.reader).take() {
            h.abort();
        }
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
        let socket = self.socket.clone();
        let bmc = self.bmc.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(h) => {
                h.spawn(async move {
                    let timing = Timing {
                        attempt_timeout: Duration::from_millis(200),
                        max_attempt_timeout: Duration::from_millis(400),
                        attempts: 3,
                    };
                    for d in dgrams {
                        let _ =
                            exchange(&socket, &bmc, &timing, "DeactivatePayload", &d, |_| Some(Ok(()))).await;
                    }
                    let r = exchange(&socket, &bmc, &timing, "CloseSession", &close, |_| Some(Ok(()))).await;
                    tracing::debug!(%bmc, ok = r.is_ok(), "session closed on drop");
                });
            }
            Err(_) => {
                for d in dgrams.iter().chain(std::iter::once(&close)) {
                    let _ = socket.try_send(d);
                }
            }
        }
    }
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
        if packet::peek_session_id(&buf[..n]) != Some(inner.console_session_id) {
            continue;
        }
        match packet::decode(&buf[..n], Some(&inner.keys)) {
            Ok(Packet::V20(p)) => inner.dispatch(p),
            Ok(_) => {}
            Err(e) => tracing::debug!(bmc = %inner.bmc, error = %e, "dropping undecodable datagram"),
        }
    }
}
