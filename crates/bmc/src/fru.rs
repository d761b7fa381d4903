//! FRU / inventory: model, manufacturer, serial, part number and firmware versions, from IPMI (Get Device
//! ID + FRU device 0 read in small pieces and parsed here) or Redfish (ComputerSystem, Chassis, Manager).
//!
//! The FRU parser ([`parse_fru`]) is ours because neither `ipmi-rs` nor our `ipmi` crate reads FRU data; it
//! is a pure function over bytes from the BMC, lenient (a bad area checksum is a warning, a truncated
//! field ends its area) and never panics (property test + fuzz target `fuzz/fuzz_targets/fru.rs`).

use lifeline_ipmi::wire::cc;
use lifeline_types::BmcProtocol;
use serde::Serialize;

use crate::conn::{IpmiConn, RedfishConn, rf_err};
use crate::error::BmcError;

/// What an operator needs to identify the hardware behind a BMC.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Inventory {
    pub bmc: String,
    pub protocol: Option<BmcProtocol>,
    pub manufacturer: Option<String>,
    pub model: Option<String>,
    pub serial: Option<String>,
    pub part_number: Option<String>,
    /// BMC firmware version.
    pub bmc_firmware: Option<String>,
    pub bios_version: Option<String>,
    pub uuid: Option<String>,
    /// IANA enterprise number of the BMC vendor (IPMI Get Device ID).
    pub iana: Option<u32>,
    pub warnings: Vec<String>,
}

/// Decoded FRU information (IPMI Platform Management FRU Information Storage Definition v1.0).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FruInfo {
    pub chassis_part_number: Option<String>,
    pub chassis_serial: Option<String>,
    pub board_manufacturer: Option<String>,
    pub board_product: Option<String>,
    pub board_serial: Option<String>,
    pub board_part_number: Option<String>,
    pub product_manufacturer: Option<String>,
    pub product_name: Option<String>,
    pub product_part_number: Option<String>,
    pub product_version: Option<String>,
    pub product_serial: Option<String>,
    pub product_asset_tag: Option<String>,
    pub warnings: Vec<String>,
}

fn checksum_ok(b: &[u8]) -> bool {
    b.iter().fold(0u8, |a, x| a.wrapping_add(*x)) == 0
}

/// Decode one type/length field; returns the text (if any) and the bytes consumed, `None` at end marker.
fn field(b: &[u8]) -> Option<(Option<String>, usize)> {
    let tl = *b.first()?;
    if tl == 0xC1 {
        return None;
    }
    let len = (tl & 0x3F) as usize;
    let data = b.get(1..1 + len)?;
    let text = match tl >> 6 {
        // Binary: shown as hex.
        0 => data.iter().map(|x| format!("{x:02x}")).collect(),
        // BCD plus: digits, space, dash, dot.
        1 => data
            .iter()
            .flat_map(|x| [x >> 4, x & 0x0F])
            .map(|d| match d {
                0..=9 => (b'0' + d) as char,
                0xA => ' ',
                0xB => '-',
                0xC => '.',
                _ => '?',
            })
            .collect(),
        // 6-bit packed ASCII: 4 characters per 3 bytes.
        2 => {
            let mut s = String::new();
            for chunk in data.chunks(3) {
                let mut v = 0u32;
                for (i, x) in chunk.iter().enumerate() {
                    v |= (*x as u32) << (8 * i);
                }
                for i in 0..(chunk.len() * 8 / 6) {
                    s.push((((v >> (6 * i)) & 0x3F) as u8 + 0x20) as char);
                }
            }
            s
        }
        // 8-bit ASCII + Latin-1.
        _ => data.iter().map(|&x| x as char).collect(),
    };
    let text = text.trim_matches(|c: char| c == '\0' || c.is_whitespace()).to_owned();
    Some(((!text.is_empty()).then_some(text), 1 + len))
}

/// Up to `n` fields starting at `b`.
fn fields(b: &[u8], n: usize) -> Vec<Option<String>> {
    let mut out = Vec::with_capacity(n);
    let mut at = 0;
    while out.len() < n {
        match b.get(at..).and_then(field) {
            Some((f, used)) => {
                out.push(f);
                at += used;
            }
            None => break,
        }
    }
    out.resize(n, None);
    out
}

/// An area at `offset` (in 8-byte units) whose byte 1 is its length in 8-byte units.
fn area<'a>(data: &'a [u8], offset_units: u8, name: &str, warnings: &mut Vec<String>) -> Option<&'a [u8]> {
    if offset_units == 0 {
        return None;
    }
    let start = offset_units as usize * 8;
    let len = *data.get(start + 1)? as usize * 8;
    let Some(a) = data.get(start..start + len.max(2)) else {
        warnings.push(format!("{name} area runs past the end of the FRU data"));
        return data.get(start..);
    };
    if len > 0 && !checksum_ok(a) {
        warnings.push(format!("{name} area checksum mismatch"));
    }
    Some(a)
}

