//! Application netfn commands: device id, channel authentication capabilities and
//! cipher suites, session privilege and Close Session.

use super::{Body, Command, DecodeError, Reader, netfn};

/// Declares a request without data bytes.
macro_rules! empty_request {
    ($(#[$m:meta])* $name:ident, $netfn:expr, $cmd:expr, $resp:ty) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct $name;
        impl $crate::wire::Body for $name {
            fn encode(&self) -> Vec<u8> {
                Vec::new()
            }
            fn decode(_: &[u8]) -> Result<Self, $crate::wire::DecodeError> {
                Ok(Self)
            }
        }
        impl $crate::wire::Command for $name {
            const NETFN: u8 = $netfn;
            const CMD: u8 = $cmd;
            type Response = $resp;
        }
    };
}
pub(crate) use empty_request;

/// A response without data bytes (completion code only). Extra bytes are ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Empty;
impl Body for Empty {
    fn encode(&self) -> Vec<u8> {
        Vec::new()
    }
    fn decode(_: &[u8]) -> Result<Self, DecodeError> {
        Ok(Self)
    }
}

pub(crate) fn u24le(r: &mut Reader<'_>) -> Result<u32, DecodeError> {
    let b: [u8; 3] = r.array()?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], 0]))
}

pub(crate) fn push_u24le(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_le_bytes()[..3]);
}

empty_request!(
    /// Get Device ID (App 0x01).
    GetDeviceId, netfn::APP, 0x01, DeviceId
);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceId {
    pub device_id: u8,
    /// Bit 7: provides device SDRs; bits 3:0 device revision.
    pub device_revision: u8,
    /// Bit 7: device busy (firmware update / self init); bits 6:0 major firmware revision.
    pub firmware_major: u8,
    /// BCD.
    pub firmware_minor: u8,
    /// BCD, 0x02 = IPMI 2.0, 0x51 = 1.5.
    pub ipmi_version: u8,
    pub additional_support: u8,
    /// IANA enterprise number (20 bits used).
    pub manufacturer_id: u32,
    pub product_id: u16,
    pub aux_firmware: Option<[u8; 4]>,
}

impl DeviceId {
    pub fn firmware_version(&self) -> String {
        format!("{}.{:02x}", self.firmware_major & 0x7F, self.firmware_minor)
    }
    pub fn ipmi_version_string(&self) -> String {
        format!("{}.{}", self.ipmi_version & 0x0F, self.ipmi_version >> 4)
    }
    pub fn device_available(&self) -> bool {
        self.firmware_major & 0x80 == 0
    }
}

impl Body for DeviceId {
    fn encode(&self) -> Vec<u8> {
        let mut v = vec![
            self.device_id,
            self.device_revision,
            self.firmware_major,
            self.firmware_minor,
            self.ipmi_version,
            self.additional_support,
        ];
        push_u24le(&mut v, self.manufacturer_id);
        v.extend_from_slice(&self.product_id.to_le_bytes());
        if let Some(a) = self.aux_firmware {
            v.extend_from_slice(&a);
        }
        v
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Get Device ID response");
        Ok(Self {
            device_id: r.u8()?,
            device_revision: r.u8()?,
            firmware_major: r.u8()?,
            firmware_minor: r.u8()?,
            ipmi_version: r.u8()?,
            additional_support: r.u8()?,
            manufacturer_id: u24le(&mut r)?,
            product_id: r.u16le()?,
            aux_firmware: r.array().ok(),
        })
    }
}

/// Get Channel Authentication Capabilities (App 0x38), sent session-less first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GetChannelAuthCaps {
    /// Bit 7: ask for IPMI 2.0 extended data. 0x0E = this channel.
    pub channel: u8,
    pub privilege: u8,
}

impl Body for GetChannelAuthCaps {
    fn encode(&self) -> Vec<u8> {
        vec![self.channel, self.privilege]
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Get Channel Auth Caps request");
        Ok(Self { channel: r.u8()?, privilege: r.u8()? })
    }
}
impl Command for GetChannelAuthCaps {
    const NETFN: u8 = netfn::APP;
    const CMD: u8 = 0x38;
    type Response = ChannelAuthCaps;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChannelAuthCaps {
    pub channel: u8,
    /// Bit 7: IPMI 2.0 extended capabilities; bits 5:0 IPMI 1.5 auth types.
    pub auth_types: u8,
    /// Bit 5 Kg set, bit 4 per-message auth disabled, bit 3 user-level auth disabled,
    /// bit 2 non-null user names, bit 1 null user names, bit 0 anonymous login.
    pub status: u8,
    /// Bit 1: IPMI 2.0 connections supported; bit 0: IPMI 1.5.
    pub extended: u8,
    pub oem_id: u32,
    pub oem_aux: u8,
}

impl ChannelAuthCaps {
    pub fn supports_v2(&self) -> bool {
        self.auth_types & 0x80 != 0 && self.extended & 0x02 != 0
    }
    pub fn anonymous_login(&self) -> bool {
        self.status & 0x01 != 0
    }
    pub fn null_usernames(&self) -> bool {
        self.status & 0x02 != 0
    }
    pub fn kg_set(&self) -> bool {
        self.status & 0x20 != 0
    }
}

impl Body for ChannelAuthCaps {
    fn encode(&self) -> Vec<u8> {
        let mut v = vec![self.channel, self.auth_types, self.status, self.extended];
        push_u24le(&mut v, self.oem_id);
        v.push(self.oem_aux);
        v
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Get Channel Auth Caps response");
        let channel = r.u8()?;
        let auth_types = r.u8()?;
        let status = r.u8()?;
        let extended = r.u8()?;
        // Some BMCs stop here; the OEM fields are informational.
        let oem_id = u24le(&mut r).unwrap_or(0);
        let oem_aux = r.opt_u8().unwrap_or(0);
        Ok(Self { channel, auth_types, status, extended, oem_id, oem_aux })
    }
}

/// Get Channel Cipher Suites (App 0x54): 16 bytes of records per call, by list index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GetChannelCipherSuites {
    pub channel: u8,
    pub payload_type: u8,
    /// Bit 7: list algorithms by cipher suite; bits 5:0 list index.
    pub index: u8,
}

