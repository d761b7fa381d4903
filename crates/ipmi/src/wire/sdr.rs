//! SDR repository commands and sensor data record parsing (full and compact sensor
//! records; everything else is kept raw).
//!
//! Reads are chunked by the caller (header first, then the body in small pieces)
//! because BMCs such as OpenIPMI's answer a whole-record read (length 0xFF) with
//! completion code 0xCA; this is why ipmi-rs 0.6's `sdrs()` yields nothing there.

use super::{Body, Command, DecodeError, Reader, app::empty_request, netfn};

pub const SDR_HEADER_LEN: usize = 5;
/// Record id of the first record; `0xFFFF` as "next" means the last record was read.
pub const FIRST_RECORD: u16 = 0x0000;
pub const LAST_RECORD: u16 = 0xFFFF;

empty_request!(
    /// Get SDR Repository Info (Storage 0x20).
    GetSdrRepositoryInfo, netfn::STORAGE, 0x20, SdrRepositoryInfo
);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SdrRepositoryInfo {
    pub version: u8,
    pub record_count: u16,
    pub free_space: u16,
    pub last_addition: u32,
    pub last_erase: u32,
    pub operation_support: u8,
}
impl Body for SdrRepositoryInfo {
    fn encode(&self) -> Vec<u8> {
        let mut v = vec![self.version];
        v.extend_from_slice(&self.record_count.to_le_bytes());
        v.extend_from_slice(&self.free_space.to_le_bytes());
        v.extend_from_slice(&self.last_addition.to_le_bytes());
        v.extend_from_slice(&self.last_erase.to_le_bytes());
        v.push(self.operation_support);
        v
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Get SDR Repository Info response");
        let version = r.u8()?;
        let record_count = r.u16le()?;
        let free_space = r.u16le().unwrap_or(0);
        let last_addition = r.u32le().unwrap_or(0);
        let last_erase = r.u32le().unwrap_or(0);
        let operation_support = r.opt_u8().unwrap_or(0);
        Ok(Self { version, record_count, free_space, last_addition, last_erase, operation_support })
    }
}

empty_request!(
    /// Reserve SDR Repository (Storage 0x22).
    ReserveSdrRepository, netfn::STORAGE, 0x22, Reservation
);

/// Reservation id returned by Reserve SDR Repository / Reserve SEL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reservation {
    pub id: u16,
}
impl Body for Reservation {
    fn encode(&self) -> Vec<u8> {
        self.id.to_le_bytes().to_vec()
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        Ok(Self { id: Reader::new(b, "reservation id").u16le()? })
    }
}

/// Get SDR (Storage 0x23): `len` bytes at `offset` of record `record_id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GetSdr {
    pub reservation: u16,
    pub record_id: u16,
    pub offset: u8,
    /// 0xFF = whole record.
    pub len: u8,
}
impl Body for GetSdr {
    fn encode(&self) -> Vec<u8> {
        let mut v = self.reservation.to_le_bytes().to_vec();
        v.extend_from_slice(&self.record_id.to_le_bytes());
        v.extend_from_slice(&[self.offset, self.len]);
        v
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Get SDR / Get SEL Entry request");
        Ok(Self { reservation: r.u16le()?, record_id: r.u16le()?, offset: r.u8()?, len: r.u8()? })
    }
}
impl Command for GetSdr {
    const NETFN: u8 = netfn::STORAGE;
    const CMD: u8 = 0x23;
    type Response = RecordChunk;
}

/// A piece of a record plus the id of the next record (Get SDR, Get SEL Entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordChunk {
    pub next_id: u16,
    pub data: Vec<u8>,
}
impl Body for RecordChunk {
    fn encode(&self) -> Vec<u8> {
        let mut v = self.next_id.to_le_bytes().to_vec();
        v.extend_from_slice(&self.data);
        v
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "record chunk");
        Ok(Self { next_id: r.u16le()?, data: r.rest().to_vec() })
    }
}

/// Sensor data record header + body.
#[derive(Debug, Clone, PartialEq)]
pub struct SdrRecord {
    pub record_id: u16,
    /// SDR version (0x51).
    pub version: u8,
    pub body: SdrBody,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SdrBody {
    Full(FullSensor),
    Compact(CompactSensor),
    /// Any other record type, kept verbatim.
    Other {
        record_type: u8,
        data: Vec<u8>,
    },
}

/// Fields shared by full and compact sensor records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SensorCommon {
    pub owner_id: u8,
    pub owner_lun: u8,
    pub number: u8,
    pub entity_id: u8,
    pub entity_instance: u8,
    pub sensor_type: u8,
    pub event_reading_type: u8,
    /// Bits 7:6 analog data format (0 unsigned, 1 one's complement, 2 two's complement, 3 none),
    /// bits 5:3 rate unit, 2:1 modifier unit, 0 percentage.
    pub units1: u8,
    pub base_unit: u8,
    pub modifier_unit: u8,
    /// Up to 16 bytes, 8-bit ASCII/Latin-1 (other encodings are decoded best effort).
    pub name: String,
}

