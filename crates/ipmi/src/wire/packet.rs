//! Datagram framing: RMCP header, ASF presence ping/pong, the IPMI 1.5 session header
//! (session-less Get Channel Authentication Capabilities) and the RMCP+ (IPMI 2.0)
//! session header with its integrity trailer and encrypted payloads.

use super::{DecodeError, Reader, crypto::SessionKeys};

pub const RMCP_VERSION: u8 = 0x06;
pub const RMCP_CLASS_ASF: u8 = 0x06;
pub const RMCP_CLASS_IPMI: u8 = 0x07;
pub const ASF_IANA: u32 = 0x0000_11BE;
pub const ASF_PING: u8 = 0x80;
pub const ASF_PONG: u8 = 0x40;
pub const AUTH_TYPE_RMCPPLUS: u8 = 0x06;
const NEXT_HEADER: u8 = 0x07;

/// RMCP+ payload types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PayloadType {
    Ipmi,
    Sol,
    OpenSessionRequest,
    OpenSessionResponse,
    Rakp1,
    Rakp2,
    Rakp3,
    Rakp4,
    /// Anything else (not OEM explicit 0x02, which carries extra header bytes we reject).
    Other(u8),
}

impl PayloadType {
    pub fn to_u8(self) -> u8 {
        match self {
            Self::Ipmi => 0x00,
            Self::Sol => 0x01,
            Self::OpenSessionRequest => 0x10,
            Self::OpenSessionResponse => 0x11,
            Self::Rakp1 => 0x12,
            Self::Rakp2 => 0x13,
            Self::Rakp3 => 0x14,
            Self::Rakp4 => 0x15,
            Self::Other(v) => v & 0x3F,
        }
    }
    pub fn from_u8(v: u8) -> Self {
        match v & 0x3F {
            0x00 => Self::Ipmi,
            0x01 => Self::Sol,
            0x10 => Self::OpenSessionRequest,
            0x11 => Self::OpenSessionResponse,
            0x12 => Self::Rakp1,
            0x13 => Self::Rakp2,
            0x14 => Self::Rakp3,
            0x15 => Self::Rakp4,
            o => Self::Other(o),
        }
    }
}

/// An ASF message (presence ping 0x80 / pong 0x40) inside RMCP class 6.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AsfMessage {
    pub msg_type: u8,
    pub tag: u8,
    pub data: Vec<u8>,
}

impl AsfMessage {
    pub fn ping(tag: u8) -> Self {
        Self { msg_type: ASF_PING, tag, data: vec![] }
    }
    /// A pong advertising IPMI support (supported entities bit 7).
    pub fn pong(tag: u8) -> Self {
        let mut data = Vec::with_capacity(16);
        data.extend_from_slice(&ASF_IANA.to_be_bytes());
        data.extend_from_slice(&[0, 0, 0, 0, 0x81, 0x00, 0, 0, 0, 0, 0, 0]);
        Self { msg_type: ASF_PONG, tag, data }
    }
    /// Pong "supported entities" bit 7: the device speaks IPMI.
    pub fn pong_supports_ipmi(&self) -> bool {
        self.msg_type == ASF_PONG && self.data.get(8).is_some_and(|b| b & 0x80 != 0)
    }
}

/// IPMI 1.5 session (used session-less before RMCP+, auth type none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct V15Packet {
    pub auth_type: u8,
    pub seq: u32,
    pub session_id: u32,
    /// Present iff `auth_type != 0`.
    pub auth_code: Option<[u8; 16]>,
    /// An IPMI LAN message ([`super::message`]).
    pub message: Vec<u8>,
}

/// RMCP+ session packet. `payload` is always plaintext here; encryption and the
/// integrity trailer are applied/removed by [`encode`] / [`decode`] with the session keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct V20Packet {
    pub payload_type: PayloadType,
    pub encrypted: bool,
    pub authenticated: bool,
    pub session_id: u32,
    pub seq: u32,
    pub payload: Vec<u8>,
}

