//! RMCP+ session establishment messages: Open Session Request/Response and RAKP 1-4
//! (payload types 0x10-0x15). The maths is in [`super::crypto::RakpParams`].

use super::{DecodeError, Reader};

/// RMCP+ / RAKP status codes (IPMI 2.0 table 13-15).
pub mod status {
    pub const OK: u8 = 0x00;
    pub const NO_RESOURCES: u8 = 0x01;
    pub const INVALID_SESSION_ID: u8 = 0x02;
    pub const INVALID_PAYLOAD_TYPE: u8 = 0x03;
    pub const INVALID_AUTH_ALG: u8 = 0x04;
    pub const INVALID_INTEGRITY_ALG: u8 = 0x05;
    pub const INACTIVE_SESSION: u8 = 0x08;
    pub const INVALID_ROLE: u8 = 0x09;
    pub const UNAUTHORIZED_ROLE: u8 = 0x0A;
    pub const NO_RESOURCES_FOR_ROLE: u8 = 0x0B;
    pub const INVALID_NAME_LENGTH: u8 = 0x0C;
    pub const UNAUTHORIZED_NAME: u8 = 0x0D;
    pub const UNAUTHORIZED_GUID: u8 = 0x0E;
    pub const INVALID_INTEGRITY_CHECK: u8 = 0x0F;
    pub const INVALID_CONF_ALG: u8 = 0x10;
    pub const NO_CIPHER_SUITE_MATCH: u8 = 0x11;
    pub const ILLEGAL_PARAMETER: u8 = 0x12;

