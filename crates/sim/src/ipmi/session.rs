//! The BMC's session table and RMCP+ session establishment (Open Session, RAKP 1-4),
//! plus framing of in-session traffic. Retransmitted handshake messages get the stored
//! answer again instead of creating new sessions (unlike ipmi_sim), so a lossy link never
//! leaks half-open sessions here.

use std::net::SocketAddr;
use std::sync::Arc;

use lifeline_ipmi::wire::{
    Body, Command,
    app::{ChannelAuthCaps, GetChannelAuthCaps},
    crypto::{CipherSuite, RakpParams, SessionKeys, codes_equal},
    message::{Request, Response},
    packet::{self, AsfMessage, Packet, PayloadType, V15Packet, V20Packet},
    rakp::{self, OpenSessionRequest, OpenSessionResponse, Rakp1, Rakp2, Rakp34},
};
use tokio::time::Instant;

use super::sol::Sol;
use super::{HANDSHAKE_IDLE, SESSION_IDLE};
use crate::host::Host;

pub(super) enum Stage {
    /// Open Session answered; waiting for RAKP 1.
    Opened { tag: u8, reply: Vec<u8> },
    /// RAKP 2 sent; waiting for RAKP 3.
    Rakp2 { params: RakpParams, reply: Vec<u8> },
    /// Established.
    Active { keys: SessionKeys, rakp3_code: Vec<u8>, rakp4: Vec<u8> },
}

pub(super) struct Session {
    pub id: u32,
    pub console_id: u32,
    pub peer: SocketAddr,
    pub suite: CipherSuite,
    /// Maximum privilege negotiated in Open Session.
    pub max_priv: u8,
    /// Current session privilege (starts at USER, Set Session Privilege Level raises it).
    pub privilege: u8,
    pub stage: Stage,
    pub last_seen: Instant,
    replay_high: u32,
    replay_mask: u64,
    out_seq: u32,
    /// Last acting request (chassis control, clear SEL, BMC reset): (rqSeq, data) and its response. A
    /// retransmission of it is answered from here instead of being executed twice.
    pub last_control: Option<(u8, Vec<u8>, Instant, Response)>,
}

impl Session {
    pub fn keys(&self) -> Option<&SessionKeys> {
        match &self.stage {
            Stage::Active { keys, .. } => Some(keys),
            _ => None,
        }
    }

    fn accept_seq(&mut self, seq: u32) -> bool {
        if seq > self.replay_high {
            let shift = seq - self.replay_high;
            self.replay_mask = if shift >= 64 { 0 } else { self.replay_mask << shift } | 1;
            self.replay_high = seq;
            true
        } else {
            let back = self.replay_high - seq;
            if back >= 64 || self.replay_mask & (1 << back) != 0 {
                return false;
            }
            self.replay_mask |= 1 << back;
            true
        }
    }

    /// Encrypt + authenticate a payload for this session's console.
    pub fn seal(&mut self, payload_type: PayloadType, payload: Vec<u8>) -> Option<Vec<u8>> {
        let keys = self.keys()?.clone();
        self.out_seq = self.out_seq.wrapping_add(1).max(1);
        let p = V20Packet {
            payload_type,
            encrypted: true,
            authenticated: true,
            session_id: self.console_id,
            seq: self.out_seq,
            payload,
        };
        Some(packet::encode(&Packet::V20(p), Some(&keys), rand::random()))
    }
}

/// One BMC's protocol state.
pub struct Bmc {
    pub(super) host: Arc<Host>,
    /// UDP port we listen on (reported in Activate Payload so SOL comes back here).
    pub(super) port: u16,
    pub(super) guid: [u8; 16],
    pub(super) sessions: Vec<Session>,
    pub(super) sol: Option<Sol>,
    /// `sol-stuck` released by a Deactivate Payload (until the fault is cleared and re-injected).
    pub(super) stuck_released: bool,
    pub(super) sdr_reservation: u16,
    /// Close Session for the session itself: removed after its reply is sealed.
    pub(super) pending_close: Option<u32>,
    reset_generation: u32,
}

impl std::fmt::Debug for Bmc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bmc")
            .field("host", &self.host.name())
            .field("sessions", &self.sessions.len())
            .finish()
    }
}

pub(super) type Out = Vec<(Vec<u8>, SocketAddr)>;

fn sessionless(payload_type: PayloadType, payload: Vec<u8>) -> Vec<u8> {
    packet::encode(&Packet::V20(V20Packet::sessionless(payload_type, payload)), None, [0; 16])
}