impl Body for GetChannelCipherSuites {
    fn encode(&self) -> Vec<u8> {
        vec![self.channel, self.payload_type, self.index]
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Get Channel Cipher Suites request");
        Ok(Self { channel: r.u8()?, payload_type: r.u8()?, index: r.u8()? })
    }
}
impl Command for GetChannelCipherSuites {
    const NETFN: u8 = netfn::APP;
    const CMD: u8 = 0x54;
    type Response = ChannelCipherSuites;
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelCipherSuites {
    pub channel: u8,
    /// Up to 16 bytes of the concatenated cipher suite records.
    pub data: Vec<u8>,
}

impl Body for ChannelCipherSuites {
    fn encode(&self) -> Vec<u8> {
        let mut v = vec![self.channel];
        v.extend_from_slice(&self.data);
        v
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Get Channel Cipher Suites response");
        Ok(Self { channel: r.u8()?, data: r.rest().to_vec() })
    }
}

/// One cipher suite record: id and algorithm numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CipherSuiteRecord {
    pub id: u8,
    pub auth: Vec<u8>,
    pub integrity: Vec<u8>,
    pub confidentiality: Vec<u8>,
}

/// Encode records the standard way (0xC0 start byte, 0x00/0x40/0x80 algorithm tags).
pub fn encode_cipher_suite_records(records: &[CipherSuiteRecord]) -> Vec<u8> {
    let mut v = Vec::new();
    for r in records {
        v.push(0xC0);
        v.push(r.id);
        v.extend(r.auth.iter().map(|a| a & 0x3F));
        v.extend(r.integrity.iter().map(|a| 0x40 | (a & 0x3F)));
        v.extend(r.confidentiality.iter().map(|a| 0x80 | (a & 0x3F)));
    }
    v
}

/// Parse the concatenated record data of all Get Channel Cipher Suites calls.
/// Lenient: bytes before the first start-of-record and unknown tags are skipped.
pub fn parse_cipher_suite_records(data: &[u8]) -> Vec<CipherSuiteRecord> {
    let mut out: Vec<CipherSuiteRecord> = Vec::new();
    let mut i = 0;
    while i < data.len() {
        match data[i] {
            0xC0 if i + 1 < data.len() => {
                out.push(CipherSuiteRecord {
                    id: data[i + 1],
                    auth: vec![],
                    integrity: vec![],
                    confidentiality: vec![],
                });
                i += 2;
            }
            // OEM record: start, id, 3 bytes IANA.
            0xC1 if i + 1 < data.len() => {
                out.push(CipherSuiteRecord {
                    id: data[i + 1],
                    auth: vec![],
                    integrity: vec![],
                    confidentiality: vec![],
                });
                i += 5;
            }
            b => {
                if let Some(cur) = out.last_mut() {
                    match b >> 6 {
                        0 => cur.auth.push(b & 0x3F),
                        1 => cur.integrity.push(b & 0x3F),
                        2 => cur.confidentiality.push(b & 0x3F),
                        _ => {}
                    }
                }
                i += 1;
            }
        }
    }
    out
}

/// Set Session Privilege Level (App 0x3B).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetSessionPrivilege {
    pub privilege: u8,
}
impl Body for SetSessionPrivilege {
    fn encode(&self) -> Vec<u8> {
        vec![self.privilege]
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        Ok(Self { privilege: Reader::new(b, "Set Session Privilege Level").u8()? })
    }
}
impl Command for SetSessionPrivilege {
    const NETFN: u8 = netfn::APP;
    const CMD: u8 = 0x3B;
    type Response = SessionPrivilege;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionPrivilege {
    pub privilege: u8,
}
impl Body for SessionPrivilege {
    fn encode(&self) -> Vec<u8> {
        vec![self.privilege]
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        Ok(Self { privilege: Reader::new(b, "Set Session Privilege Level response").u8()? })
    }
}

/// Close Session (App 0x3C).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CloseSession {
    pub session_id: u32,
}
impl Body for CloseSession {
    fn encode(&self) -> Vec<u8> {
        self.session_id.to_le_bytes().to_vec()
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        Ok(Self { session_id: Reader::new(b, "Close Session").u32le()? })
    }
}
impl Command for CloseSession {
    const NETFN: u8 = netfn::APP;
    const CMD: u8 = 0x3C;
    type Response = Empty;
}

/// What a BMC's answer to Close Session for a session id says about that session (IPMI v2 §22.19: closing a
/// session other than the requester's own needs ADMINISTRATOR privilege on most BMCs; OpenIPMI's lanserv
/// checks exactly that).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseOutcome {
    /// Closed now.
    Closed,
    /// No such session (0x87 invalid session id, 0x88 invalid session handle): it is gone already (timed
    /// out, closed by someone else), so nothing is left to free.
    Gone,
    /// The BMC refused (0xD4 insufficient privilege, 0xC1 not supported, ...): the session lives on until the
    /// BMC times it out.
    Refused(u8),
}

impl CloseSession {
    /// The completion code of a Close Session answer, read as what became of the session.
    pub fn outcome(completion: u8) -> CloseOutcome {
        match completion {
            super::cc::OK => CloseOutcome::Closed,
            0x87 | 0x88 => CloseOutcome::Gone,
            code => CloseOutcome::Refused(code),
        }
    }
}
