//! Serial-over-LAN payload (RMCP+ payload type 1): 4-byte header + characters.
//!
//! ipmi-rs has no SOL at all; this is the packet both the console client and the
//! simulator's BMC side use.

use super::{DecodeError, Reader};

/// Console -> BMC operation bits.
pub mod op {
    pub const NACK: u8 = 0x40;
    pub const RING_WOR: u8 = 0x20;
    pub const GENERATE_BREAK: u8 = 0x10;
    pub const CTS_PAUSE: u8 = 0x08;
    pub const DROP_DCD_DSR: u8 = 0x04;
    pub const FLUSH_INBOUND: u8 = 0x02;
    pub const FLUSH_OUTBOUND: u8 = 0x01;
}

/// BMC -> console status bits.
pub mod status {
    pub const NACK: u8 = 0x40;
    pub const CHARACTER_TRANSFER_UNAVAILABLE: u8 = 0x20;
    pub const DEACTIVATING: u8 = 0x10;
    pub const TRANSMIT_OVERRUN: u8 = 0x08;
    pub const BREAK_DETECTED: u8 = 0x04;
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SolPacket {
    /// 1..=15; 0 = ack/status only (no characters to acknowledge).
    pub seq: u8,
    /// Sequence number being acked/nacked; 0 = none.
    pub ack_seq: u8,
    /// Characters accepted from the packet `ack_seq`.
    pub accepted: u8,
    /// Operation (to BMC) or status (from BMC) bits.
    pub flags: u8,
    pub data: Vec<u8>,
}

impl SolPacket {
    pub fn encode(&self) -> Vec<u8> {
        let mut v = vec![self.seq & 0x0F, self.ack_seq & 0x0F, self.accepted, self.flags];
        v.extend_from_slice(&self.data);
        v
    }
    pub fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "SOL packet");
        Ok(Self {
            seq: r.u8()? & 0x0F,
            ack_seq: r.u8()? & 0x0F,
            accepted: r.u8()?,
            flags: r.u8()?,
            data: r.rest().to_vec(),
        })
    }
    pub fn is_nack(&self) -> bool {
        self.flags & status::NACK != 0
    }
    /// The next SOL sequence number after `seq` (1..=15, skipping 0).
    pub fn next_seq(seq: u8) -> u8 {
        if seq >= 15 { 1 } else { seq + 1 }
    }
}
