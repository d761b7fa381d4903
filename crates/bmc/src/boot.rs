//! The next boot device: IPMI boot flags (System Boot Options parameter 5, written inside the
//! set-in-progress handshake) or Redfish `Boot.BootSourceOverride*` (PATCH with `If-Match` when the BMC
//! gives an ETag, the value chosen from its `@Redfish.AllowableValues`).
//!
//! Never assumed: every change is read back and the report says what the BMC now says. BMCs differ in what
//! they keep (OpenIPMI keeps only the device; sushy-emulator turns every override `Continuous`), so the
//! report separates "the device took" from "everything took" and lists each difference in words.

use lifeline_ipmi::wire::Privilege;
use lifeline_ipmi::wire::boot::{BootDevice, BootFlags};
use lifeline_redfish::RedfishError;
use lifeline_types::BmcProtocol;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::conn::{Conn, IpmiConn, RedfishConn, ipmi_err, rf_err};
use crate::error::BmcError;
use crate::pool::Bmc;

/// A boot device, in the operator's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BootTarget {
    /// No override: the firmware's own boot order.
    None,
    Pxe,
    Disk,
    /// The firmware setup screen.
    Bios,
    Cdrom,
    Usb,
}

impl std::fmt::Display for BootTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::None => "none",
            Self::Pxe => "pxe",
            Self::Disk => "disk",
            Self::Bios => "bios",
            Self::Cdrom => "cdrom",
            Self::Usb => "usb",
        })
    }
}

impl BootTarget {
    fn ipmi(self) -> BootDevice {
        match self {
            Self::None => BootDevice::None,
            Self::Pxe => BootDevice::Pxe,
            Self::Disk => BootDevice::Disk,
            Self::Bios => BootDevice::BiosSetup,
            Self::Cdrom => BootDevice::Cdrom,
            Self::Usb => BootDevice::Removable,
        }
    }

    fn from_ipmi(d: BootDevice) -> Option<Self> {
        Some(match d {
            BootDevice::None => Self::None,
            BootDevice::Pxe => Self::Pxe,
            BootDevice::Disk | BootDevice::DiskSafeMode | BootDevice::RemoteDisk => Self::Disk,
            BootDevice::BiosSetup => Self::Bios,
            BootDevice::Cdrom | BootDevice::RemoteCdrom => Self::Cdrom,
            BootDevice::Removable | BootDevice::RemoteFloppy => Self::Usb,
            _ => return None,
        })
    }

    /// Redfish `BootSourceOverrideTarget` spellings, preferred first.
    fn redfish(self) -> &'static [&'static str] {
        match self {
            Self::None => &["None"],
            Self::Pxe => &["Pxe"],
            Self::Disk => &["Hdd"],
            Self::Bios => &["BiosSetup"],
            Self::Cdrom => &["Cd"],
            Self::Usb => &["Usb", "Floppy"],
        }
    }

    fn from_redfish(s: &str) -> Option<Self> {
        Some(match s {
            "None" => Self::None,
            "Pxe" => Self::Pxe,
            "Hdd" => Self::Disk,
            "BiosSetup" => Self::Bios,
            "Cd" => Self::Cdrom,
            "Usb" | "Floppy" => Self::Usb,
            _ => return None,
        })
    }
}

/// Firmware interface of the override.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BootMode {
    Uefi,
    Legacy,
}

/// What to set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootRequest {
    pub target: BootTarget,
    /// Every boot from now on (else the next boot only).
    pub persistent: bool,
    /// `None`: leave the mode as the BMC has it.
    pub mode: Option<BootMode>,
}

/// The override as the BMC reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BootSettings {
    /// `None` when the BMC names a device Lifeline has no word for (see `bmc_value`).
    pub target: Option<BootTarget>,
    /// The BMC's own words (`Pxe`, `Force PXE`).
    pub bmc_value: String,
    /// `once`, `persistent`, `disabled` (Redfish), or `not-valid` (IPMI flags without their valid bit).
    pub enabled: String,
    pub mode: Option<BootMode>,
    /// Redfish `BootSourceOverrideTarget@Redfish.AllowableValues`, when offered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed: Option<Vec<String>>,
    /// IPMI parameter 5 data as hex (compare with `ipmitool chassis bootparam get 5`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
}

/// `boot show`.
#[derive(Debug, Clone, Serialize)]
pub struct BootShow {
    pub bmc: String,
    pub protocol: BmcProtocol,
    pub settings: BootSettings,
}

/// Did the change take?
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BootConfirmation {
    /// Device, persistence and mode read back as asked.
    Confirmed,
    /// The device reads back as asked; something else does not (see `differences`).
    DeviceOnly,
    /// The device does not read back as asked.
    NotApplied,
}

/// A boot device change and its read-back.
#[derive(Debug, Clone, Serialize)]
pub struct BootReport {
    pub bmc: String,
    pub protocol: BmcProtocol,
    pub requested: BootRequest,
    pub before: BootSettings,
    pub now: BootSettings,
    /// What went on the wire, in words.
    pub sent: Vec<String>,
    pub confirmation: BootConfirmation,
    pub differences: Vec<String>,
}

