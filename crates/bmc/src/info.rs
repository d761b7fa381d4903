//! `bmc info`, `sdr` and `fru`: what identifies a BMC and its firmware (for version drift across a fleet),
//! the sensor list as `ipmitool sdr elist` shows it, and the FRU fields as `ipmitool fru print` shows them.
//!
//! Built on what already reads these things: [`crate::fru`] (Get Device ID + FRU device 0; Redfish System,
//! Chassis, Manager) and [`crate::health`] (SDRs + readings; Redfish sensors). This module adds the BMC's
//! LAN MAC (IPMI LAN parameter 5; Redfish Manager `EthernetInterfaces`), the Redfish firmware inventory,
//! and the two operator views. Every extra read that fails is a warning on the row, never a failed row.

use lifeline_ipmi::wire::Privilege;
use lifeline_types::{BmcProtocol, Health};
use serde::Serialize;

use crate::conn::{Conn, IpmiConn, RedfishConn};
use crate::error::BmcError;
use crate::fru::{FruInfo, parse_fru};
use crate::pool::Bmc;

/// One firmware component and its version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FirmwareVersion {
    pub id: String,
    pub name: Option<String>,
    pub version: Option<String>,
}

/// What `bmc info` shows for one BMC.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BmcInfo {
    pub bmc: String,
    pub protocol: Option<BmcProtocol>,
    pub bmc_firmware: Option<String>,
    pub bios_version: Option<String>,
    pub manufacturer: Option<String>,
    pub model: Option<String>,
    pub serial: Option<String>,
    /// MAC address of the BMC's LAN channel (IPMI) or its first Ethernet interface (Redfish).
    pub bmc_mac: Option<String>,
    /// The IPMI LAN channel the MAC was read from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lan_channel: Option<u8>,
    /// IPMI: the version Get Device ID reports (`2.0`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipmi_version: Option<String>,
    /// Redfish `UpdateService/FirmwareInventory`.
    pub firmware: Vec<FirmwareVersion>,
    pub warnings: Vec<String>,
}

/// One row of `lifeline sdr` (the columns of `ipmitool sdr elist`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SdrRow {
    pub name: String,
    pub kind: String,
    pub reading: Option<f64>,
    pub units: Option<String>,
    /// `ok`, `nc`, `cr`, `nr`, `ns` as ipmitool prints them.
    pub status: &'static str,
    pub health: Health,
    pub state: Option<String>,
}

/// `lifeline sdr`.
#[derive(Debug, Clone, Serialize)]
pub struct SdrList {
    pub bmc: String,
    pub protocol: BmcProtocol,
    pub sensors: Vec<SdrRow>,
    pub warnings: Vec<String>,
}

/// `lifeline fru`: the fields in the order and with the labels of `ipmitool fru print`.
#[derive(Debug, Clone, Serialize)]
pub struct FruView {
    pub bmc: String,
    pub protocol: BmcProtocol,
    pub fields: Vec<(String, String)>,
    pub warnings: Vec<String>,
}

fn ipmitool_status(h: Health, reading: Option<f64>) -> &'static str {
    match (h, reading) {
        (Health::Unknown, None) => "ns",
        (Health::Ok, _) => "ok",
        (Health::Warning, _) => "nc",
        (Health::Critical, _) => "cr",
        _ => "ns",
    }
}

/// The labels `ipmitool fru print` uses, with the decoded value of each present field.
pub fn fru_fields(f: &FruInfo) -> Vec<(String, String)> {
    [
        ("Chassis Part Number", &f.chassis_part_number),
        ("Chassis Serial", &f.chassis_serial),
        ("Board Mfg", &f.board_manufacturer),
        ("Board Product", &f.board_product),
        ("Board Serial", &f.board_serial),
        ("Board Part Number", &f.board_part_number),
        ("Product Manufacturer", &f.product_manufacturer),
        ("Product Name", &f.product_name),
        ("Product Part Number", &f.product_part_number),
        ("Product Version", &f.product_version),
        ("Product Serial", &f.product_serial),
        ("Product Asset Tag", &f.product_asset_tag),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.as_ref().map(|v| (k.to_owned(), v.clone())))
    .collect()
}

impl IpmiConn {
    async fn info(&mut self) -> Result<BmcInfo, BmcError> {
        let inv = self.inventory().await?;
        let mut info = BmcInfo {
            bmc: inv.bmc,
            protocol: inv.protocol,
            bmc_firmware: inv.bmc_firmware,
            manufacturer: inv.manufacturer,
            model: inv.model,
            serial: inv.serial,
            warnings: inv.warnings,
            ..Default::default()
        };
        if let Ok(id) = self.session.device_id().await {
            info.ipmi_version = Some(id.ipmi_version_string());
        }
        match self.session.lan_mac().await {
            Ok(Some((ch, mac))) => {
                info.lan_channel = Some(ch);
                if mac == "00:00:00:00:00:00" {
                    info.warnings.push(format!("LAN channel {ch} reports no MAC address (all zero)"));
                } else {
                    info.bmc_mac = Some(mac);
                }
            }
            Ok(None) => info.warnings.push("no LAN channel reports a MAC address".into()),
            Err(e) => info.warnings.push(format!("LAN parameters unreadable: {e}")),
        }
        Ok(info)
    }

