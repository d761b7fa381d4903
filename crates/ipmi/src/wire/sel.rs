//! System Event Log: info, reservation, entries, clear.

use super::{Body, Command, DecodeError, Reader, app::empty_request, netfn, sdr::GetSdr, sdr::Reservation};

empty_request!(
    /// Get SEL Info (Storage 0x40).
    GetSelInfo, netfn::STORAGE, 0x40, SelInfo
);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SelInfo {
    pub version: u8,
    pub entries: u16,
    pub free_space: u16,
    pub last_addition: u32,
    pub last_erase: u32,
    pub operation_support: u8,
}
impl Body for SelInfo {
    fn encode(&self) -> Vec<u8> {
        let mut v = vec![self.version];
        v.extend_from_slice(&self.entries.to_le_bytes());
        v.extend_from_slice(&self.free_space.to_le_bytes());
        v.extend_from_slice(&self.last_addition.to_le_bytes());
        v.extend_from_slice(&self.last_erase.to_le_bytes());
        v.push(self.operation_support);
        v
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Get SEL Info response");
        let version = r.u8()?;
        let entries = r.u16le()?;
        Ok(Self {
            version,
            entries,
            free_space: r.u16le().unwrap_or(0),
            last_addition: r.u32le().unwrap_or(0),
            last_erase: r.u32le().unwrap_or(0),
            operation_support: r.opt_u8().unwrap_or(0),
        })
    }
}

empty_request!(
    /// Reserve SEL (Storage 0x42), needed by Clear SEL.
    ReserveSel, netfn::STORAGE, 0x42, Reservation
);

/// Get SEL Entry (Storage 0x43): same layout as Get SDR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GetSelEntry(pub GetSdr);
impl Body for GetSelEntry {
    fn encode(&self) -> Vec<u8> {
        self.0.encode()
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        GetSdr::decode(b).map(Self)
    }
}
impl Command for GetSelEntry {
    const NETFN: u8 = netfn::STORAGE;
    const CMD: u8 = 0x43;
    type Response = super::sdr::RecordChunk;
}

pub const SEL_RECORD_LEN: usize = 16;

/// A 16-byte SEL record. Fields are laid out as a system event record (type 0x02);
/// for OEM types (0xC0-0xFF) the same bytes are simply positional.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SelRecord {
    pub record_id: u16,
    pub record_type: u8,
    pub timestamp: u32,
    pub generator_id: u16,
    pub evm_rev: u8,
    pub sensor_type: u8,
    pub sensor_number: u8,
    /// Bit 7: deassertion; bits 6:0 event/reading type.
    pub event_dir_type: u8,
    pub event_data: [u8; 3],
}

impl SelRecord {
    pub fn encode(&self) -> [u8; SEL_RECORD_LEN] {
        let mut v = [0u8; SEL_RECORD_LEN];
        v[0..2].copy_from_slice(&self.record_id.to_le_bytes());
        v[2] = self.record_type;
        v[3..7].copy_from_slice(&self.timestamp.to_le_bytes());
        v[7..9].copy_from_slice(&self.generator_id.to_le_bytes());
        v[9] = self.evm_rev;
        v[10] = self.sensor_type;
        v[11] = self.sensor_number;
        v[12] = self.event_dir_type;
        v[13..16].copy_from_slice(&self.event_data);
        v
    }
    pub fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "SEL record");
        Ok(Self {
            record_id: r.u16le()?,
            record_type: r.u8()?,
            timestamp: r.u32le()?,
            generator_id: r.u16le()?,
            evm_rev: r.u8()?,
            sensor_type: r.u8()?,
            sensor_number: r.u8()?,
            event_dir_type: r.u8()?,
            event_data: r.array()?,
        })
    }
    pub fn is_system_event(&self) -> bool {
        self.record_type == 0x02
    }
    pub fn asserted(&self) -> bool {
        self.event_dir_type & 0x80 == 0
    }
    pub fn sensor_type_name(&self) -> String {
        ipmi_rs::storage::sdr::SensorType::from(self.sensor_type).to_string()
    }
    /// Timestamps below 0x20000000 count seconds since BMC init, not since the epoch.
    pub fn timestamp_is_pre_init(&self) -> bool {
        self.timestamp <= 0x2000_0000
    }
}

/// Clear SEL (Storage 0x47).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClearSel {
    pub reservation: u16,
    /// 0xAA initiate erase, 0x00 get erasure status.
    pub action: u8,
}
pub const CLEAR_SEL_INITIATE: u8 = 0xAA;
pub const CLEAR_SEL_STATUS: u8 = 0x00;

impl Body for ClearSel {
    fn encode(&self) -> Vec<u8> {
        let mut v = self.reservation.to_le_bytes().to_vec();
        v.extend_from_slice(b"CLR");
        v.push(self.action);
        v
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Clear SEL request");
        let reservation = r.u16le()?;
        let clr = r.bytes(3)?;
        if clr != b"CLR" {
            return Err(DecodeError::Invalid { what: "Clear SEL 'CLR'", value: clr[0].into() });
        }
        Ok(Self { reservation, action: r.u8()? })
    }
}
impl Command for ClearSel {
    const NETFN: u8 = netfn::STORAGE;
    const CMD: u8 = 0x47;
    type Response = ClearSelStatus;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClearSelStatus {
    /// Bits 3:0: 0 = erasure in progress, 1 = erase completed.
    pub progress: u8,
}
impl ClearSelStatus {
    pub fn completed(&self) -> bool {
        self.progress & 0x0F == 1
    }
}
impl Body for ClearSelStatus {
    fn encode(&self) -> Vec<u8> {
        vec![self.progress]
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        Ok(Self { progress: Reader::new(b, "Clear SEL response").u8()? })
    }
}
