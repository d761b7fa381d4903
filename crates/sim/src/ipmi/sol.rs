//! The BMC side of Serial-over-LAN: host console output goes out in sequenced packets,
//! retransmitted until acknowledged (stop-and-wait); console input from the owning
//! session is acknowledged and fed to the host once, even when retransmitted.

use std::collections::VecDeque;
use std::time::Duration;

use lifeline_ipmi::wire::{
    packet::PayloadType,
    sol::{SolPacket, op, status},
};
use tokio::time::Instant;

use super::session::{Bmc, Out};

/// Largest SOL payload (4-byte header + 200 characters) either side may send.
pub const MAX_PAYLOAD: usize = 204;
const RETRANSMIT: Duration = Duration::from_millis(500);
const MAX_SENDS: u32 = 8;
/// Output buffered while the console client is slow; older bytes are dropped (UART overrun).
const OUTBUF_LIMIT: usize = 16 * 1024;

struct Outstanding {
    seq: u8,
    data: Vec<u8>,
    sends: u32,
    deadline: Instant,
}

pub(super) struct Sol {
    /// BMC session id of the session that activated SOL.
    pub owner: u32,
    out_seq: u8,
    outstanding: Option<Outstanding>,
    outbuf: VecDeque<u8>,
    last_in_seq: u8,
}

impl Sol {
    pub fn new(owner: u32) -> Sol {
        Sol { owner, out_seq: 0, outstanding: None, outbuf: VecDeque::new(), last_in_seq: 0 }
    }

    /// A status-only packet telling the owner SOL is being deactivated.
    pub fn deactivating() -> Vec<u8> {
        SolPacket { seq: 0, ack_seq: 0, accepted: 0, flags: status::DEACTIVATING, data: vec![] }.encode()
    }
}

impl Bmc {
    pub fn sol_active(&self) -> bool {
        self.sol.is_some()
    }

    pub fn sol_deadline(&self) -> Option<Instant> {
        self.sol.as_ref()?.outstanding.as_ref().map(|o| o.deadline)
    }

    fn send_sol(&mut self, packet: SolPacket) -> Out {
        let Some(owner) = self.sol.as_ref().map(|s| s.owner) else { return Vec::new() };
        let Some(s) = self.sessions.iter_mut().find(|s| s.id == owner) else { return Vec::new() };
        let peer = s.peer;
        s.seal(PayloadType::Sol, packet.encode()).map(|d| vec![(d, peer)]).unwrap_or_default()
    }

    /// Start the next data packet if none is in flight.
    fn sol_pump(&mut self) -> Out {
        let Some(sol) = self.sol.as_mut() else { return Vec::new() };
        if sol.outstanding.is_some() || sol.outbuf.is_empty() {
            return Vec::new();
        }
        sol.out_seq = SolPacket::next_seq(sol.out_seq);
        let n = sol.outbuf.len().min(MAX_PAYLOAD - 4);
        let data: Vec<u8> = sol.outbuf.drain(..n).collect();
        let seq = sol.out_seq;
        sol.outstanding =
            Some(Outstanding { seq, data: data.clone(), sends: 1, deadline: Instant::now() + RETRANSMIT });
        self.send_sol(SolPacket { seq, ack_seq: 0, accepted: 0, flags: 0, data })
    }

    /// Host console output.
    pub fn sol_output(&mut self, chunk: &[u8]) -> Out {
        let Some(sol) = self.sol.as_mut() else { return Vec::new() };
        sol.outbuf.extend(chunk);
        let excess = sol.outbuf.len().saturating_sub(OUTBUF_LIMIT);
        sol.outbuf.drain(..excess);
        self.sol_pump()
    }

    pub fn sol_retransmit(&mut self) -> Out {
        let Some(sol) = self.sol.as_mut() else { return Vec::new() };
        let Some(o) = sol.outstanding.as_mut() else { return Vec::new() };
        if Instant::now() < o.deadline {
            return Vec::new();
        }
        if o.sends >= MAX_SENDS {
            // The console went away without deactivating: give up on this packet.
            sol.outstanding = None;
            return self.sol_pump();
        }
        o.sends += 1;
        o.deadline = Instant::now() + RETRANSMIT;
        let p = SolPacket { seq: o.seq, ack_seq: 0, accepted: 0, flags: 0, data: o.data.clone() };
        self.send_sol(p)
    }

    /// A SOL packet from session `idx`.
    pub(super) fn sol_input(&mut self, idx: usize, payload: &[u8]) -> Out {
        let Ok(p) = SolPacket::decode(payload) else { return Vec::new() };
        let id = self.sessions[idx].id;
        let Some(sol) = self.sol.as_mut() else { return Vec::new() };
        if sol.owner != id {
            return Vec::new();
        }
        if p.ack_seq != 0
            && let Some(o) = &sol.outstanding
            && o.seq == p.ack_seq
        {
            if p.flags & op::NACK != 0 {
                if let Some(o) = sol.outstanding.as_mut() {
                    o.deadline = Instant::now() + RETRANSMIT;
                }
            } else {
                let accepted = (p.accepted as usize).min(o.data.len());
                let rest = o.data[accepted..].to_vec();
                for b in rest.into_iter().rev() {
                    sol.outbuf.push_front(b);
                }
                sol.outstanding = None;
            }
        }
        let mut out = Vec::new();
        if p.seq != 0 {
            let fresh = p.seq != sol.last_in_seq;
            sol.last_in_seq = p.seq;
            if fresh {
                if p.flags & op::GENERATE_BREAK != 0 {
                    self.host.console().send_break();
                }
                if !p.data.is_empty() {
                    self.host.console().write_input(&p.data);
                }
            }
            let ack =
                SolPacket { seq: 0, ack_seq: p.seq, accepted: p.data.len() as u8, flags: 0, data: vec![] };
            out = self.send_sol(ack);
        }
        out.extend(self.sol_pump());
        out
    }
}