impl BootReport {
    pub fn applied(&self) -> bool {
        self.confirmation != BootConfirmation::NotApplied
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn ipmi_settings(f: &BootFlags, data: &[u8]) -> BootSettings {
    BootSettings {
        target: BootTarget::from_ipmi(f.device),
        bmc_value: f.device.describe().to_owned(),
        enabled: match (f.valid, f.persistent) {
            (false, _) => "not-valid",
            (true, false) => "once",
            (true, true) => "persistent",
        }
        .into(),
        mode: Some(if f.efi { BootMode::Uefi } else { BootMode::Legacy }),
        allowed: None,
        raw: Some(hex(data)),
    }
}

fn redfish_settings(sys: &Value) -> BootSettings {
    let b = sys.get("Boot").cloned().unwrap_or(Value::Null);
    let s = |k: &str| b.get(k).and_then(Value::as_str).map(str::to_owned);
    let value = s("BootSourceOverrideTarget").unwrap_or_default();
    BootSettings {
        target: BootTarget::from_redfish(&value),
        bmc_value: value,
        enabled: match s("BootSourceOverrideEnabled").as_deref() {
            Some("Once") => "once".into(),
            Some("Continuous") => "persistent".into(),
            Some("Disabled") => "disabled".into(),
            Some(other) => other.to_ascii_lowercase(),
            None => "unknown".into(),
        },
        mode: match s("BootSourceOverrideMode").as_deref() {
            Some("UEFI") => Some(BootMode::Uefi),
            Some("Legacy") => Some(BootMode::Legacy),
            _ => None,
        },
        allowed: b
            .get("BootSourceOverrideTarget@Redfish.AllowableValues")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect()),
        raw: None,
    }
}

/// Compares the read-back with the request.
fn judge(req: &BootRequest, now: &BootSettings) -> (BootConfirmation, Vec<String>) {
    if now.target != Some(req.target) {
        return (
            BootConfirmation::NotApplied,
            vec![format!("the BMC reports boot device `{}`, not {}", now.bmc_value, req.target)],
        );
    }
    let mut diffs = Vec::new();
    let want = if req.persistent { "persistent" } else { "once" };
    if req.target != BootTarget::None && now.enabled != want {
        diffs.push(format!("asked for {want}, the BMC reports {}", now.enabled));
    }
    if let Some(m) = req.mode
        && now.mode != Some(m)
    {
        let seen = now.mode.map(|m| format!("{m:?}").to_lowercase()).unwrap_or_else(|| "nothing".into());
        diffs.push(format!("asked for {} mode, the BMC reports {seen}", format!("{m:?}").to_lowercase()));
    }
    let c = if diffs.is_empty() { BootConfirmation::Confirmed } else { BootConfirmation::DeviceOnly };
    (c, diffs)
}

impl IpmiConn {
    async fn boot_read(&self) -> Result<(BootFlags, BootSettings), BmcError> {
        let (r, f) = self.session.boot_flags().await.map_err(ipmi_err(&self.bmc))?;
        Ok((f, ipmi_settings(&f, &r.data)))
    }

    async fn boot_set(&self, req: &BootRequest) -> Result<BootReport, BmcError> {
        let (old, before) = self.boot_read().await?;
        let efi = match req.mode {
            Some(m) => m == BootMode::Uefi,
            None => old.efi,
        };
        let mut flags = BootFlags::new(req.target.ipmi(), req.persistent, efi);
        // Keep console redirection and BIOS verbosity (bytes 3-5); never write back CMOS clear or the locks.
        flags.rest = [0, old.rest[1], old.rest[2], old.rest[3]];
        if req.target == BootTarget::None {
            flags.valid = false;
        }
        let w = self.session.set_boot_flags(&flags).await.map_err(ipmi_err(&self.bmc))?;
        let mut sent = Vec::new();
        if w.handshake {
            sent.push("Set System Boot Options param 0 = set in progress".to_owned());
        }
        sent.push(format!(
            "Set System Boot Options param 5 = {}",
            hex(&lifeline_ipmi::wire::Body::encode(&flags))
        ));
        if w.handshake {
            sent.push("Set System Boot Options param 0 = set complete".to_owned());
        }
        let (_, now) = self.boot_read().await?;
        let (confirmation, differences) = judge(req, &now);
        Ok(BootReport {
            bmc: self.bmc.clone(),
            protocol: BmcProtocol::Ipmi,
            requested: *req,
            before,
            now,
            sent,
            confirmation,
            differences,
        })
    }
}

impl RedfishConn {
    async fn boot_read(&mut self) -> Result<(String, Value, Option<String>), BmcError> {
        let sys = self.system().await?;
        let (v, etag) = self.client.get_json_etag(&sys.odata_id).await.map_err(rf_err(&self.bmc))?;
        Ok((sys.odata_id, v, etag))
    }

