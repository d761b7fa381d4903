//! Sensor/Event netfn: Get Sensor Reading.

use super::{Body, Command, DecodeError, Reader, netfn};

/// Get Sensor Reading (Sensor/Event 0x2D).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GetSensorReading {
    pub number: u8,
}
impl Body for GetSensorReading {
    fn encode(&self) -> Vec<u8> {
        vec![self.number]
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        Ok(Self { number: Reader::new(b, "Get Sensor Reading").u8()? })
    }
}
impl Command for GetSensorReading {
    const NETFN: u8 = netfn::SENSOR;
    const CMD: u8 = 0x2D;
    type Response = SensorReading;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SensorReading {
    pub raw: u8,
    /// Bit 7 event messages enabled, bit 6 scanning enabled, bit 5 reading unavailable.
    pub flags: u8,
    /// Threshold sensors: bit 0 lower non-critical .. bit 5 upper non-recoverable.
    /// Discrete sensors: states 0-7.
    pub state1: Option<u8>,
    pub state2: Option<u8>,
}

impl SensorReading {
    pub fn unavailable(&self) -> bool {
        self.flags & 0x20 != 0 || self.flags & 0x40 == 0
    }
}

impl Body for SensorReading {
    fn encode(&self) -> Vec<u8> {
        let mut v = vec![self.raw, self.flags];
        if let Some(s1) = self.state1 {
            v.push(s1);
            v.extend(self.state2);
        }
        v
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Get Sensor Reading response");
        let raw = r.u8()?;
        let flags = r.u8()?;
        let state1 = r.opt_u8();
        let state2 = if state1.is_some() { r.opt_u8() } else { None };
        Ok(Self { raw, flags, state1, state2 })
    }
}
