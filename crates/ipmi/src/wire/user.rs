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

/// Set User Name (App 0x45): the name NUL padded to 16 bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetUserName {
    pub user_id: u8,
    pub name: String,
}
impl Body for SetUserName {
    fn encode(&self) -> Vec<u8> {
        let mut v = vec![self.user_id & 0x3F];
        v.extend(UserName { name: self.name.clone() }.encode());
        v
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Set User Name request");
        let user_id = r.u8()? & 0x3F;
        let name = UserName::decode(r.bytes(16)?)?.name;
        Ok(Self { user_id, name })
    }
}
impl Command for SetUserName {
    const NETFN: u8 = netfn::APP;
    const CMD: u8 = 0x45;
    type Response = super::app::Empty;
}

/// Set User Password operation (byte 2, bits 1:0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PasswordOp {
    Disable,
    Enable,
    Set,
    /// Completion code 0x80 when the password does not match, 0x81 on a wrong stored size.
    Test,
}
impl PasswordOp {
    fn code(self) -> u8 {
        match self {
            PasswordOp::Disable => 0,
            PasswordOp::Enable => 1,
            PasswordOp::Set => 2,
            PasswordOp::Test => 3,
        }
    }
    fn from_code(c: u8) -> Self {
        match c & 0x03 {
            0 => PasswordOp::Disable,
            1 => PasswordOp::Enable,
            2 => PasswordOp::Set,
            _ => PasswordOp::Test,
        }
    }
}

/// Set User Password (App 0x47): enable/disable a user, set or test its password. Passwords longer than
/// 16 bytes use the IPMI 2.0 20-byte form (bit 7 of byte 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetUserPassword {
    pub user_id: u8,
    pub op: PasswordOp,
    /// Only sent for `Set` and `Test`; NUL padded on the wire.
    pub password: Vec<u8>,
    pub twenty_bytes: bool,
}
/// Completion code of a Test that did not match.
pub const CC_PASSWORD_MISMATCH: u8 = 0x80;
/// Completion code of a Test against a password stored in the other size.
pub const CC_PASSWORD_SIZE: u8 = 0x81;

impl SetUserPassword {
    pub fn new(user_id: u8, op: PasswordOp, password: &[u8]) -> Self {
        SetUserPassword { user_id, op, password: password.to_vec(), twenty_bytes: password.len() > 16 }
    }
}
impl Body for SetUserPassword {
    fn encode(&self) -> Vec<u8> {
        let flag = if self.twenty_bytes { 0x80 } else { 0 };
        let mut v = vec![flag | (self.user_id & 0x3F), self.op.code()];
        if matches!(self.op, PasswordOp::Set | PasswordOp::Test) {
            let len = if self.twenty_bytes { 20 } else { 16 };
            let mut p: Vec<u8> = self.password.iter().copied().take(len).collect();
            p.resize(len, 0);
            v.extend(p);
        }
        v
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Set User Password request");
        let b1 = r.u8()?;
        let op = PasswordOp::from_code(r.u8()?);
        let twenty_bytes = b1 & 0x80 != 0;
        let password = if matches!(op, PasswordOp::Set | PasswordOp::Test) {
            let raw = r.bytes(if twenty_bytes { 20 } else { 16 })?;
            raw.iter().copied().take_while(|c| *c != 0).collect()
        } else {
            Vec::new()
        };
        Ok(Self { user_id: b1 & 0x3F, op, password, twenty_bytes })
    }
}
impl Command for SetUserPassword {
    const NETFN: u8 = netfn::APP;
    const CMD: u8 = 0x47;
    type Response = super::app::Empty;
}

/// Set User Access (App 0x43): privilege limit and access bits of one user on one channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetUserAccess {
    pub channel: u8,
    pub user_id: u8,
    /// 1 callback, 2 user, 3 operator, 4 administrator, 5 OEM, 0x0F no access.
    pub privilege: u8,
    pub ipmi_messaging: bool,
    pub link_auth: bool,
    /// Refuse callin (bit 6 set: callback only).
    pub callback_only: bool,
}
impl Body for SetUserAccess {
    fn encode(&self) -> Vec<u8> {
        // Bit 7: change the access bits in this request.
        let mut b1 = 0x80 | (self.channel & 0x0F);
        if self.callback_only {
            b1 |= 0x40;
        }
        if self.link_auth {
            b1 |= 0x20;
        }
        if self.ipmi_messaging {
            b1 |= 0x10;
        }
        vec![b1, self.user_id & 0x3F, self.privilege & 0x0F]
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Set User Access request");
        let b1 = r.u8()?;
        let user_id = r.u8()? & 0x3F;
        let privilege = r.u8()? & 0x0F;
        Ok(Self {
            channel: b1 & 0x0F,
            user_id,
            privilege,
            ipmi_messaging: b1 & 0x10 != 0,
            link_auth: b1 & 0x20 != 0,
            callback_only: b1 & 0x40 != 0,
        })
    }
}
impl Command for SetUserAccess {
    const NETFN: u8 = netfn::APP;
    const CMD: u8 = 0x43;
    type Response = super::app::Empty;
}