impl Bmc {
    pub fn new(host: Arc<Host>, port: u16) -> Self {
        let mut guid = [0u8; 16];
        let uuid: Vec<u8> = host
            .bmc_config()
            .identity
            .uuid
            .bytes()
            .filter(|c| c.is_ascii_hexdigit())
            .collect::<Vec<_>>()
            .chunks(2)
            .filter_map(|p| u8::from_str_radix(std::str::from_utf8(p).ok()?, 16).ok())
            .collect();
        for (g, b) in guid.iter_mut().zip(uuid) {
            *g = b;
        }
        let reset_generation = host.bmc().reset_generation();
        Bmc {
            host,
            port,
            guid,
            sessions: Vec::new(),
            sol: None,
            stuck_released: false,
            sdr_reservation: 1,
            pending_close: None,
            reset_generation,
        }
    }

    pub(super) fn offered(&self) -> Vec<CipherSuite> {
        self.host.bmc_config().cipher_suites.iter().filter_map(|id| CipherSuite::from_id(*id)).collect()
    }

    /// A BMC reset (control API / Redfish Manager.Reset) drops every session.
    pub fn check_reset(&mut self) {
        let g = self.host.bmc().reset_generation();
        if g != self.reset_generation {
            self.reset_generation = g;
            self.sessions.clear();
            self.sol = None;
        }
    }

    pub fn expire(&mut self) {
        let now = Instant::now();
        self.sessions.retain(|s| {
            let limit = if matches!(s.stage, Stage::Active { .. }) { SESSION_IDLE } else { HANDSHAKE_IDLE };
            now.duration_since(s.last_seen) < limit
        });
        if let Some(sol) = &self.sol
            && !self.sessions.iter().any(|s| s.id == sol.owner)
        {
            self.sol = None;
        }
        if !self.host.bmc().sol_stuck() {
            self.stuck_released = false;
        }
    }

    /// Handle one datagram; returns the datagrams to send.
    pub fn handle(&mut self, datagram: &[u8], from: SocketAddr) -> Out {
        let sid = packet::peek_session_id(datagram);
        if let Some(id) = sid
            && id != 0
        {
            return self.in_session(id, datagram, from);
        }
        let Ok(pkt) = packet::decode(datagram, None) else { return Vec::new() };
        let reply = match pkt {
            Packet::Asf(a) if a.msg_type == packet::ASF_PING => {
                Some(packet::encode(&Packet::Asf(AsfMessage::pong(a.tag)), None, [0; 16]))
            }
            Packet::Asf(_) => None,
            Packet::V15(p) => self.sessionless_v15(&p),
            Packet::V20(p) => match p.payload_type {
                PayloadType::OpenSessionRequest => self.open_session(&p.payload, from),
                PayloadType::Rakp1 => self.rakp1(&p.payload, from),
                PayloadType::Rakp3 => self.rakp3(&p.payload, from),
                PayloadType::Ipmi => {
                    self.sessionless_command(&p.payload).map(|r| sessionless(PayloadType::Ipmi, r.encode()))
                }
                _ => None,
            },
        };
        reply.map(|r| vec![(r, from)]).unwrap_or_default()
    }

    fn sessionless_v15(&mut self, p: &V15Packet) -> Option<Vec<u8>> {
        if p.session_id != 0 {
            return None;
        }
        let resp = self.sessionless_command(&p.message)?;
        let reply =
            V15Packet { auth_type: 0, seq: 0, session_id: 0, auth_code: None, message: resp.encode() };
        Some(packet::encode(&Packet::V15(reply), None, [0; 16]))
    }

    /// Commands allowed before a session exists.
    fn sessionless_command(&mut self, msg: &[u8]) -> Option<Response> {
        let req = Request::decode(msg).ok()?;
        match (req.netfn, req.cmd) {
            (GetChannelAuthCaps::NETFN, GetChannelAuthCaps::CMD) => Some(self.auth_caps(&req)),
            (lifeline_ipmi::wire::netfn::APP, 0x54) => Some(self.cipher_suites(&req)),
            _ => Some(req.respond(0xD4, vec![])),
        }
    }

    pub(super) fn auth_caps(&self, req: &Request) -> Response {
        let caps = ChannelAuthCaps {
            channel: 1,
            // IPMI 2.0 only: no IPMI 1.5 authentication types.
            auth_types: 0x80,
            // Non-null user names only; per-message and user-level authentication enabled.
            status: 0x04,
            extended: 0x02,
            oem_id: 0,
            oem_aux: 0,
        };
        req.respond(0, caps.encode())
    }

