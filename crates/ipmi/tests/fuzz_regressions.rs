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