    pub(crate) async fn boot_set(&mut self, req: &BootRequest) -> Result<BootReport, BmcError> {
        let (path, doc, etag) = self.boot_read().await?;
        let before = redfish_settings(&doc);
        let value = match &before.allowed {
            Some(allowed) => {
                req.target.redfish().iter().find(|c| allowed.iter().any(|a| a == *c)).copied().ok_or_else(
                    || BmcError::NotOffered {
                        bmc: self.bmc.clone(),
                        what: format!(
                            "boot device {} ({}) is not among the BMC's BootSourceOverrideTarget values: {}",
                            req.target,
                            req.target.redfish().join(" or "),
                            allowed.join(", ")
                        ),
                    },
                )?
            }
            None => req.target.redfish()[0],
        };
        let mut boot = json!({ "BootSourceOverrideTarget": value });
        boot["BootSourceOverrideEnabled"] = json!(match (req.target, req.persistent) {
            (BootTarget::None, _) => "Disabled",
            (_, true) => "Continuous",
            (_, false) => "Once",
        });
        if let Some(m) = req.mode {
            boot["BootSourceOverrideMode"] = json!(match m {
                BootMode::Uefi => "UEFI",
                BootMode::Legacy => "Legacy",
            });
        }
        let body = json!({ "Boot": boot });
        let mut sent = vec![format!(
            "PATCH {path} {body}{}",
            etag.as_deref().map(|e| format!(" (If-Match {e})")).unwrap_or_default()
        )];
        match self.client.patch_json(&path, &body, etag.as_deref()).await {
            Ok(_) => {}
            // The resource changed between our read and our write (412): read it again and write once more.
            Err(RedfishError::Status { status: 412, .. }) => {
                let (_, _, fresh) = self.boot_read().await?;
                sent.push(format!("PATCH again after 412 (If-Match {})", fresh.as_deref().unwrap_or("-")));
                self.client.patch_json(&path, &body, fresh.as_deref()).await.map_err(rf_err(&self.bmc))?;
            }
            Err(e) => return Err(rf_err(&self.bmc)(e)),
        }
        let (_, after, _) = self.boot_read().await?;
        let now = redfish_settings(&after);
        let (confirmation, differences) = judge(req, &now);
        Ok(BootReport {
            bmc: self.bmc.clone(),
            protocol: BmcProtocol::Redfish,
            requested: *req,
            before,
            now,
            sent,
            confirmation,
            differences,
        })
    }
}

impl Bmc {
    /// The boot override as the BMC reports it.
    pub async fn boot_show(&self) -> Result<BootShow, BmcError> {
        let limit = self.pool().opts.op_timeout;
        let name = self.name().to_owned();
        let (protocol, settings) = self
            // Get System Boot Options is an OPERATOR command (IPMI 2.0 table G-1; ipmi_sim enforces it).
            .with_conn(Privilege::Operator, limit, |c| {
                Box::pin(async move {
                    match c {
                        Conn::Ipmi(c) => Ok(c.boot_read().await?.1),
                        Conn::Redfish(c) => Ok(redfish_settings(&c.boot_read().await?.1)),
                    }
                })
            })
            .await?;
        Ok(BootShow { bmc: name, protocol, settings })
    }

    /// Sets the boot override and reads it back (the caller audits).
    pub async fn boot_set(&self, req: BootRequest) -> Result<BootReport, BmcError> {
        let limit = self.pool().opts.op_timeout;
        Ok(self
            .with_conn(Privilege::Administrator, limit, move |c| {
                Box::pin(async move {
                    match c {
                        Conn::Ipmi(c) => c.boot_set(&req).await,
                        Conn::Redfish(c) => c.boot_set(&req).await,
                    }
                })
            })
            .await?
            .1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judged_by_what_the_bmc_reports() {
        let req = BootRequest { target: BootTarget::Pxe, persistent: false, mode: None };
        // ipmi_sim keeps only the device selector: the valid bit reads back clear.
        let f = lifeline_ipmi::wire::Body::decode(&[0x00, 0x04, 0, 0, 0]).unwrap();
        let now = ipmi_settings(&f, &[0x00, 0x04, 0, 0, 0]);
        assert_eq!(now.raw.as_deref(), Some("0004000000"));
        let (c, d) = judge(&req, &now);
        assert_eq!(c, BootConfirmation::DeviceOnly);
        assert_eq!(d, vec!["asked for once, the BMC reports not-valid".to_owned()]);
        // sushy-emulator: always Continuous.
        let sys =
            json!({"Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Continuous"}});
        let (c, _) = judge(&req, &redfish_settings(&sys));
        assert_eq!(c, BootConfirmation::DeviceOnly);
        let (c, _) = judge(&BootRequest { persistent: true, ..req }, &redfish_settings(&sys));
        assert_eq!(c, BootConfirmation::Confirmed);
        let (c, _) = judge(&BootRequest { target: BootTarget::Bios, ..req }, &redfish_settings(&sys));
        assert_eq!(c, BootConfirmation::NotApplied);
    }
}