/// Parse FRU data read from offset 0.
pub fn parse_fru(data: &[u8]) -> Result<FruInfo, &'static str> {
    let header = data.get(..8).ok_or("FRU data shorter than its common header")?;
    if header[0] & 0x0F != 1 {
        return Err("unknown FRU common header format version");
    }
    let mut info = FruInfo::default();
    if !checksum_ok(header) {
        info.warnings.push("common header checksum mismatch".into());
    }
    let mut w = Vec::new();
    if let Some(a) = area(data, header[2], "chassis", &mut w) {
        let f = fields(a.get(3..).unwrap_or_default(), 2);
        info.chassis_part_number = f[0].clone();
        info.chassis_serial = f[1].clone();
    }
    if let Some(a) = area(data, header[3], "board", &mut w) {
        let f = fields(a.get(6..).unwrap_or_default(), 4);
        info.board_manufacturer = f[0].clone();
        info.board_product = f[1].clone();
        info.board_serial = f[2].clone();
        info.board_part_number = f[3].clone();
    }
    if let Some(a) = area(data, header[4], "product", &mut w) {
        let f = fields(a.get(3..).unwrap_or_default(), 6);
        info.product_manufacturer = f[0].clone();
        info.product_name = f[1].clone();
        info.product_part_number = f[2].clone();
        info.product_version = f[3].clone();
        info.product_serial = f[4].clone();
        info.product_asset_tag = f[5].clone();
    }
    info.warnings.extend(w);
    Ok(info)
}

/// Encode the fields as a FRU image (tests and the fuzz corpus): the same encoder the simulator serves
/// FRU device 0 with ([`lifeline_ipmi::wire::fru::FruFields`]).
pub fn encode_fru(info: &FruInfo) -> Vec<u8> {
    lifeline_ipmi::wire::fru::FruFields {
        chassis_part_number: info.chassis_part_number.clone(),
        chassis_serial: info.chassis_serial.clone(),
        board_manufacturer: info.board_manufacturer.clone(),
        board_product: info.board_product.clone(),
        board_serial: info.board_serial.clone(),
        board_part_number: info.board_part_number.clone(),
        product_manufacturer: info.product_manufacturer.clone(),
        product_name: info.product_name.clone(),
        product_part_number: info.product_part_number.clone(),
        product_version: info.product_version.clone(),
        product_serial: info.product_serial.clone(),
        product_asset_tag: info.product_asset_tag.clone(),
    }
    .encode()
}

/// Vendor names of the IANA enterprise numbers BMCs report (Get Device ID).
pub fn iana_vendor(iana: u32) -> Option<&'static str> {
    Some(match iana {
        2 => "IBM",
        11 => "HPE",
        343 => "Intel",
        674 => "Dell",
        2011 => "Huawei",
        7244 => "Quanta",
        10876 => "Supermicro",
        19046 => "Lenovo",
        20974 => "American Megatrends",
        40981 => "Gigabyte",
        47196 => "HPE",
        49622 => "OpenBMC",
        5703 => "NVIDIA",
        _ => return None,
    })
}

const FRU_CHUNK: u8 = 16;
const FRU_MAX: usize = 4096;

impl IpmiConn {
    /// FRU device 0, read in pieces (OpenIPMI and many BMCs refuse more than ~20 bytes per read).
    pub(crate) async fn read_fru(&self) -> Result<Vec<u8>, String> {
        let s = &self.session;
        // Get FRU Inventory Area Info (Storage 0x10).
        let r = s.raw(0x0A, 0x10, vec![0]).await.map_err(|e| e.to_string())?;
        if r.completion != cc::OK || r.data.len() < 2 {
            return Err(format!("Get FRU Inventory Area Info: completion code {:#04x}", r.completion));
        }
        let size = (u16::from_le_bytes([r.data[0], r.data[1]]) as usize).min(FRU_MAX);
        let word_access = r.data.get(2).is_some_and(|a| a & 1 != 0);
        let mut out = Vec::with_capacity(size);
        let mut chunk = FRU_CHUNK;
        while out.len() < size {
            let want = (chunk as usize).min(size - out.len()) as u8;
            let offset = if word_access { out.len() / 2 } else { out.len() } as u16;
            let [lo, hi] = offset.to_le_bytes();
            let r = s.raw(0x0A, 0x11, vec![0, lo, hi, want]).await.map_err(|e| e.to_string())?;
            match r.completion {
                cc::OK if r.data.len() > 1 => {
                    let n = (r.data[0] as usize).min(r.data.len() - 1);
                    let n = if word_access { n * 2 } else { n }.min(r.data.len() - 1);
                    if n == 0 {
                        break;
                    }
                    out.extend_from_slice(&r.data[1..1 + n]);
                }
                cc::CANNOT_RETURN_REQUESTED_BYTES if chunk > 1 => chunk /= 2,
                code => return Err(format!("Read FRU Data at {offset}: completion code {code:#04x}")),
            }
        }
        Ok(out)
    }

