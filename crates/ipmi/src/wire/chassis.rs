//! Chassis netfn: Get Chassis Status and Chassis Control (power).

use super::{Body, Command, DecodeError, Reader, app::Empty, app::empty_request, netfn};

empty_request!(
    /// Get Chassis Status (Chassis 0x01).
    GetChassisStatus, netfn::CHASSIS, 0x01, ChassisStatus
);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChassisStatus {
    /// Bit 0 power on, 1 overload, 2 interlock, 3 power fault, 4 control fault,
    /// bits 6:5 power restore policy.
    pub power: u8,
    pub last_power_event: u8,
    pub misc: u8,
    pub front_panel: Option<u8>,
}

impl ChassisStatus {
    pub fn power_on(&self) -> bool {
        self.power & 0x01 != 0
    }
    pub fn power_fault(&self) -> bool {
        self.power & 0x08 != 0
    }
}

impl Body for ChassisStatus {
    fn encode(&self) -> Vec<u8> {
        let mut v = vec![self.power, self.last_power_event, self.misc];
        v.extend(self.front_panel);
        v
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Get Chassis Status response");
        let power = r.u8()?;
        // Lenient: a BMC that only reports the power byte still tells us the state.
        let last_power_event = r.opt_u8().unwrap_or(0);
        let misc = r.opt_u8().unwrap_or(0);
        Ok(Self { power, last_power_event, misc, front_panel: r.opt_u8() })
    }
}

/// Chassis Control operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChassisOp {
    PowerDown = 0,
    PowerUp = 1,
    PowerCycle = 2,
    HardReset = 3,
    PulseDiagnostic = 4,
    SoftShutdown = 5,
}

impl ChassisOp {
    pub fn from_u8(v: u8) -> Option<Self> {
        Some(match v & 0x0F {
            0 => Self::PowerDown,
            1 => Self::PowerUp,
            2 => Self::PowerCycle,
            3 => Self::HardReset,
            4 => Self::PulseDiagnostic,
            5 => Self::SoftShutdown,
            _ => return None,
        })
    }
}

impl From<lifeline_types::PowerAction> for ChassisOp {
    fn from(a: lifeline_types::PowerAction) -> Self {
        use lifeline_types::PowerAction as A;
        match a {
            A::On => Self::PowerUp,
            A::Off => Self::PowerDown,
            A::Cycle => Self::PowerCycle,
            A::Reset => Self::HardReset,
            A::Soft => Self::SoftShutdown,
        }
    }
}

/// Chassis Control (Chassis 0x02).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChassisControl {
    pub op: u8,
}
impl Body for ChassisControl {
    fn encode(&self) -> Vec<u8> {
        vec![self.op]
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        Ok(Self { op: Reader::new(b, "Chassis Control").u8()? })
    }
}
impl Command for ChassisControl {
    const NETFN: u8 = netfn::CHASSIS;
    const CMD: u8 = 0x02;
    type Response = Empty;
}