impl V20Packet {
    /// A session-less (session id 0) packet, as used for Open Session and RAKP.
    pub fn sessionless(payload_type: PayloadType, payload: Vec<u8>) -> Self {
        Self { payload_type, encrypted: false, authenticated: false, session_id: 0, seq: 0, payload }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Packet {
    Asf(AsfMessage),
    V15(V15Packet),
    V20(V20Packet),
}

/// Encode a datagram. `encrypted`/`authenticated` are honoured only when `keys` is
/// given (they are cleared otherwise); `iv` is the AES IV used when encrypting.
pub fn encode(packet: &Packet, keys: Option<&SessionKeys>, iv: [u8; 16]) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    match packet {
        Packet::Asf(a) => {
            out.extend_from_slice(&[RMCP_VERSION, 0, 0xFF, RMCP_CLASS_ASF]);
            out.extend_from_slice(&ASF_IANA.to_be_bytes());
            out.extend_from_slice(&[a.msg_type, a.tag, 0, a.data.len().min(255) as u8]);
            out.extend_from_slice(&a.data[..a.data.len().min(255)]);
        }
        Packet::V15(p) => {
            out.extend_from_slice(&[RMCP_VERSION, 0, 0xFF, RMCP_CLASS_IPMI]);
            let auth_type = if p.auth_code.is_some() { p.auth_type.max(1) } else { 0 };
            out.push(auth_type);
            out.extend_from_slice(&p.seq.to_le_bytes());
            out.extend_from_slice(&p.session_id.to_le_bytes());
            if let Some(code) = &p.auth_code {
                out.extend_from_slice(code);
            }
            let n = p.message.len().min(255);
            out.push(n as u8);
            out.extend_from_slice(&p.message[..n]);
        }
        Packet::V20(p) => {
            out.extend_from_slice(&[RMCP_VERSION, 0, 0xFF, RMCP_CLASS_IPMI]);
            let encrypted = p.encrypted && keys.is_some();
            let authenticated = p.authenticated && keys.is_some();
            let body = match (encrypted, keys) {
                (true, Some(k)) => k.encrypt(iv, &p.payload),
                _ => p.payload.clone(),
            };
            let body = &body[..body.len().min(u16::MAX as usize)];
            out.push(AUTH_TYPE_RMCPPLUS);
            out.push(
                p.payload_type.to_u8()
                    | if encrypted { 0x80 } else { 0 }
                    | if authenticated { 0x40 } else { 0 },
            );
            out.extend_from_slice(&p.session_id.to_le_bytes());
            out.extend_from_slice(&p.seq.to_le_bytes());
            out.extend_from_slice(&(body.len() as u16).to_le_bytes());
            out.extend_from_slice(body);
            if let (true, Some(k)) = (authenticated, keys) {
                // Pad so that AuthType..NextHeader is a multiple of 4 bytes.
                let signed_len = out.len() - 4 + 2;
                let pad = (4 - signed_len % 4) % 4;
                out.extend(std::iter::repeat_n(0xFF, pad));
                out.push(pad as u8);
                out.push(NEXT_HEADER);
                let code = k.auth_code(&out[4..]);
                out.extend_from_slice(&code);
            }
        }
    }
    out
}

/// The RMCP+ session id of a datagram, without verifying anything: lets a BMC pick the
/// session keys before calling [`decode`]. `None` for ASF and IPMI 1.5 packets.
pub fn peek_session_id(datagram: &[u8]) -> Option<u32> {
    if datagram.len() < 10 || datagram[3] & 0x7F != RMCP_CLASS_IPMI || datagram[4] != AUTH_TYPE_RMCPPLUS {
        return None;
    }
    Some(u32::from_le_bytes([datagram[6], datagram[7], datagram[8], datagram[9]]))
}

/// Decode a datagram; with `keys`, verify the integrity trailer and decrypt the payload.
pub fn decode(datagram: &[u8], keys: Option<&SessionKeys>) -> Result<Packet, DecodeError> {
    let mut r = Reader::new(datagram, "RMCP packet");
    let version = r.u8()?;
    if version != RMCP_VERSION {
        return Err(DecodeError::Invalid { what: "RMCP version", value: version.into() });
    }
    let _reserved = r.u8()?;
    let _seq = r.u8()?;
    let class = r.u8()? & 0x7F;
    match class {
        RMCP_CLASS_ASF => {
            let iana = u32::from_be_bytes(r.array()?);
            if iana != ASF_IANA {
                return Err(DecodeError::Invalid { what: "ASF IANA", value: iana });
            }
            let msg_type = r.u8()?;
            let tag = r.u8()?;
            let _ = r.u8()?;
            let len = r.u8()? as usize;
            let data = r.bytes(len)?.to_vec();
            Ok(Packet::Asf(AsfMessage { msg_type, tag, data }))
        }
        RMCP_CLASS_IPMI => {
            let auth_type = r.u8()?;
            if auth_type == AUTH_TYPE_RMCPPLUS {
                decode_v20(datagram, r, keys).map(Packet::V20)
            } else {
                let seq = r.u32le()?;
                let session_id = r.u32le()?;
                let auth_code = if auth_type != 0 { Some(r.array::<16>()?) } else { None };
                let len = r.u8()? as usize;
                let message = r.bytes(len)?.to_vec();
                Ok(Packet::V15(V15Packet { auth_type, seq, session_id, auth_code, message }))
            }
        }
        other => Err(DecodeError::Invalid { what: "RMCP class", value: other.into() }),
    }
}

fn decode_v20(
    datagram: &[u8],
    mut r: Reader<'_>,
    keys: Option<&SessionKeys>,
) -> Result<V20Packet, DecodeError> {
    let pt = r.u8()?;
    let encrypted = pt & 0x80 != 0;
    let authenticated = pt & 0x40 != 0;
    let payload_type = PayloadType::from_u8(pt);
    if payload_type == PayloadType::Other(0x02) {
        return Err(DecodeError::Invalid { what: "RMCP+ OEM explicit payload", value: 2 });
    }
    let session_id = r.u32le()?;
    let seq = r.u32le()?;
    let len = r.u16le()? as usize;
    let body = r.bytes(len)?;
    if authenticated {
        let k = keys.ok_or(DecodeError::NoKeys)?;
        let icv = k.suite.icv_len();
        // Trailer: pad (0-3), pad length, next header, AuthCode.
        let trailer = r.rest();
        if trailer.len() < 2 + icv {
            return Err(DecodeError::Truncated {
                what: "RMCP+ integrity trailer",
                need: 2 + icv,
                have: trailer.len(),
            });
        }
        let signed_end = datagram.len() - icv;
        let pad_len = datagram[signed_end - 2] as usize;
        if trailer.len() != pad_len + 2 + icv {
            return Err(DecodeError::Invalid { what: "RMCP+ integrity pad length", value: pad_len as u32 });
        }
        let expected = k.auth_code(&datagram[4..signed_end]);
        if !super::crypto::codes_equal(&expected, &datagram[signed_end..]) {
            return Err(DecodeError::Integrity);
        }
    }
    let payload = if encrypted { keys.ok_or(DecodeError::NoKeys)?.decrypt(body)? } else { body.to_vec() };
    Ok(V20Packet { payload_type, encrypted, authenticated, session_id, seq, payload })
}
