//! System Boot Options (Chassis 0x08 / 0x09) and Get LAN Configuration Parameters (Transport 0x02): the
//! IPMI face of the host's boot override (the same one Redfish `Boot` shows) and of the BMC's MAC.
//!
//! Like a real BMC and unlike OpenIPMI, every boot flag is kept (valid, persistent, EFI), and parameter 0
//! (set in progress) is implemented: a second "set in progress" while one is open is refused with 0x81.

use lifeline_ipmi::wire::{
    Body,
    boot::{
        BootDevice, BootFlags, BootOptionsReply, GetLanConfig, GetSystemBootOptions, SetSystemBootOptions,
    },
    boot::{lan_param, param, progress},
    cc,
    fru::{FruAreaInfo, FruFields, GetFruInfo, ReadFru},
    message::{Request, Response},
};

use std::sync::atomic::Ordering;

use super::session::Bmc;
use crate::host::{BOOT_TARGETS, BootOverride};

/// Parameter not supported (Get/Set System Boot Options, Get LAN Configuration Parameters).
const PARAM_NOT_SUPPORTED: u8 = 0x80;
/// Set System Boot Options: a set is already in progress.
const SET_IN_PROGRESS_ALREADY: u8 = 0x81;

fn device(target: &str) -> BootDevice {
    match target {
        "Pxe" | "UefiHttp" => BootDevice::Pxe,
        "Hdd" => BootDevice::Disk,
        "Cd" => BootDevice::Cdrom,
        "Usb" => BootDevice::Removable,
        "BiosSetup" => BootDevice::BiosSetup,
        "Diags" => BootDevice::Diagnostic,
        _ => BootDevice::None,
    }
}

fn target(d: BootDevice) -> &'static str {
    let t = match d {
        BootDevice::Pxe => "Pxe",
        BootDevice::Disk | BootDevice::DiskSafeMode | BootDevice::RemoteDisk => "Hdd",
        BootDevice::Cdrom | BootDevice::RemoteCdrom => "Cd",
        BootDevice::Removable | BootDevice::RemoteFloppy => "Usb",
        BootDevice::BiosSetup => "BiosSetup",
        BootDevice::Diagnostic => "Diags",
        _ => "None",
    };
    BOOT_TARGETS.iter().find(|x| **x == t).copied().unwrap_or("None")
}

/// The override as boot flags.
pub(super) fn flags(o: &BootOverride) -> BootFlags {
    let mut f = BootFlags::new(device(o.target), o.enabled == "Continuous", o.mode == "UEFI");
    f.valid = o.enabled != "Disabled";
    f
}

/// Boot flags as the override.
pub(super) fn override_of(f: &BootFlags) -> BootOverride {
    let t = target(f.device);
    BootOverride {
        target: t,
        enabled: match (f.valid && t != "None", f.persistent) {
            (false, _) => "Disabled",
            (true, false) => "Once",
            (true, true) => "Continuous",
        },
        mode: if f.efi { "UEFI" } else { "Legacy" },
    }
}

impl Bmc {
    pub(super) fn get_boot_options(&self, req: &Request) -> Response {
        let Ok(r) = GetSystemBootOptions::decode(&req.data) else {
            return req.respond(cc::REQUEST_DATA_LENGTH_INVALID, Vec::new());
        };
        let data = match r.param {
            param::SET_IN_PROGRESS => {
                vec![u8::from(self.host.bmc().boot_set_in_progress.load(Ordering::Relaxed))]
            }
            param::BOOT_FLAGS => flags(&self.host.boot_override()).encode(),
            param::BOOT_INFO_ACK => vec![0x00, 0x00],
            _ => return req.respond(PARAM_NOT_SUPPORTED, Vec::new()),
        };
        req.respond(cc::OK, BootOptionsReply { version: 1, param: r.param, invalid: false, data }.encode())
    }

