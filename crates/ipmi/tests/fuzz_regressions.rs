//! Inputs the fuzz targets (`crates/ipmi/fuzz`) found, kept as ordinary tests so they never come back.

use lifeline_ipmi::wire::Body;
use lifeline_ipmi::wire::user::UserName;

/// `decoders`: a user name byte above 0x7F decoded as Latin-1 but re-encoded as UTF-8, so the simulator and
/// the client disagreed on non-ASCII names (`È` came back as `Ã\u{88}`).
#[test]
fn user_name_round_trips_latin1_bytes() {
    let wire = [0xC8, 0x0E];
    let name = UserName::decode(&wire).unwrap();
    assert_eq!(name.name, "È\u{e}");
    let encoded = name.encode();
    assert_eq!(&encoded[..2], &wire);
    assert_eq!(UserName::decode(&encoded).unwrap(), name);
}

/// A name longer than 16 characters is cut at 16 characters, never inside one.
#[test]
fn user_name_encodes_sixteen_characters() {
    let name = UserName { name: "ÈÈÈÈÈÈÈÈÈÈÈÈÈÈÈÈÈÈ".into() };
    let e = name.encode();
    assert_eq!(e.len(), 16);
    assert_eq!(UserName::decode(&e).unwrap().name.chars().count(), 16);
}

/// `decoders`: a compact sensor record whose name is 6-bit packed ASCII decoded to 18 characters, but the
/// encoder cut names at 16, so the record did not survive a decode/encode/decode round trip.
#[test]
fn sdr_packed_name_longer_than_sixteen_characters_round_trips() {
    use lifeline_ipmi::wire::sdr::SdrRecord;
    let wire = CRASH_SDR;
    let r = SdrRecord::decode(wire).unwrap();
    assert!(r.common().unwrap().name.chars().count() > 16, "{r:?}");
    assert_eq!(SdrRecord::decode(&r.encode()).unwrap(), r);
}

const CRASH_SDR: &[u8] = &[
    0x02, 0x00, 0x51, 0x02, 0xfe, 0xff, 0xff, 0xff, 0x04, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xff, 0xdf, 0x51, 0xff, 0xff, 0x04, 0xff, 0x50, 0x53, 0xf8, 0xd2, 0x3f, 0xff, 0x80, 0xae, 0xae, 0x07,
    0x00, 0x00, 0x01, 0xc0, 0x00, 0x00, 0x00, 0x21, 0x44, 0x81, 0xc1, 0x53, 0x20,
];

/// `decoders`, again: a 6-bit packed name of 33 characters does not fit the 8-bit form (31 bytes at most),
/// so the encoder packs it as it came.
#[test]
fn sdr_packed_name_longer_than_the_eight_bit_form_round_trips() {
    use lifeline_ipmi::wire::sdr::SdrRecord;
    let r = SdrRecord::decode(CRASH_SDR_LONG).unwrap();
    assert!(r.common().unwrap().name.chars().count() > 31, "{r:?}");
    assert_eq!(SdrRecord::decode(&r.encode()).unwrap(), r);
}

const CRASH_SDR_LONG: &[u8] = &[
    0x20, 0x10, 0x02, 0x02, 0x81, 0xbf, 0x23, 0xff, 0xff, 0xff, 0xff, 0x32, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x08, 0xff, 0xff, 0xff, 0x09, 0x02, 0xc1, 0x2e, 0x01, 0x41, 0x7f, 0xbf, 0x11, 0x03,
    0x44, 0x2a, 0x81, 0xc1, 0xfd, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0x28, 0xff, 0xff, 0xfc, 0x28, 0xff,
    0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x10,
];
