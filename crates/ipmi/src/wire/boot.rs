//! Boot device and BMC maintenance codecs: Get/Set System Boot Options (Chassis 0x09 / 0x08) with the
//! boot flags parameter (5) and the set-in-progress parameter (0), Cold/Warm Reset (App 0x02 / 0x03) and
//! Get LAN Configuration Parameters (Transport 0x02) for the BMC's MAC address.
//!
//! Why here: the simulator answers these and the client sends them, so both share one definition of the
//! bytes (IPMI 2.0 tables 28-14 and 23-4). Decoding is lenient: a BMC that returns fewer than five boot
//! flag bytes (some return only the first two) still tells the device selector.

use super::{Body, Command, DecodeError, Reader, app::Empty, app::empty_request, netfn};

/// Boot option parameter selectors Lifeline uses.
pub mod param {
    /// Set In Progress (0: set complete, 1: set in progress, 2: commit write).
    pub const SET_IN_PROGRESS: u8 = 0;
    /// Boot Info Acknowledge.
    pub const BOOT_INFO_ACK: u8 = 4;
    /// Boot Flags (5 bytes).
    pub const BOOT_FLAGS: u8 = 5;
}

/// Set In Progress values (parameter 0).
pub mod progress {
    pub const SET_COMPLETE: u8 = 0;
    pub const SET_IN_PROGRESS: u8 = 1;
}

/// The boot device selector (boot flags byte 2, bits 5:2), as `ipmitool chassis bootdev` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BootDevice {
    /// No override: the BIOS boot order.
    None,
    Pxe,
    /// Default hard drive.
    Disk,
    DiskSafeMode,
    Diagnostic,
    Cdrom,
    BiosSetup,
    RemoteFloppy,
    RemoteCdrom,
    RemoteMedia,
    RemoteDisk,
    /// Floppy / primary removable media (USB keys on today's BMCs).
    Removable,
    /// A selector the spec reserves.
    Reserved(u8),
}

impl BootDevice {
    pub fn from_selector(s: u8) -> Self {
        match s & 0x0F {
            0x0 => Self::None,
            0x1 => Self::Pxe,
            0x2 => Self::Disk,
            0x3 => Self::DiskSafeMode,
            0x4 => Self::Diagnostic,
            0x5 => Self::Cdrom,
            0x6 => Self::BiosSetup,
            0x7 => Self::RemoteFloppy,
            0x8 => Self::RemoteCdrom,
            0x9 => Self::RemoteMedia,
            0xB => Self::RemoteDisk,
            0xF => Self::Removable,
            n => Self::Reserved(n),
        }
    }

    pub fn selector(self) -> u8 {
        match self {
            Self::None => 0x0,
            Self::Pxe => 0x1,
            Self::Disk => 0x2,
            Self::DiskSafeMode => 0x3,
            Self::Diagnostic => 0x4,
            Self::Cdrom => 0x5,
            Self::BiosSetup => 0x6,
            Self::RemoteFloppy => 0x7,
            Self::RemoteCdrom => 0x8,
            Self::RemoteMedia => 0x9,
            Self::RemoteDisk => 0xB,
            Self::Removable => 0xF,
            Self::Reserved(n) => n & 0x0F,
        }
    }

    /// The words `ipmitool chassis bootparam get 5` prints after "Boot Device Selector :".
    pub fn describe(self) -> &'static str {
        match self {
            Self::None => "No override",
            Self::Pxe => "Force PXE",
            Self::Disk => "Force Boot from default Hard-Drive",
            Self::DiskSafeMode => "Force Boot from default Hard-Drive, request Safe-Mode",
            Self::Diagnostic => "Force Boot from Diagnostic Partition",
            Self::Cdrom => "Force Boot from CD/DVD",
            Self::BiosSetup => "Force Boot into BIOS Setup",
            Self::RemoteFloppy => "Force Boot from remotely connected Floppy/primary removable media",
            Self::RemoteCdrom => "Force Boot from remotely connected CD/DVD",
            Self::RemoteMedia => "Force Boot from primary remote media",
            Self::RemoteDisk => "Force Boot from remotely connected Hard-Drive",
            Self::Removable => "Force Boot from Floppy/primary removable media",
            Self::Reserved(_) => "Reserved",
        }
    }
}

/// Boot flags (parameter 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BootFlags {
    /// Byte 1 bit 7: the flags are valid (the BIOS will act on them).
    pub valid: bool,
    /// Byte 1 bit 6: applies to all future boots (else the next boot only).
    pub persistent: bool,
    /// Byte 1 bit 5: EFI boot (else PC-compatible legacy).
    pub efi: bool,
    pub device: BootDevice,
    /// Bytes 2 (other bits) to 5 as received, so a write-back keeps what Lifeline does not change
    /// (CMOS clear, lock keyboard, console redirection, BIOS verbosity).
    pub rest: [u8; 4],
}

