//! Pure IPMI 2.0 wire codecs: no sockets, no clocks, no randomness.
//!
//! Everything the client and the simulator put on or take off the wire goes through
//! here, so both sides share one definition of every byte (the simulator never links
//! the client). Decoders are lenient where the spec allows optional trailing bytes and
//! return [`DecodeError`] instead of panicking on anything malformed.

pub mod app;
pub mod boot;
pub mod chassis;
pub mod crypto;
pub mod fru;
pub mod message;
pub mod packet;
pub mod payload;
pub mod rakp;
pub mod sdr;
pub mod sel;
pub mod sensor;
pub mod sol;
pub mod user;

mod reader;

pub use reader::Reader;

/// Why a byte string could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("{what} truncated: need {need} bytes, have {have}")]
    Truncated { what: &'static str, need: usize, have: usize },
    #[error("{what} has unexpected value {value:#x}")]
    Invalid { what: &'static str, value: u32 },
    #[error("{what} checksum mismatch")]
    Checksum { what: &'static str },
    #[error("integrity check (HMAC) of the packet failed")]
    Integrity,
    #[error("packet is authenticated or encrypted but no session keys are known")]
    NoKeys,
    #[error("confidentiality trailer (AES-CBC padding) is malformed")]
    Decrypt,
}

/// A command body codec: the request data bytes after `cmd` (or the response data bytes
/// after the completion code), for one `(netfn, cmd)`.
pub trait Body: Sized {
    fn encode(&self) -> Vec<u8>;
    fn decode(data: &[u8]) -> Result<Self, DecodeError>;
}

/// A request whose response type is known; lets the client be generic over commands.
pub trait Command: Body {
    const NETFN: u8;
    const CMD: u8;
    type Response: Body;
}

/// Network function codes (requests; responses are `netfn | 1`).
pub mod netfn {
    pub const CHASSIS: u8 = 0x00;
    pub const SENSOR: u8 = 0x04;
    pub const APP: u8 = 0x06;
    pub const STORAGE: u8 = 0x0A;
    pub const TRANSPORT: u8 = 0x0C;
}

/// Completion codes Lifeline reacts to (others are reported verbatim).
pub mod cc {
    pub const OK: u8 = 0x00;
    pub const NODE_BUSY: u8 = 0xC0;
    pub const INVALID_COMMAND: u8 = 0xC1;
    pub const TIMEOUT: u8 = 0xC3;
    pub const RESERVATION_CANCELLED: u8 = 0xC5;
    pub const REQUEST_DATA_LENGTH_INVALID: u8 = 0xC7;
    pub const PARAMETER_OUT_OF_RANGE: u8 = 0xC9;
    pub const CANNOT_RETURN_REQUESTED_BYTES: u8 = 0xCA;
    pub const NOT_PRESENT: u8 = 0xCB;
    pub const INVALID_DATA_FIELD: u8 = 0xCC;
    pub const DUPLICATE_REQUEST: u8 = 0xCF;
    pub const INSUFFICIENT_PRIVILEGE: u8 = 0xD4;
    pub const NOT_SUPPORTED_IN_STATE: u8 = 0xD5;
    pub const UNSPECIFIED: u8 = 0xFF;
    /// Activate Payload: payload already active on another session.
    pub const PAYLOAD_ALREADY_ACTIVE: u8 = 0x80;
    /// Activate Payload: payload type disabled. Deactivate Payload: already deactivated.
    pub const PAYLOAD_DISABLED: u8 = 0x81;
    /// Activate Payload: payload activation limit reached.
    pub const PAYLOAD_LIMIT: u8 = 0x82;

    /// Human description, using ipmi-rs's table for the generic codes.
    pub fn describe(code: u8) -> String {
        match ipmi_rs::connection::CompletionErrorCode::try_from(code) {
            Ok(c) => format!("{c:?}"),
            Err(()) => "Ok".to_string(),
        }
    }
}

/// Session privilege levels (IPMI 2.0 table 6-?; `0` means "highest the user may have").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Privilege {
    Callback = 1,
    User = 2,
    Operator = 3,
    Administrator = 4,
    Oem = 5,
}

impl Privilege {
    pub fn from_u8(v: u8) -> Option<Self> {
        Some(match v & 0x0F {
            1 => Self::Callback,
            2 => Self::User,
            3 => Self::Operator,
            4 => Self::Administrator,
            5 => Self::Oem,
            _ => return None,
        })
    }
}

impl std::fmt::Display for Privilege {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Callback => "CALLBACK",
            Self::User => "USER",
            Self::Operator => "OPERATOR",
            Self::Administrator => "ADMINISTRATOR",
            Self::Oem => "OEM",
        })
    }
}