    pub fn describe(code: u8) -> &'static str {
        match code {
            OK => "no errors",
            NO_RESOURCES => "insufficient resources to create a session",
            INVALID_SESSION_ID => "invalid session ID",
            INVALID_PAYLOAD_TYPE => "invalid payload type",
            INVALID_AUTH_ALG => "invalid authentication algorithm",
            INVALID_INTEGRITY_ALG => "invalid integrity algorithm",
            0x06 => "no matching authentication payload",
            0x07 => "no matching integrity payload",
            INACTIVE_SESSION => "inactive session ID",
            INVALID_ROLE => "invalid role",
            UNAUTHORIZED_ROLE => "unauthorized role or privilege level requested",
            NO_RESOURCES_FOR_ROLE => "insufficient resources to create a session at the requested role",
            INVALID_NAME_LENGTH => "invalid name length",
            UNAUTHORIZED_NAME => "unauthorized name",
            UNAUTHORIZED_GUID => "unauthorized GUID",
            INVALID_INTEGRITY_CHECK => "invalid integrity check value",
            INVALID_CONF_ALG => "invalid confidentiality algorithm",
            NO_CIPHER_SUITE_MATCH => "no cipher suite match with proposed security algorithms",
            ILLEGAL_PARAMETER => "illegal or unrecognized parameter",
            _ => "unknown status",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenSessionRequest {
    pub tag: u8,
    /// Requested maximum privilege (0 = highest matching; ipmi_sim needs it explicit).
    pub max_privilege: u8,
    pub console_session_id: u32,
    /// (authentication, integrity, confidentiality) algorithm numbers.
    pub algorithms: (u8, u8, u8),
}

fn alg_record(kind: u8, alg: u8) -> [u8; 8] {
    [kind, 0, 0, 8, alg & 0x3F, 0, 0, 0]
}

fn read_alg(r: &mut Reader<'_>) -> Result<u8, DecodeError> {
    let rec = r.bytes(8)?;
    Ok(rec[4] & 0x3F)
}

impl OpenSessionRequest {
    pub fn encode(&self) -> Vec<u8> {
        let mut v = vec![self.tag, self.max_privilege & 0x0F, 0, 0];
        v.extend_from_slice(&self.console_session_id.to_le_bytes());
        v.extend_from_slice(&alg_record(0, self.algorithms.0));
        v.extend_from_slice(&alg_record(1, self.algorithms.1));
        v.extend_from_slice(&alg_record(2, self.algorithms.2));
        v
    }
    pub fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Open Session Request");
        let tag = r.u8()?;
        let max_privilege = r.u8()? & 0x0F;
        r.bytes(2)?;
        let console_session_id = r.u32le()?;
        let algorithms = (read_alg(&mut r)?, read_alg(&mut r)?, read_alg(&mut r)?);
        Ok(Self { tag, max_privilege, console_session_id, algorithms })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenSessionResponse {
    pub tag: u8,
    pub status: u8,
    pub max_privilege: u8,
    pub console_session_id: u32,
    /// Zero when the BMC refused the session.
    pub bmc_session_id: u32,
    /// `None` on an error response (which may stop after the console session id).
    pub algorithms: Option<(u8, u8, u8)>,
}

impl OpenSessionResponse {
    pub fn encode(&self) -> Vec<u8> {
        let mut v = vec![self.tag, self.status, self.max_privilege & 0x0F, 0];
        v.extend_from_slice(&self.console_session_id.to_le_bytes());
        if let Some((a, i, c)) = self.algorithms {
            v.extend_from_slice(&self.bmc_session_id.to_le_bytes());
            v.extend_from_slice(&alg_record(0, a));
            v.extend_from_slice(&alg_record(1, i));
            v.extend_from_slice(&alg_record(2, c));
        }
        v
    }
    pub fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Open Session Response");
        let tag = r.u8()?;
        let status = r.u8()?;
        let max_privilege = r.u8()? & 0x0F;
        r.u8()?;
        let console_session_id = r.u32le()?;
        if r.remaining() < 28 {
            if status == status::OK {
                return Err(DecodeError::Truncated {
                    what: "Open Session Response",
                    need: 36,
                    have: b.len(),
                });
            }
            return Ok(Self {
                tag,
                status,
                max_privilege,
                console_session_id,
                bmc_session_id: 0,
                algorithms: None,
            });
        }
        let bmc_session_id = r.u32le()?;
        let algorithms = Some((read_alg(&mut r)?, read_alg(&mut r)?, read_alg(&mut r)?));
        Ok(Self { tag, status, max_privilege, console_session_id, bmc_session_id, algorithms })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rakp1 {
    pub tag: u8,
    pub bmc_session_id: u32,
    pub console_random: [u8; 16],
    /// Requested privilege (bits 3:0) and name-only lookup (bit 4).
    pub role: u8,
    /// At most 16 bytes.
    pub username: Vec<u8>,
}

impl Rakp1 {
    pub fn encode(&self) -> Vec<u8> {
        let mut v = vec![self.tag, 0, 0, 0];
        v.extend_from_slice(&self.bmc_session_id.to_le_bytes());
        v.extend_from_slice(&self.console_random);
        let n = self.username.len().min(16);
        v.extend_from_slice(&[self.role, 0, 0, n as u8]);
        v.extend_from_slice(&self.username[..n]);
        v
    }
    pub fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "RAKP1");
        let tag = r.u8()?;
        r.bytes(3)?;
        let bmc_session_id = r.u32le()?;
        let console_random = r.array()?;
        let role = r.u8()?;
        r.bytes(2)?;
        let n = r.u8()? as usize;
        if n > 16 {
            return Err(DecodeError::Invalid { what: "RAKP1 user name length", value: n as u32 });
        }
        let username = r.bytes(n)?.to_vec();
        Ok(Self { tag, bmc_session_id, console_random, role, username })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rakp2 {
    pub tag: u8,
    pub status: u8,
    pub console_session_id: u32,
    pub bmc_random: [u8; 16],
    pub bmc_guid: [u8; 16],
    /// Key exchange authentication code (empty on error).
    pub auth_code: Vec<u8>,
}

impl Rakp2 {
    pub fn encode(&self) -> Vec<u8> {
        let mut v = vec![self.tag, self.status, 0, 0];
        v.extend_from_slice(&self.console_session_id.to_le_bytes());
        if self.status == status::OK {
            v.extend_from_slice(&self.bmc_random);
            v.extend_from_slice(&self.bmc_guid);
            v.extend_from_slice(&self.auth_code);
        }
        v
    }
    pub fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "RAKP2");
        let tag = r.u8()?;
        let status = r.u8()?;
        r.bytes(2)?;
        let console_session_id = r.u32le()?;
        if status != status::OK {
            return Ok(Self {
                tag,
                status,
                console_session_id,
                bmc_random: [0; 16],
                bmc_guid: [0; 16],
                auth_code: vec![],
            });
        }
        let bmc_random = r.array()?;
        let bmc_guid = r.array()?;
        let auth_code = r.rest().to_vec();
        Ok(Self { tag, status, console_session_id, bmc_random, bmc_guid, auth_code })
    }
}

/// RAKP3 (console -> BMC) and RAKP4 (BMC -> console) share one layout: tag, status,
/// 2 reserved, a session id (the peer's), then an authentication code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rakp34 {
    pub tag: u8,
    pub status: u8,
    /// RAKP3: the BMC's session id. RAKP4: the console's session id.
    pub session_id: u32,
    pub auth_code: Vec<u8>,
}

impl Rakp34 {
    pub fn encode(&self) -> Vec<u8> {
        let mut v = vec![self.tag, self.status, 0, 0];
        v.extend_from_slice(&self.session_id.to_le_bytes());
        v.extend_from_slice(&self.auth_code);
        v
    }
    pub fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "RAKP3/4");
        let tag = r.u8()?;
        let status = r.u8()?;
        r.bytes(2)?;
        let session_id = r.u32le()?;
        let auth_code = r.rest().to_vec();
        Ok(Self { tag, status, session_id, auth_code })
    }
}