impl BootFlags {
    /// Flags that select `device` for the next boot or persistently, EFI or legacy, everything else default.
    pub fn new(device: BootDevice, persistent: bool, efi: bool) -> Self {
        BootFlags { valid: true, persistent, efi, device, rest: [0; 4] }
    }
}

impl Body for BootFlags {
    fn encode(&self) -> Vec<u8> {
        let b1 = (u8::from(self.valid) << 7) | (u8::from(self.persistent) << 6) | (u8::from(self.efi) << 5);
        let b2 = (self.rest[0] & 0xC3) | (self.device.selector() << 2);
        vec![b1, b2, self.rest[1], self.rest[2], self.rest[3]]
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "boot flags");
        let b1 = r.u8()?;
        let b2 = r.opt_u8().unwrap_or(0);
        let rest = [b2 & 0xC3, r.opt_u8().unwrap_or(0), r.opt_u8().unwrap_or(0), r.opt_u8().unwrap_or(0)];
        Ok(BootFlags {
            valid: b1 & 0x80 != 0,
            persistent: b1 & 0x40 != 0,
            efi: b1 & 0x20 != 0,
            device: BootDevice::from_selector((b2 >> 2) & 0x0F),
            rest,
        })
    }
}

/// Set System Boot Options (Chassis 0x08): one parameter's data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetSystemBootOptions {
    pub param: u8,
    /// Bit 7 of byte 1: mark the parameter invalid.
    pub mark_invalid: bool,
    pub data: Vec<u8>,
}

impl Body for SetSystemBootOptions {
    fn encode(&self) -> Vec<u8> {
        let mut v = vec![(self.param & 0x7F) | (u8::from(self.mark_invalid) << 7)];
        v.extend_from_slice(&self.data);
        v
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Set System Boot Options");
        let p = r.u8()?;
        Ok(Self { param: p & 0x7F, mark_invalid: p & 0x80 != 0, data: r.rest().to_vec() })
    }
}

impl Command for SetSystemBootOptions {
    const NETFN: u8 = netfn::CHASSIS;
    const CMD: u8 = 0x08;
    type Response = Empty;
}

/// Get System Boot Options (Chassis 0x09).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GetSystemBootOptions {
    pub param: u8,
    pub set_selector: u8,
    pub block_selector: u8,
}

impl GetSystemBootOptions {
    pub fn new(param: u8) -> Self {
        GetSystemBootOptions { param, set_selector: 0, block_selector: 0 }
    }
}

impl Body for GetSystemBootOptions {
    fn encode(&self) -> Vec<u8> {
        vec![self.param & 0x7F, self.set_selector, self.block_selector]
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Get System Boot Options");
        let param = r.u8()? & 0x7F;
        Ok(Self { param, set_selector: r.opt_u8().unwrap_or(0), block_selector: r.opt_u8().unwrap_or(0) })
    }
}

impl Command for GetSystemBootOptions {
    const NETFN: u8 = netfn::CHASSIS;
    const CMD: u8 = 0x09;
    type Response = BootOptionsReply;
}

/// Get System Boot Options response: parameter version, selector, its valid/locked bit and data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootOptionsReply {
    pub version: u8,
    pub param: u8,
    /// Byte 2 bit 7: the parameter is marked invalid / locked.
    pub invalid: bool,
    pub data: Vec<u8>,
}

impl Body for BootOptionsReply {
    fn encode(&self) -> Vec<u8> {
        let mut v = vec![self.version, (self.param & 0x7F) | (u8::from(self.invalid) << 7)];
        v.extend_from_slice(&self.data);
        v
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Get System Boot Options response");
        let version = r.u8()?;
        let p = r.u8()?;
        Ok(Self { version, param: p & 0x7F, invalid: p & 0x80 != 0, data: r.rest().to_vec() })
    }
}

/// Which reset of the management controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BmcResetKind {
    /// App 0x02: the controller restarts (its sessions are gone).
    Cold,
    /// App 0x03: the controller re-initialises without a full restart.
    Warm,
}

impl BmcResetKind {
    pub fn cmd(self) -> u8 {
        match self {
            Self::Cold => ColdReset::CMD,
            Self::Warm => WarmReset::CMD,
        }
    }
}

empty_request!(
    /// Cold Reset (App 0x02).
    ColdReset, netfn::APP, 0x02, Empty
);
empty_request!(
    /// Warm Reset (App 0x03).
    WarmReset, netfn::APP, 0x03, Empty
);

/// Get LAN Configuration Parameters (Transport 0x02).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GetLanConfig {
    /// The LAN channel (bits 3:0); bit 7 asks for the revision only.
    pub channel: u8,
    pub param: u8,
    pub set_selector: u8,
    pub block_selector: u8,
}