    async fn fru_view(&mut self) -> Result<FruView, BmcError> {
        let mut v = FruView {
            bmc: self.bmc.clone(),
            protocol: BmcProtocol::Ipmi,
            fields: Vec::new(),
            warnings: Vec::new(),
        };
        match self.read_fru().await {
            Ok(bytes) => match parse_fru(&bytes) {
                Ok(f) => {
                    v.fields = fru_fields(&f);
                    v.warnings.extend(f.warnings.iter().map(|w| format!("FRU: {w}")));
                }
                Err(e) => v.warnings.push(format!("FRU device 0: {e}")),
            },
            Err(e) => v.warnings.push(format!("FRU device 0 unreadable: {e}")),
        }
        Ok(v)
    }
}

impl RedfishConn {
    async fn info(&mut self) -> Result<BmcInfo, BmcError> {
        let inv = self.inventory().await?;
        let mut info = BmcInfo {
            bmc: inv.bmc,
            protocol: inv.protocol,
            bmc_firmware: inv.bmc_firmware,
            bios_version: inv.bios_version,
            manufacturer: inv.manufacturer,
            model: inv.model,
            serial: inv.serial,
            warnings: inv.warnings,
            ..Default::default()
        };
        match self.client.firmware_inventory().await {
            Ok(Some(l)) => {
                for it in &l.items {
                    if it.is_bmc() && info.bmc_firmware.is_none() {
                        info.bmc_firmware = it.version.clone();
                    }
                    if it.is_bios() && info.bios_version.is_none() {
                        info.bios_version = it.version.clone();
                    }
                }
                info.firmware = l
                    .items
                    .into_iter()
                    .map(|i| FirmwareVersion { id: i.id, name: i.name, version: i.version })
                    .collect();
            }
            Ok(None) => info.warnings.push("no UpdateService/FirmwareInventory".into()),
            Err(e) => info.warnings.push(format!("firmware inventory unreadable: {e}")),
        }
        match self.client.manager_docs().await {
            Ok(l) => {
                for m in &l.items {
                    match self.client.manager_mac(m).await {
                        Ok(Some(mac)) => {
                            info.bmc_mac = Some(mac);
                            break;
                        }
                        Ok(None) => {}
                        Err(e) => info.warnings.push(format!("{} EthernetInterfaces: {e}", m.odata_id)),
                    }
                }
                if info.bmc_mac.is_none() {
                    info.warnings.push("no Manager Ethernet interface reports a MAC address".into());
                }
            }
            Err(e) => info.warnings.push(format!("managers: {e}")),
        }
        Ok(info)
    }

    async fn fru_view(&mut self) -> Result<FruView, BmcError> {
        let sys = self.system().await?;
        let mut v = FruView {
            bmc: self.bmc.clone(),
            protocol: BmcProtocol::Redfish,
            fields: Vec::new(),
            warnings: Vec::new(),
        };
        let mut f = FruInfo {
            product_manufacturer: sys.manufacturer.clone(),
            product_name: sys.model.clone(),
            product_serial: sys.serial_number.clone(),
            ..Default::default()
        };
        match self.client.get_json(&sys.odata_id).await {
            Ok((doc, _)) => {
                let s = |k: &str| {
                    doc.get(k).and_then(|x| x.as_str()).filter(|s| !s.is_empty()).map(str::to_owned)
                };
                f.product_part_number = s("PartNumber").or_else(|| s("SKU"));
                f.product_asset_tag = s("AssetTag");
            }
            Err(e) => v.warnings.push(format!("system document: {e}")),
        }
        match self.client.chassis().await {
            Ok(c) => {
                if let Some(c) = c.items.first() {
                    f.chassis_serial = c.serial_number.clone();
                    f.board_manufacturer = c.manufacturer.clone();
                    f.board_product = c.model.clone();
                }
            }
            Err(e) => v.warnings.push(format!("chassis: {e}")),
        }
        v.fields = fru_fields(&f);
        Ok(v)
    }
}

impl Bmc {
    /// Firmware versions, model, serial and LAN MAC of the BMC.
    pub async fn info(&self) -> Result<BmcInfo, BmcError> {
        let limit = self.pool().opts.op_timeout;
        Ok(self
            // Get LAN Configuration Parameters is an OPERATOR command.
            .with_conn(Privilege::Operator, limit, |c| {
                Box::pin(async move {
                    match c {
                        Conn::Ipmi(c) => c.info().await,
                        Conn::Redfish(c) => c.info().await,
                    }
                })
            })
            .await?
            .1)
    }

    /// Every sensor with its reading, as `ipmitool sdr elist` lists them.
    pub async fn sdr_list(&self) -> Result<SdrList, BmcError> {
        let h = self.health().await?;
        let sensors = h
            .sensors
            .into_iter()
            .map(|s| SdrRow {
                status: ipmitool_status(s.health, s.reading),
                name: s.name,
                kind: s.kind,
                reading: s.reading,
                units: s.units,
                health: s.health,
                state: s.state,
            })
            .collect();
        Ok(SdrList { bmc: h.bmc, protocol: h.protocol, sensors, warnings: h.warnings })
    }

    /// The FRU fields, as `ipmitool fru print` shows them (Redfish: the System's and Chassis' equivalents).
    pub async fn fru(&self) -> Result<FruView, BmcError> {
        let limit = self.pool().opts.op_timeout;
        Ok(self
            .with_conn(Privilege::User, limit, |c| {
                Box::pin(async move {
                    match c {
                        Conn::Ipmi(c) => c.fru_view().await,
                        Conn::Redfish(c) => c.fru_view().await,
                    }
                })
            })
            .await?
            .1)
    }
}
