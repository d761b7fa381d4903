//! FRU information (Platform Management FRU Information Storage Definition v1.0): the encoder a BMC uses
//! to lay out its FRU device 0, and the Get FRU Inventory Area Info / Read FRU Data codecs.
//!
//! Why here: the simulator serves FRU data and must not link the client crates; the client's lenient
//! parser lives in `lifeline-bmc` (`fru::parse_fru`) and is property-tested against this encoder.

use super::{Body, Command, DecodeError, Reader, netfn};

/// The fields a FRU carries that operators look at (8-bit ASCII on the wire).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FruFields {
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
}

fn type_length(out: &mut Vec<u8>, s: &Option<String>) {
    let mut b: Vec<u8> = s
        .as_deref()
        .unwrap_or("")
        .chars()
        .filter(|c| (' '..='~').contains(c))
        .map(|c| c as u8)
        .take(62)
        .collect();
    // 0xC1 (one 8-bit character) is the end-of-fields marker: pad single characters.
    if b.len() == 1 {
        b.push(b' ');
    }
    out.push(0xC0 | b.len() as u8);
    out.extend(b);
}

fn finish(mut a: Vec<u8>) -> Vec<u8> {
    a.push(0xC1);
    while !(a.len() + 1).is_multiple_of(8) {
        a.push(0);
    }
    a[1] = ((a.len() + 1) / 8) as u8;
    let sum = a.iter().fold(0u8, |s, x| s.wrapping_add(*x));
    a.push(0u8.wrapping_sub(sum));
    a
}

impl FruFields {
    /// The FRU device image: common header, chassis, board and product areas, each checksummed.
    pub fn encode(&self) -> Vec<u8> {
        let mut chassis = vec![1, 0, 0x17];
        type_length(&mut chassis, &self.chassis_part_number);
        type_length(&mut chassis, &self.chassis_serial);
        let mut board = vec![1, 0, 0, 0, 0, 0];
        for f in [&self.board_manufacturer, &self.board_product, &self.board_serial, &self.board_part_number]
        {
            type_length(&mut board, f);
        }
        type_length(&mut board, &None);
        let mut product = vec![1, 0, 0];
        for f in [
            &self.product_manufacturer,
            &self.product_name,
            &self.product_part_number,
            &self.product_version,
            &self.product_serial,
            &self.product_asset_tag,
        ] {
            type_length(&mut product, f);
        }
        type_length(&mut product, &None);
        let (chassis, board, product) = (finish(chassis), finish(board), finish(product));
        let c_off = 1u8;
        let b_off = c_off + (chassis.len() / 8) as u8;
        let p_off = b_off + (board.len() / 8) as u8;
        let mut header = vec![1, 0, c_off, b_off, p_off, 0, 0];
        let sum = header.iter().fold(0u8, |s, x| s.wrapping_add(*x));
        header.push(0u8.wrapping_sub(sum));
        [header, chassis, board, product].concat()
    }
}

/// Get FRU Inventory Area Info (Storage 0x10).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GetFruInfo {
    pub device: u8,
}

impl Body for GetFruInfo {
    fn encode(&self) -> Vec<u8> {
        vec![self.device]
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        Ok(Self { device: Reader::new(b, "Get FRU Inventory Area Info").u8()? })
    }
}

impl Command for GetFruInfo {
    const NETFN: u8 = netfn::STORAGE;
    const CMD: u8 = 0x10;
    type Response = FruAreaInfo;
}

/// The FRU area's size and access mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FruAreaInfo {
    pub size: u16,
    /// Bit 0: accessed by words (else bytes).
    pub access: u8,
}

impl Body for FruAreaInfo {
    fn encode(&self) -> Vec<u8> {
        let [lo, hi] = self.size.to_le_bytes();
        vec![lo, hi, self.access]
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "FRU Inventory Area Info");
        Ok(Self { size: r.u16le()?, access: r.opt_u8().unwrap_or(0) })
    }
}

/// Read FRU Data (Storage 0x11).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadFru {
    pub device: u8,
    pub offset: u16,
    pub count: u8,
}

impl Body for ReadFru {
    fn encode(&self) -> Vec<u8> {
        let [lo, hi] = self.offset.to_le_bytes();
        vec![self.device, lo, hi, self.count]
    }
    fn decode(b: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(b, "Read FRU Data");
        Ok(Self { device: r.u8()?, offset: r.u16le()?, count: r.u8()? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn areas_are_checksummed_and_aligned(a in proptest::option::of("[ -~]{0,70}"), b in proptest::option::of("[ -~]{0,70}")) {
            let f = FruFields { board_serial: a, product_name: b, ..Default::default() };
            let img = f.encode();
            prop_assert_eq!(img.len() % 8, 0);
            prop_assert_eq!(img[..8].iter().fold(0u8, |s, x| s.wrapping_add(*x)), 0);
            for off in [img[2], img[3], img[4]] {
                let start = off as usize * 8;
                let len = img[start + 1] as usize * 8;
                prop_assert_eq!(img[start..start + len].iter().fold(0u8, |s, x| s.wrapping_add(*x)), 0);
            }
        }

        #[test]
        fn requests_round_trip(device: u8, offset: u16, count: u8, size: u16, access: u8) {
            let r = ReadFru { device, offset, count };
            prop_assert_eq!(ReadFru::decode(&r.encode()).unwrap(), r);
            let i = FruAreaInfo { size, access };
            prop_assert_eq!(FruAreaInfo::decode(&i.encode()).unwrap(), i);
            prop_assert_eq!(GetFruInfo::decode(&GetFruInfo { device }.encode()).unwrap(), GetFruInfo { device });
        }

        #[test]
        fn never_panics(b in proptest::collection::vec(any::<u8>(), 0..8)) {
            let _ = ReadFru::decode(&b);
            let _ = FruAreaInfo::decode(&b);
            let _ = GetFruInfo::decode(&b);
        }
    }
}
