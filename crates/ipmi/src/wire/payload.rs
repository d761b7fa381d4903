//! Payload activation (App 0x48-0x4A), used to start and stop Serial-over-LAN.

use super::{Body, Command, DecodeError, Reader, app::Empty, netfn};

pub const PAYLOAD_SOL: u8 = 0x01;

/// Activate Payload aux byte 1 for SOL: encrypt (bit 7) + authenticate (bit 6); bits 5:4
/// zero = serial alerts fail while SOL is active (nothing else shares the port here).
pub const SOL_AUX_ENCRYPT_AUTH: u8 = 0xC0;

/// Activate Payload (App 0x48).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActivatePayload {
    pub payload_type: u8,
    pub instance: u8,
    pub aux: [u8; 4],
}
impl Body for ActivatePayload {
    fn encode(&self) -> Vec<u8> {
        let mut v = vec![self.payload_type & 0x3F, self.instance & 0x0F];
        v.extend_from_slice(&self.aux);
        v
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Activate Payload request");
        let payload_type = r.u8()? & 0x3F;
        let instance = r.u8()? & 0x0F;
        // Lenient: some consoles send fewer aux bytes.
        let mut aux = [0u8; 4];
        for a in aux.iter_mut() {
            *a = r.opt_u8().unwrap_or(0);
        }
        Ok(Self { payload_type, instance, aux })
    }
}
impl Command for ActivatePayload {
    const NETFN: u8 = netfn::APP;
    const CMD: u8 = 0x48;
    type Response = PayloadActivated;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PayloadActivated {
    pub aux: [u8; 4],
    /// Maximum payload size the BMC accepts (console -> BMC).
    pub inbound_size: u16,
    /// Maximum payload size the BMC sends.
    pub outbound_size: u16,
    /// UDP port for the payload (normally 623 = the session's port).
    pub port: u16,
    /// 0xFFFF = no VLAN.
    pub vlan: u16,
}
impl Body for PayloadActivated {
    fn encode(&self) -> Vec<u8> {
        let mut v = self.aux.to_vec();
        v.extend_from_slice(&self.inbound_size.to_le_bytes());
        v.extend_from_slice(&self.outbound_size.to_le_bytes());
        v.extend_from_slice(&self.port.to_le_bytes());
        v.extend_from_slice(&self.vlan.to_le_bytes());
        v
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Activate Payload response");
        let aux = r.array()?;
        let inbound_size = r.u16le()?;
        let outbound_size = r.u16le()?;
        let port = r.u16le().unwrap_or(623);
        let vlan = r.u16le().unwrap_or(0xFFFF);
        Ok(Self { aux, inbound_size, outbound_size, port, vlan })
    }
}

/// Deactivate Payload (App 0x49).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeactivatePayload {
    pub payload_type: u8,
    pub instance: u8,
}
impl Body for DeactivatePayload {
    fn encode(&self) -> Vec<u8> {
        vec![self.payload_type & 0x3F, self.instance & 0x0F, 0, 0, 0, 0]
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Deactivate Payload request");
        Ok(Self { payload_type: r.u8()? & 0x3F, instance: r.u8()? & 0x0F })
    }
}
impl Command for DeactivatePayload {
    const NETFN: u8 = netfn::APP;
    const CMD: u8 = 0x49;
    type Response = Empty;
}

/// Get Payload Activation Status (App 0x4A).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GetPayloadActivationStatus {
    pub payload_type: u8,
}
impl Body for GetPayloadActivationStatus {
    fn encode(&self) -> Vec<u8> {
        vec![self.payload_type & 0x3F]
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        Ok(Self { payload_type: Reader::new(b, "Get Payload Activation Status").u8()? & 0x3F })
    }
}
impl Command for GetPayloadActivationStatus {
    const NETFN: u8 = netfn::APP;
    const CMD: u8 = 0x4A;
    type Response = PayloadActivationStatus;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PayloadActivationStatus {
    /// Bits 3:0: number of instances the BMC supports.
    pub capacity: u8,
    /// Bit n-1 set: instance n active.
    pub active: u16,
}
impl PayloadActivationStatus {
    pub fn is_active(&self, instance: u8) -> bool {
        (1..=16).contains(&instance) && self.active & (1 << (instance - 1)) != 0
    }
}
impl Body for PayloadActivationStatus {
    fn encode(&self) -> Vec<u8> {
        let mut v = vec![self.capacity & 0x0F];
        v.extend_from_slice(&self.active.to_le_bytes());
        v
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Get Payload Activation Status response");
        let capacity = r.u8()? & 0x0F;
        let lo = r.opt_u8().unwrap_or(0);
        let hi = r.opt_u8().unwrap_or(0);
        Ok(Self { capacity, active: u16::from_le_bytes([lo, hi]) })
    }
}

/// Get Payload Instance Info (App 0x4B): which session holds a payload instance. Why: a console that finds
/// SOL "already active" learns whose session holds it, so a session a dead process of ours left can be
/// told from an operator's (only ours is ever deactivated without being asked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GetPayloadInstanceInfo {
    pub payload_type: u8,
    pub instance: u8,
}
impl Body for GetPayloadInstanceInfo {
    fn encode(&self) -> Vec<u8> {
        vec![self.payload_type & 0x3F, self.instance & 0x0F]
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Get Payload Instance Info request");
        Ok(Self { payload_type: r.u8()? & 0x3F, instance: r.u8()? & 0x0F })
    }
}
impl Command for GetPayloadInstanceInfo {
    const NETFN: u8 = netfn::APP;
    const CMD: u8 = 0x4B;
    type Response = PayloadInstanceInfo;
}

/// The answer to [`GetPayloadInstanceInfo`] (IPMI v2 §24.5): the holding session's id, 0 when the instance
/// is free, then eight bytes of payload-specific data (a port number for some OEM payloads; reserved for
/// SOL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PayloadInstanceInfo {
    pub session_id: u32,
    pub data: [u8; 8],
}
impl PayloadInstanceInfo {
    /// The session holding the instance, `None` when it is free.
    pub fn holder(&self) -> Option<u32> {
        (self.session_id != 0).then_some(self.session_id)
    }
}
impl Body for PayloadInstanceInfo {
    fn encode(&self) -> Vec<u8> {
        let mut v = self.session_id.to_le_bytes().to_vec();
        v.extend_from_slice(&self.data);
        v
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Get Payload Instance Info response");
        let session_id = r.u32le()?;
        // Lenient: the payload-specific bytes are reserved for SOL, and some BMCs send fewer.
        let mut data = [0u8; 8];
        for d in data.iter_mut() {
            *d = r.opt_u8().unwrap_or(0);
        }
        Ok(Self { session_id, data })
    }
}