    fn open_session(&mut self, payload: &[u8], from: SocketAddr) -> Option<Vec<u8>> {
        let req = OpenSessionRequest::decode(payload).ok()?;
        let now = Instant::now();
        // A retransmitted request gets the same session back.
        if let Some(s) =
            self.sessions.iter_mut().find(|s| s.peer == from && s.console_id == req.console_session_id)
            && let Stage::Opened { tag, reply } = &s.stage
            && *tag == req.tag
        {
            s.last_seen = now;
            return Some(reply.clone());
        }
        let refuse = |status| {
            let r = OpenSessionResponse {
                tag: req.tag,
                status,
                max_privilege: 0,
                console_session_id: req.console_session_id,
                bmc_session_id: 0,
                algorithms: None,
            };
            Some(sessionless(PayloadType::OpenSessionResponse, r.encode()))
        };
        self.expire();
        let limit = self.host.bmc_config().session_limit.max(1);
        if self.host.bmc().sessions_full() || self.sessions.len() >= limit {
            return refuse(rakp::status::NO_RESOURCES);
        }
        let (a, i, c) = req.algorithms;
        let Some(suite) = CipherSuite::from_algorithms(a, i, c).filter(|s| self.offered().contains(s)) else {
            return refuse(rakp::status::NO_CIPHER_SUITE_MATCH);
        };
        let max_priv = match req.max_privilege {
            0 => 4,
            p @ 1..=4 => p,
            _ => return refuse(rakp::status::INVALID_ROLE),
        };
        let id = loop {
            let id: u32 = rand::random();
            if id != 0 && !self.sessions.iter().any(|s| s.id == id) {
                break id;
            }
        };
        let resp = OpenSessionResponse {
            tag: req.tag,
            status: rakp::status::OK,
            max_privilege: max_priv,
            console_session_id: req.console_session_id,
            bmc_session_id: id,
            algorithms: Some(req.algorithms),
        };
        let reply = sessionless(PayloadType::OpenSessionResponse, resp.encode());
        self.sessions.push(Session {
            id,
            console_id: req.console_session_id,
            peer: from,
            suite,
            max_priv,
            privilege: max_priv.min(2),
            stage: Stage::Opened { tag: req.tag, reply: reply.clone() },
            last_seen: now,
            replay_high: 0,
            replay_mask: 0,
            out_seq: 0,
            last_control: None,
        });
        Some(reply)
    }

    fn rakp1(&mut self, payload: &[u8], from: SocketAddr) -> Option<Vec<u8>> {
        let r1 = Rakp1::decode(payload).ok()?;
        let guid = self.guid;
        let idx = self.sessions.iter().position(|s| s.id == r1.bmc_session_id)?;
        let s = &mut self.sessions[idx];
        s.last_seen = Instant::now();
        s.peer = from;
        if let Stage::Rakp2 { params, reply } = &s.stage
            && params.console_random == r1.console_random
        {
            return Some(reply.clone());
        }
        if !matches!(s.stage, Stage::Opened { .. }) {
            return None;
        }
        let fail = |status| {
            let r = Rakp2 {
                tag: r1.tag,
                status,
                console_session_id: s.console_id,
                bmc_random: [0; 16],
                bmc_guid: [0; 16],
                auth_code: vec![],
            };
            sessionless(PayloadType::Rakp2, r.encode())
        };
        // The user database decides: an unknown, disabled or locked name is refused here (the password is
        // proven by the RAKP3 HMAC), and a role above the user's privilege limit too.
        let account = std::str::from_utf8(&r1.username)
            .ok()
            .and_then(|n| self.host.accounts().by_name(n))
            .filter(|a| a.enabled && !a.locked() && a.privilege != crate::accounts::NO_ACCESS);
        let Some(account) = account else {
            let reply = fail(rakp::status::UNAUTHORIZED_NAME);
            self.sessions.remove(idx);
            return Some(reply);
        };
        if r1.role & 0x0F > s.max_priv || r1.role & 0x0F > account.privilege {
            let reply = fail(rakp::status::UNAUTHORIZED_ROLE);
            self.sessions.remove(idx);
            return Some(reply);
        }
        s.max_priv = s.max_priv.min(account.privilege);
        let params = RakpParams {
            suite: s.suite,
            console_session_id: s.console_id,
            bmc_session_id: s.id,
            console_random: r1.console_random,
            bmc_random: rand::random(),
            bmc_guid: guid,
            role: r1.role,
            username: r1.username.clone(),
        };
        let r2 = Rakp2 {
            tag: r1.tag,
            status: rakp::status::OK,
            console_session_id: s.console_id,
            bmc_random: params.bmc_random,
            bmc_guid: guid,
            auth_code: params.rakp2_code(account.password.as_bytes()),
        };
        let reply = sessionless(PayloadType::Rakp2, r2.encode());
        s.stage = Stage::Rakp2 { params, reply: reply.clone() };
        Some(reply)
    }