    pub(crate) async fn inventory(&mut self) -> Result<Inventory, BmcError> {
        let id = self.session.device_id().await.map_err(crate::conn::ipmi_err(&self.bmc))?;
        let mut inv = Inventory {
            bmc: self.bmc.clone(),
            protocol: Some(BmcProtocol::Ipmi),
            bmc_firmware: Some(id.firmware_version()),
            iana: Some(id.manufacturer_id),
            manufacturer: match (iana_vendor(id.manufacturer_id), id.manufacturer_id) {
                (Some(v), _) => Some(v.to_owned()),
                (None, 0) => None,
                (None, n) => Some(format!("IANA {n}")),
            },
            model: Some(format!("product {:#06x}", id.product_id)),
            ..Default::default()
        };
        match self.read_fru().await {
            Ok(bytes) => match parse_fru(&bytes) {
                Ok(f) => {
                    inv.manufacturer =
                        f.product_manufacturer.clone().or(f.board_manufacturer.clone()).or(inv.manufacturer);
                    inv.model = f.product_name.clone().or(f.board_product.clone()).or(inv.model);
                    inv.serial =
                        f.product_serial.clone().or(f.board_serial.clone()).or(f.chassis_serial.clone());
                    inv.part_number = f.product_part_number.clone().or(f.board_part_number.clone());
                    inv.warnings.extend(f.warnings.iter().map(|w| format!("FRU: {w}")));
                }
                Err(e) => inv.warnings.push(format!("FRU: {e}")),
            },
            Err(e) => inv.warnings.push(format!("FRU unreadable: {e}")),
        }
        Ok(inv)
    }
}

impl RedfishConn {
    pub(crate) async fn inventory(&mut self) -> Result<Inventory, BmcError> {
        let sys = self.system().await?;
        let mut inv = Inventory {
            bmc: self.bmc.clone(),
            protocol: Some(BmcProtocol::Redfish),
            manufacturer: sys.manufacturer.clone(),
            model: sys.model.clone(),
            serial: sys.serial_number.clone(),
            uuid: sys.uuid.clone(),
            ..Default::default()
        };
        // Fields the typed model does not carry, read leniently from the raw document.
        match self.client.get_json(&sys.odata_id).await {
            Ok((v, _)) => {
                let s =
                    |k: &str| v.get(k).and_then(|x| x.as_str()).filter(|s| !s.is_empty()).map(str::to_owned);
                inv.bios_version = s("BiosVersion");
                inv.part_number = s("PartNumber").or_else(|| s("SKU"));
            }
            Err(e) => inv.warnings.push(format!("system document: {e}")),
        }
        match self.client.managers().await {
            Ok(m) => inv.bmc_firmware = m.items.iter().find_map(|m| m.firmware_version.clone()),
            Err(e) => inv.warnings.push(format!("managers: {}", rf_err(&self.bmc)(e))),
        }
        if inv.serial.is_none()
            && let Ok(c) = self.client.chassis().await
        {
            inv.serial = c.items.iter().find_map(|c| c.serial_number.clone());
        }
        Ok(inv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn opt_text() -> impl Strategy<Value = Option<String>> {
        proptest::option::of(
            "[ -~]{1,40}".prop_map(|s| s.trim().to_owned()).prop_filter("non-empty", |s| !s.is_empty()),
        )
    }

    #[test]
    fn parses_an_encoded_fru() {
        let info = FruInfo {
            board_manufacturer: Some("Supermicro".into()),
            board_serial: Some("WM199S000123".into()),
            product_name: Some("SYS-821GE-TNHR".into()),
            product_serial: Some("S123456".into()),
            ..Default::default()
        };
        assert_eq!(parse_fru(&encode_fru(&info)).unwrap(), info);
    }

    #[test]
    fn packed_and_bcd_fields() {
        // "IPMI" in 6-bit packed ASCII: 0x29 0xDC 0xA6 (the spec's example).
        assert_eq!(field(&[0x83, 0x29, 0xDC, 0xA6]).unwrap().0.as_deref(), Some("IPMI"));
        assert_eq!(field(&[0x42, 0x12, 0xB3]).unwrap().0.as_deref(), Some("12-3"));
        assert_eq!(field(&[0xC1]), None);
    }

    #[test]
    fn bad_checksum_is_a_warning() {
        let mut b = encode_fru(&FruInfo { product_name: Some("X".into()), ..Default::default() });
        let n = b.len();
        b[n - 3] ^= 0x55;
        let f = parse_fru(&b).unwrap();
        assert!(f.warnings.iter().any(|w| w.contains("checksum")), "{:?}", f.warnings);
        assert!(parse_fru(&[1, 2]).is_err());
    }

    proptest! {
        #[test]
        fn round_trips(a in opt_text(), b in opt_text(), c in opt_text(), d in opt_text(), e in opt_text(), f in opt_text()) {
            let info = FruInfo {
                chassis_serial: a, board_manufacturer: b, board_part_number: c,
                product_name: d, product_serial: e, product_asset_tag: f, ..Default::default()
            };
            prop_assert_eq!(parse_fru(&encode_fru(&info)).unwrap(), info);
        }

        #[test]
        fn never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let _ = parse_fru(&bytes);
        }
    }
}