    pub(super) fn set_boot_options(&self, req: &Request) -> Response {
        let busy = &self.host.bmc().boot_set_in_progress;
        let Ok(r) = SetSystemBootOptions::decode(&req.data) else {
            return req.respond(cc::REQUEST_DATA_LENGTH_INVALID, Vec::new());
        };
        match r.param {
            param::SET_IN_PROGRESS => match r.data.first().map(|b| b & 0x03) {
                Some(progress::SET_IN_PROGRESS) => {
                    if busy.swap(true, Ordering::Relaxed) {
                        return req.respond(SET_IN_PROGRESS_ALREADY, Vec::new());
                    }
                }
                Some(_) => busy.store(false, Ordering::Relaxed),
                None => return req.respond(cc::REQUEST_DATA_LENGTH_INVALID, Vec::new()),
            },
            param::BOOT_FLAGS => match BootFlags::decode(&r.data) {
                Ok(f) => self.host.set_boot_override(override_of(&f)),
                Err(_) => return req.respond(cc::REQUEST_DATA_LENGTH_INVALID, Vec::new()),
            },
            param::BOOT_INFO_ACK => {}
            _ => return req.respond(PARAM_NOT_SUPPORTED, Vec::new()),
        }
        req.respond(cc::OK, Vec::new())
    }

    /// FRU device 0 from the BMC's identity: what `ipmitool fru print` shows.
    fn fru_image(&self) -> Vec<u8> {
        let id = &self.host.bmc_config().identity;
        FruFields {
            chassis_serial: Some(id.serial.clone()),
            board_manufacturer: Some(id.manufacturer.clone()),
            board_product: Some(id.model.clone()),
            board_serial: Some(id.serial.clone()),
            product_manufacturer: Some(id.manufacturer.clone()),
            product_name: Some(id.model.clone()),
            product_version: Some(id.bios_version.clone()),
            product_serial: Some(id.serial.clone()),
            ..Default::default()
        }
        .encode()
    }

    pub(super) fn fru_info(&self, req: &Request) -> Response {
        match GetFruInfo::decode(&req.data) {
            Ok(GetFruInfo { device: 0 }) => {
                let size = self.fru_image().len() as u16;
                req.respond(cc::OK, FruAreaInfo { size, access: 0 }.encode())
            }
            Ok(_) => req.respond(cc::NOT_PRESENT, Vec::new()),
            Err(_) => req.respond(cc::REQUEST_DATA_LENGTH_INVALID, Vec::new()),
        }
    }

    /// Read FRU Data, at most 32 bytes per read (0xCA beyond, as small BMCs answer).
    pub(super) fn fru_read(&self, req: &Request) -> Response {
        let r = match ReadFru::decode(&req.data) {
            Ok(r) if r.device == 0 => r,
            Ok(_) => return req.respond(cc::NOT_PRESENT, Vec::new()),
            Err(_) => return req.respond(cc::REQUEST_DATA_LENGTH_INVALID, Vec::new()),
        };
        if r.count > 32 {
            return req.respond(cc::CANNOT_RETURN_REQUESTED_BYTES, Vec::new());
        }
        let img = self.fru_image();
        let start = usize::from(r.offset).min(img.len());
        let end = (start + usize::from(r.count)).min(img.len());
        let mut data = vec![(end - start) as u8];
        data.extend_from_slice(&img[start..end]);
        req.respond(cc::OK, data)
    }

    pub(super) fn get_lan_config(&self, req: &Request) -> Response {
        let Ok(r) = GetLanConfig::decode(&req.data) else {
            return req.respond(cc::REQUEST_DATA_LENGTH_INVALID, Vec::new());
        };
        // One LAN channel, number 1 (Get Channel Info says so too).
        if r.channel & 0x0F != 1 {
            return req.respond(cc::INVALID_DATA_FIELD, Vec::new());
        }
        let data = match r.param {
            lan_param::MAC_ADDRESS => {
                let mac = &self.host.bmc_config().identity.bmc_mac;
                mac.split(':').filter_map(|x| u8::from_str_radix(x, 16).ok()).collect()
            }
            lan_param::IP_SOURCE => vec![0x01],
            _ => return req.respond(PARAM_NOT_SUPPORTED, Vec::new()),
        };
        // Bit 7 of the channel byte: revision only.
        let data = if r.channel & 0x80 != 0 { Vec::new() } else { data };
        req.respond(cc::OK, lifeline_ipmi::wire::boot::LanConfigReply { revision: 0x11, data }.encode())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_and_override_agree() {
        for t in BOOT_TARGETS {
            for e in ["Once", "Continuous"] {
                for m in ["UEFI", "Legacy"] {
                    let o = BootOverride { target: t, enabled: e, mode: m };
                    let back = override_of(&flags(&o));
                    let want = if t == "None" { "Disabled" } else { e };
                    let t = if t == "UefiHttp" { "Pxe" } else { t };
                    assert_eq!((back.target, back.enabled, back.mode), (t, want, m));
                }
            }
        }
    }
}