    fn rakp3(&mut self, payload: &[u8], from: SocketAddr) -> Option<Vec<u8>> {
        let r3 = Rakp34::decode(payload).ok()?;
        let idx = self.sessions.iter().position(|s| s.id == r3.session_id)?;
        let s = &mut self.sessions[idx];
        s.last_seen = Instant::now();
        s.peer = from;
        match &s.stage {
            Stage::Active { rakp3_code, rakp4, .. } if *rakp3_code == r3.auth_code => {
                return Some(rakp4.clone());
            }
            Stage::Rakp2 { .. } => {}
            _ => return None,
        }
        let Stage::Rakp2 { params, .. } = &s.stage else { return None };
        let params = params.clone();
        let account =
            std::str::from_utf8(&params.username).ok().and_then(|n| self.host.accounts().by_name(n));
        let (slot, password) = account.map(|a| (a.id, a.password)).unwrap_or_default();
        let s = &mut self.sessions[idx];
        let reply4 = |status, code: Vec<u8>| {
            let r = Rakp34 { tag: r3.tag, status, session_id: params.console_session_id, auth_code: code };
            sessionless(PayloadType::Rakp4, r.encode())
        };
        if r3.status != rakp::status::OK {
            self.sessions.remove(idx);
            return None;
        }
        if slot == 0 || !codes_equal(&params.rakp3_code(password.as_bytes()), &r3.auth_code) {
            self.host.accounts().record_login(slot, false);
            let reply = reply4(rakp::status::INVALID_INTEGRITY_CHECK, vec![]);
            self.sessions.remove(idx);
            return Some(reply);
        }
        self.host.accounts().record_login(slot, true);
        let sik = params.sik(password.as_bytes(), None);
        let rakp4 = reply4(rakp::status::OK, params.rakp4_icv(&sik));
        s.stage = Stage::Active {
            keys: SessionKeys::derive(params.suite, &sik),
            rakp3_code: r3.auth_code,
            rakp4: rakp4.clone(),
        };
        Some(rakp4)
    }

    fn in_session(&mut self, id: u32, datagram: &[u8], from: SocketAddr) -> Out {
        let Some(idx) = self.sessions.iter().position(|s| s.id == id) else { return Vec::new() };
        let Some(keys) = self.sessions[idx].keys().cloned() else { return Vec::new() };
        let Ok(Packet::V20(p)) = packet::decode(datagram, Some(&keys)) else { return Vec::new() };
        if !p.authenticated {
            return Vec::new();
        }
        let s = &mut self.sessions[idx];
        if !s.accept_seq(p.seq) {
            return Vec::new();
        }
        s.last_seen = Instant::now();
        s.peer = from;
        match p.payload_type {
            PayloadType::Ipmi => {
                let Ok(req) = Request::decode(&p.payload) else { return Vec::new() };
                self.in_session_command(idx, req)
            }
            PayloadType::Sol => self.sol_input(idx, &p.payload),
            _ => Vec::new(),
        }
    }

    fn in_session_command(&mut self, idx: usize, req: Request) -> Out {
        let s = &self.sessions[idx];
        let (id, peer) = (s.id, s.peer);
        // Requests that act (chassis control, clear SEL, BMC reset) run once per (rqSeq, data).
        let is_control = matches!((req.netfn, req.cmd), (0x00, 0x02) | (0x0A, 0x47) | (0x06, 0x02 | 0x03));
        if is_control
            && let Some((seq, data, at, resp)) = &s.last_control
            && *seq == req.rq_seq
            && *data == req.data
            && at.elapsed() < std::time::Duration::from_secs(5)
        {
            let resp = resp.clone();
            return self.reply(idx, peer, resp);
        }
        let (resp, mut extra) = self.command(idx, &req);
        let Some(idx) = self.sessions.iter().position(|s| s.id == id) else {
            return extra;
        };
        if is_control {
            self.sessions[idx].last_control =
                Some((req.rq_seq, req.data.clone(), Instant::now(), resp.clone()));
        }
        let mut out = self.reply(idx, peer, resp);
        out.append(&mut extra);
        if let Some(closing) = self.pending_close.take() {
            self.remove_session(closing);
        }
        out
    }

    /// Remove a session; SOL it owned goes with it.
    pub(super) fn remove_session(&mut self, id: u32) {
        self.sessions.retain(|s| s.id != id);
        if self.sol.as_ref().is_some_and(|sol| sol.owner == id) {
            self.sol = None;
        }
    }

    fn reply(&mut self, idx: usize, peer: SocketAddr, resp: Response) -> Out {
        self.sessions[idx].seal(PayloadType::Ipmi, resp.encode()).map(|d| vec![(d, peer)]).unwrap_or_default()
    }
}
