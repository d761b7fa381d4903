//! IPMI LAN message framing (IPMB-style addresses, two's complement checksums), the
//! payload of RMCP+ type 0 and of IPMI 1.5 sessions.

use super::{DecodeError, Reader};

/// Responder address of the BMC.
pub const BMC_ADDR: u8 = 0x20;
/// Requester address of remote console software (software id 0x40 << 1 | 1).
pub const CONSOLE_ADDR: u8 = 0x81;

pub fn checksum(bytes: &[u8]) -> u8 {
    bytes.iter().fold(0u8, |a, b| a.wrapping_add(*b)).wrapping_neg()
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub rs_addr: u8,
    /// Request network function (even; 6 bits).
    pub netfn: u8,
    pub rs_lun: u8,
    pub rq_addr: u8,
    /// Requester sequence (6 bits): matches a response to its request.
    pub rq_seq: u8,
    pub rq_lun: u8,
    pub cmd: u8,
    pub data: Vec<u8>,
}

impl Request {
    pub fn new(netfn: u8, cmd: u8, rq_seq: u8, data: Vec<u8>) -> Self {
        Self { rs_addr: BMC_ADDR, netfn, rs_lun: 0, rq_addr: CONSOLE_ADDR, rq_seq, rq_lun: 0, cmd, data }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(7 + self.data.len());
        v.push(self.rs_addr);
        v.push((self.netfn << 2) | (self.rs_lun & 3));
        v.push(checksum(&v[0..2]));
        v.push(self.rq_addr);
        v.push((self.rq_seq << 2) | (self.rq_lun & 3));
        v.push(self.cmd);
        v.extend_from_slice(&self.data);
        v.push(checksum(&v[3..]));
        v
    }

    pub fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let (h, body) = split_checked(b, "IPMI request")?;
        Ok(Self {
            rs_addr: h[0],
            netfn: h[1] >> 2,
            rs_lun: h[1] & 3,
            rq_addr: body[0],
            rq_seq: body[1] >> 2,
            rq_lun: body[1] & 3,
            cmd: body[2],
            data: body[3..].to_vec(),
        })
    }

    /// The response a BMC sends for this request.
    pub fn respond(&self, completion: u8, data: Vec<u8>) -> Response {
        Response {
            rq_addr: self.rq_addr,
            netfn: self.netfn | 1,
            rq_lun: self.rq_lun,
            rs_addr: self.rs_addr,
            rq_seq: self.rq_seq,
            rs_lun: self.rs_lun,
            cmd: self.cmd,
            completion,
            data,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub rq_addr: u8,
    /// Response network function (odd).
    pub netfn: u8,
    pub rq_lun: u8,
    pub rs_addr: u8,
    pub rq_seq: u8,
    pub rs_lun: u8,
    pub cmd: u8,
    pub completion: u8,
    pub data: Vec<u8>,
}

impl Response {
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(8 + self.data.len());
        v.push(self.rq_addr);
        v.push((self.netfn << 2) | (self.rq_lun & 3));
        v.push(checksum(&v[0..2]));
        v.push(self.rs_addr);
        v.push((self.rq_seq << 2) | (self.rs_lun & 3));
        v.push(self.cmd);
        v.push(self.completion);
        v.extend_from_slice(&self.data);
        v.push(checksum(&v[3..]));
        v
    }

    pub fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let (h, body) = split_checked(b, "IPMI response")?;
        if body.len() < 4 {
            return Err(DecodeError::Truncated {
                what: "IPMI response completion code",
                need: 8,
                have: b.len(),
            });
        }
        Ok(Self {
            rq_addr: h[0],
            netfn: h[1] >> 2,
            rq_lun: h[1] & 3,
            rs_addr: body[0],
            rq_seq: body[1] >> 2,
            rs_lun: body[1] & 3,
            cmd: body[2],
            completion: body[3],
            data: body[4..].to_vec(),
        })
    }
}

/// Split into the 2-byte connection header and the body (without the final checksum),
/// verifying both checksums.
fn split_checked<'a>(b: &'a [u8], what: &'static str) -> Result<(&'a [u8], &'a [u8]), DecodeError> {
    let mut r = Reader::new(b, what);
    let h = r.bytes(2)?;
    let c1 = r.u8()?;
    if checksum(h) != c1 {
        return Err(DecodeError::Checksum { what: "IPMI message header" });
    }
    let rest = r.rest();
    if rest.len() < 4 {
        return Err(DecodeError::Truncated { what, need: 7, have: b.len() });
    }
    let (body, c2) = rest.split_at(rest.len() - 1);
    if checksum(body) != c2[0] {
        return Err(DecodeError::Checksum { what: "IPMI message body" });
    }
    Ok((h, body))
}