/// LAN configuration parameters Lifeline reads.
pub mod lan_param {
    pub const IP_ADDRESS: u8 = 3;
    pub const IP_SOURCE: u8 = 4;
    pub const MAC_ADDRESS: u8 = 5;
}

impl GetLanConfig {
    pub fn new(channel: u8, param: u8) -> Self {
        GetLanConfig { channel: channel & 0x0F, param, set_selector: 0, block_selector: 0 }
    }
}

impl Body for GetLanConfig {
    fn encode(&self) -> Vec<u8> {
        vec![self.channel, self.param, self.set_selector, self.block_selector]
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Get LAN Configuration Parameters");
        Ok(Self {
            channel: r.u8()?,
            param: r.u8()?,
            set_selector: r.opt_u8().unwrap_or(0),
            block_selector: r.opt_u8().unwrap_or(0),
        })
    }
}

impl Command for GetLanConfig {
    const NETFN: u8 = netfn::TRANSPORT;
    const CMD: u8 = 0x02;
    type Response = LanConfigReply;
}

/// The parameter revision and the parameter's data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LanConfigReply {
    pub revision: u8,
    pub data: Vec<u8>,
}

impl LanConfigReply {
    /// The data as a MAC address (`aa:bb:cc:dd:ee:ff`), when it has six bytes.
    pub fn mac(&self) -> Option<String> {
        let b = self.data.get(..6)?;
        Some(b.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(":"))
    }
    /// The data as an IPv4 address, when it has four bytes.
    pub fn ipv4(&self) -> Option<std::net::Ipv4Addr> {
        let b: [u8; 4] = self.data.get(..4)?.try_into().ok()?;
        Some(b.into())
    }
}

impl Body for LanConfigReply {
    fn encode(&self) -> Vec<u8> {
        let mut v = vec![self.revision];
        v.extend_from_slice(&self.data);
        v
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Get LAN Configuration Parameters response");
        Ok(Self { revision: r.u8()?, data: r.rest().to_vec() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ipmitool_bytes() {
        // `ipmitool chassis bootparam get 5` on ipmi_sim after `bootdev pxe`: "Boot parameter data: 0004000000".
        let f = BootFlags::decode(&[0x00, 0x04, 0, 0, 0]).unwrap();
        assert_eq!(f.device, BootDevice::Pxe);
        assert!(!f.valid && !f.persistent && !f.efi);
        // `ipmitool chassis bootdev bios options=persistent,efiboot`: E0 18.
        let f = BootFlags::new(BootDevice::BiosSetup, true, true);
        assert_eq!(f.encode(), vec![0xE0, 0x18, 0, 0, 0]);
        let r = BootOptionsReply::decode(&[0x01, 0x05, 0x80, 0x04]).unwrap();
        assert_eq!((r.version, r.param, r.invalid), (1, 5, false));
        assert_eq!(BootFlags::decode(&r.data).unwrap().device, BootDevice::Pxe);
        let mac = LanConfigReply::decode(&[0x11, 0x52, 0x54, 0, 0xab, 0xcd, 0xef]).unwrap();
        assert_eq!(mac.mac().as_deref(), Some("52:54:00:ab:cd:ef"));
    }

    proptest! {
        #[test]
        fn boot_flags_round_trip(valid: bool, persistent: bool, efi: bool, sel in 0u8..16, rest: [u8; 4]) {
            let f = BootFlags {
                valid, persistent, efi, device: BootDevice::from_selector(sel),
                rest: [rest[0] & 0xC3, rest[1], rest[2], rest[3]],
            };
            prop_assert_eq!(BootFlags::decode(&f.encode()).unwrap(), f);
            prop_assert_eq!(BootDevice::from_selector(sel).selector(), sel);
        }

        #[test]
        fn replies_round_trip(version: u8, p in 0u8..128, invalid: bool, data in proptest::collection::vec(any::<u8>(), 0..20)) {
            let r = BootOptionsReply { version, param: p, invalid, data: data.clone() };
            prop_assert_eq!(BootOptionsReply::decode(&r.encode()).unwrap(), r);
            let s = SetSystemBootOptions { param: p, mark_invalid: invalid, data: data.clone() };
            prop_assert_eq!(SetSystemBootOptions::decode(&s.encode()).unwrap(), s);
            let l = LanConfigReply { revision: version, data };
            prop_assert_eq!(LanConfigReply::decode(&l.encode()).unwrap(), l);
        }

        #[test]
        fn never_panics(b in proptest::collection::vec(any::<u8>(), 0..16)) {
            let _ = BootFlags::decode(&b);
            let _ = BootOptionsReply::decode(&b);
            let _ = SetSystemBootOptions::decode(&b);
            let _ = GetSystemBootOptions::decode(&b);
            let _ = GetLanConfig::decode(&b);
            let _ = LanConfigReply::decode(&b).map(|r| (r.mac(), r.ipv4()));
        }
    }
}