impl SensorCommon {
    /// Human sensor type via ipmi-rs's table ("Temperature", "Fan", ...).
    pub fn sensor_type_name(&self) -> String {
        ipmi_rs::storage::sdr::SensorType::from(self.sensor_type).to_string()
    }
    /// Short unit string via ipmi-rs's table ("°C", "RPM", "W", ...), or the long name.
    pub fn unit_name(&self) -> String {
        let unit = ipmi_rs::storage::sdr::Unit::from(self.base_unit);
        let s = unit.display(true, 2.0f32);
        s.split_once(' ').map(|(_, u)| u.to_string()).unwrap_or_default()
    }
    /// Threshold-based sensor (event/reading type 0x01).
    pub fn is_threshold(&self) -> bool {
        self.event_reading_type == 0x01
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct FullSensor {
    pub common: SensorCommon,
    pub linearization: u8,
    /// 10-bit signed.
    pub m: i16,
    /// 10-bit signed.
    pub b: i16,
    /// 4-bit signed.
    pub r_exp: i8,
    /// 4-bit signed.
    pub b_exp: i8,
    /// Readable threshold mask (bit 0 lnc, 1 lc, 2 lnr, 3 unc, 4 uc, 5 unr).
    pub readable_thresholds: u8,
    /// Raw thresholds: unr, uc, unc, lnr, lc, lnc.
    pub thresholds: [u8; 6],
}

impl FullSensor {
    /// Convert a raw reading with y = (M x + B 10^Bexp) 10^Rexp (linear sensors).
    pub fn convert(&self, raw: u8) -> f64 {
        let x = match self.common.units1 >> 6 {
            1 => {
                let v = raw as i8;
                if v < 0 { (v + 1) as f64 } else { v as f64 }
            }
            2 => raw as i8 as f64,
            _ => raw as f64,
        };
        (self.m as f64 * x + self.b as f64 * 10f64.powi(self.b_exp as i32)) * 10f64.powi(self.r_exp as i32)
    }
    /// Inverse of [`convert`](Self::convert) for unsigned formats (used by simulators).
    pub fn raw_for(&self, value: f64) -> u8 {
        if self.m == 0 {
            return 0;
        }
        let x = (value / 10f64.powi(self.r_exp as i32) - self.b as f64 * 10f64.powi(self.b_exp as i32))
            / self.m as f64;
        x.round().clamp(0.0, 255.0) as u8
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactSensor {
    pub common: SensorCommon,
}

impl SdrRecord {
    pub fn common(&self) -> Option<&SensorCommon> {
        match &self.body {
            SdrBody::Full(f) => Some(&f.common),
            SdrBody::Compact(c) => Some(&c.common),
            SdrBody::Other { .. } => None,
        }
    }

    pub fn record_type(&self) -> u8 {
        match &self.body {
            SdrBody::Full(_) => 0x01,
            SdrBody::Compact(_) => 0x02,
            SdrBody::Other { record_type, .. } => *record_type,
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let body = match &self.body {
            SdrBody::Full(f) => encode_full(f),
            SdrBody::Compact(c) => encode_compact(c),
            SdrBody::Other { data, .. } => data[..data.len().min(255)].to_vec(),
        };
        let mut v = self.record_id.to_le_bytes().to_vec();
        v.push(self.version);
        v.push(self.record_type());
        v.push(body.len() as u8);
        v.extend_from_slice(&body);
        v
    }

    /// Parse a whole record (header + body). Lenient: a body shorter than its header
    /// says is parsed as far as it goes; a missing name is empty.
    pub fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "SDR record");
        let record_id = r.u16le()?;
        let version = r.u8()?;
        let record_type = r.u8()?;
        let len = r.u8()? as usize;
        let rest = r.rest();
        let body = &rest[..len.min(rest.len())];
        let body = match record_type {
            0x01 => SdrBody::Full(decode_full(body)?),
            0x02 => SdrBody::Compact(CompactSensor { common: decode_common(body, 26)? }),
            t => SdrBody::Other { record_type: t, data: body.to_vec() },
        };
        Ok(Self { record_id, version, body })
    }
}

fn sign_extend(v: u16, bits: u32) -> i16 {
    let shift = 16 - bits;
    ((v << shift) as i16) >> shift
}

/// Body bytes 0..=12 (record bytes 6..18) are laid out alike in both sensor records.
fn common_prefix(c: &SensorCommon) -> Vec<u8> {
    let mut v = vec![c.owner_id, c.owner_lun, c.number, c.entity_id, c.entity_instance, 0x7F, 0x68];
    v.extend_from_slice(&[c.sensor_type, c.event_reading_type]);
    v.extend_from_slice(&[0; 6]); // event masks
    v.extend_from_slice(&[c.units1, c.base_unit, c.modifier_unit]);
    v
}

fn push_name(v: &mut Vec<u8>, name: &str) {
    // Up to 31 bytes, what the type/length byte can say (and what `decode_name` reads). A name longer than
    // that which 6-bit packed ASCII can spell is packed (up to 41 characters), as a BMC would have sent it:
    // cutting names at 16 characters lost their tails (found by the `decoders` fuzz target).
    let packable = |c: char| (' '..='_').contains(&c);
    if name.chars().count() > 31 && name.chars().all(packable) {
        let (mut bytes, mut bits, mut n) = (Vec::new(), 0u32, 0);
        for c in name.chars().take(41) {
            bits |= (c as u32 - 0x20) << n;
            n += 6;
            while n >= 8 {
                bytes.push(bits as u8);
                bits >>= 8;
                n -= 8;
            }
        }
        if n > 0 {
            bytes.push(bits as u8);
        }
        v.push(0x80 | bytes.len() as u8);
        v.extend_from_slice(&bytes);
        return;
    }
    let bytes: Vec<u8> =
        name.chars().map(|c| if (c as u32) < 256 { c as u8 } else { b'?' }).take(31).collect();
    v.push(0xC0 | bytes.len() as u8);
    v.extend_from_slice(&bytes);
}

fn decode_name(body: &[u8], at: usize) -> String {
    let Some(&tl) = body.get(at) else { return String::new() };
    let len = (tl & 0x1F) as usize;
    let raw = &body[(at + 1).min(body.len())..(at + 1 + len).min(body.len())];
    match tl >> 6 {
        // 6-bit packed ASCII: 4 characters per 3 bytes.
        2 => {
            let mut s = String::new();
            let mut bits: u32 = 0;
            let mut n = 0;
            for &byte in raw {
                bits |= (byte as u32) << n;
                n += 8;
                while n >= 6 {
                    s.push(char::from(b' ' + (bits & 0x3F) as u8));
                    bits >>= 6;
                    n -= 6;
                }
            }
            s.trim_end().to_string()
        }
        // 8-bit ASCII + Latin-1; unicode and BCD are shown the same way, best effort.
        _ => raw.iter().take_while(|b| **b != 0).map(|b| *b as char).collect(),
    }
}

fn decode_common(body: &[u8], name_at: usize) -> Result<SensorCommon, DecodeError> {
    if body.len() < 18 {
        return Err(DecodeError::Truncated { what: "sensor record body", need: 18, have: body.len() });
    }
    Ok(SensorCommon {
        owner_id: body[0],
        owner_lun: body[1],
        number: body[2],
        entity_id: body[3],
        entity_instance: body[4],
        sensor_type: body[7],
        event_reading_type: body[8],
        units1: body[15],
        base_unit: body[16],
        modifier_unit: body[17],
        name: decode_name(body, name_at),
    })
}

fn encode_compact(c: &CompactSensor) -> Vec<u8> {
    let mut v = common_prefix(&c.common);
    v.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0]); // sharing, hysteresis, reserved, OEM
    push_name(&mut v, &c.common.name);
    v
}

fn decode_full(body: &[u8]) -> Result<FullSensor, DecodeError> {
    let common = decode_common(body, 42)?;
    let g = |i: usize| body.get(i).copied().unwrap_or(0);
    let m = sign_extend(g(19) as u16 | ((g(20) as u16 & 0xC0) << 2), 10);
    let b = sign_extend(g(21) as u16 | ((g(22) as u16 & 0xC0) << 2), 10);
    let r_exp = (g(24) as i8) >> 4;
    let b_exp = ((g(24) << 4) as i8) >> 4;
    // Record byte 19 (body 13) is the readable threshold mask for threshold sensors.
    Ok(FullSensor {
        common,
        linearization: g(18) & 0x7F,
        m,
        b,
        r_exp,
        b_exp,
        readable_thresholds: g(13) & 0x3F,
        thresholds: [g(31), g(32), g(33), g(34), g(35), g(36)],
    })
}

fn encode_full(f: &FullSensor) -> Vec<u8> {
    let mut v = common_prefix(&f.common);
    v[13] = f.readable_thresholds & 0x3F;
    let m = (f.m as u16) & 0x3FF;
    let b = (f.b as u16) & 0x3FF;
    v.push(f.linearization & 0x7F); // 18
    v.push(m as u8); // 19
    v.push(((m >> 2) as u8) & 0xC0); // 20 (tolerance 0)
    v.push(b as u8); // 21
    v.push(((b >> 2) as u8) & 0xC0); // 22 (accuracy 0)
    v.push(0); // 23 accuracy, direction
    v.push((((f.r_exp as u8) & 0x0F) << 4) | ((f.b_exp as u8) & 0x0F)); // 24
    v.extend_from_slice(&[0, 0, 0, 0, 0xFF, 0]); // 25..30 flags, nominal, normal max/min, max, min
    v.extend_from_slice(&f.thresholds); // 31..36
    v.extend_from_slice(&[0, 0, 0, 0, 0]); // 37..41 hysteresis, reserved, OEM
    push_name(&mut v, &f.common.name);
    v
}
