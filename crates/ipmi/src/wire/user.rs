//! User list: Get User Access and Get User Name.

use super::{Body, Command, DecodeError, Reader, netfn};

/// Get User Access (App 0x44).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GetUserAccess {
    pub channel: u8,
    pub user_id: u8,
}
impl Body for GetUserAccess {
    fn encode(&self) -> Vec<u8> {
        vec![self.channel & 0x0F, self.user_id & 0x3F]
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Get User Access request");
        Ok(Self { channel: r.u8()? & 0x0F, user_id: r.u8()? & 0x3F })
    }
}
impl Command for GetUserAccess {
    const NETFN: u8 = netfn::APP;
    const CMD: u8 = 0x44;
    type Response = UserAccess;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserAccess {
    /// Bits 5:0.
    pub max_users: u8,
    /// Bits 7:6 user id enable status, 5:0 count of enabled user ids.
    pub enabled: u8,
    /// Bits 5:0 count of fixed names.
    pub fixed_names: u8,
    /// Bit 6 callback only, 5 link auth, 4 IPMI messaging, 3:0 channel privilege limit.
    pub access: u8,
}
impl UserAccess {
    pub fn privilege(&self) -> u8 {
        self.access & 0x0F
    }
    pub fn ipmi_messaging(&self) -> bool {
        self.access & 0x10 != 0
    }
    pub fn link_auth(&self) -> bool {
        self.access & 0x20 != 0
    }
    pub fn callin(&self) -> bool {
        self.access & 0x40 == 0
    }
}
impl Body for UserAccess {
    fn encode(&self) -> Vec<u8> {
        vec![self.max_users, self.enabled, self.fixed_names, self.access]
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Get User Access response");
        Ok(Self { max_users: r.u8()?, enabled: r.u8()?, fixed_names: r.u8()?, access: r.u8()? })
    }
}

/// Get User Name (App 0x46).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GetUserName {
    pub user_id: u8,
}
impl Body for GetUserName {
    fn encode(&self) -> Vec<u8> {
        vec![self.user_id & 0x3F]
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        Ok(Self { user_id: Reader::new(b, "Get User Name request").u8()? & 0x3F })
    }
}
impl Command for GetUserName {
    const NETFN: u8 = netfn::APP;
    const CMD: u8 = 0x46;
    type Response = UserName;
}

/// A user name, NUL padded to 16 bytes on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserName {
    pub name: String,
}
impl Body for UserName {
    fn encode(&self) -> Vec<u8> {
        // One byte per character, the inverse of `decode` (which reads the bytes as Latin-1): UTF-8 here
        // would turn a BMC's `È` into `Ã\u{88}` on a round trip (found by the `decoders` fuzz target).
        let mut v: Vec<u8> = self.name.chars().map(|c| u8::try_from(c).unwrap_or(b'?')).take(16).collect();
        v.resize(16, 0);
        v
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        // Lenient: accept short answers; stop at the first NUL; bytes are Latin-1 (the spec says ASCII).
        let name = b.iter().take(16).take_while(|c| **c != 0).map(|c| *c as char).collect();
        Ok(Self { name })
    }
}
