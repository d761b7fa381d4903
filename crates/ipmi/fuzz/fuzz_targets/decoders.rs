//! Command bodies a BMC answers with: every one that decodes must re-encode to bytes that decode to the
//! same value (the simulator encodes with the same codecs the client decodes with), cipher suite records
//! survive an encode/parse round trip, and a full sensor's conversion inverts for unsigned readings.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lifeline_ipmi::wire::{Body, app, chassis, payload, sdr, sel, sensor, user};

/// `decode(encode(decode(x))) == decode(x)` for one body type.
fn round_trip<T: Body + PartialEq + std::fmt::Debug>(data: &[u8]) {
    if let Ok(v) = T::decode(data) {
        let again = T::decode(&v.encode());
        assert_eq!(again.as_ref(), Ok(&v), "{} does not round-trip", std::any::type_name::<T>());
    }
}

fn full_sensor(f: &sdr::FullSensor, raws: &[u8]) {
    for &raw in raws.iter().chain(&[0, 1, 127, 128, 255]) {
        let v = f.convert(raw);
        // Unsigned readings (units1 bits 7:6 = 0) of a linear sensor with M != 0 invert exactly.
        if f.common.units1 >> 6 == 0 && f.m != 0 && f.linearization == 0 && v.is_finite() {
            assert_eq!(f.raw_for(v), raw, "raw_for(convert({raw})) with {f:?}");
        }
        let _ = f.raw_for(f64::from(raw));
    }
    let _ = f.raw_for(f64::NAN);
    let _ = f.raw_for(f64::INFINITY);
}

fuzz_target!(|data: &[u8]| {
    round_trip::<app::ChannelCipherSuites>(data);
    round_trip::<app::GetChannelCipherSuites>(data);
    round_trip::<app::SessionPrivilege>(data);
    round_trip::<app::SetSessionPrivilege>(data);
    round_trip::<app::CloseSession>(data);
    round_trip::<app::DeviceId>(data);
    round_trip::<app::ChannelAuthCaps>(data);
    round_trip::<app::GetChannelAuthCaps>(data);
    round_trip::<sdr::Reservation>(data);
    round_trip::<sdr::SdrRepositoryInfo>(data);
    round_trip::<sdr::GetSdr>(data);
    round_trip::<sdr::RecordChunk>(data);
    round_trip::<sel::ClearSelStatus>(data);
    round_trip::<sel::ClearSel>(data);
    round_trip::<sel::SelInfo>(data);
    round_trip::<sel::GetSelEntry>(data);
    round_trip::<sensor::SensorReading>(data);
    round_trip::<sensor::GetSensorReading>(data);
    round_trip::<chassis::ChassisStatus>(data);
    round_trip::<chassis::ChassisControl>(data);
    round_trip::<payload::ActivatePayload>(data);
    round_trip::<payload::PayloadActivated>(data);
    round_trip::<payload::DeactivatePayload>(data);
    round_trip::<payload::GetPayloadActivationStatus>(data);
    round_trip::<payload::PayloadActivationStatus>(data);
    round_trip::<user::GetUserAccess>(data);
    round_trip::<user::UserAccess>(data);
    round_trip::<user::GetUserName>(data);
    round_trip::<user::UserName>(data);

    // Cipher suite records, as `lifeline audit bmc` reads them page by page.
    if let Ok(page) = app::ChannelCipherSuites::decode(data) {
        let records = app::parse_cipher_suite_records(&page.data);
        let encoded = app::encode_cipher_suite_records(&records);
        assert_eq!(app::parse_cipher_suite_records(&encoded), records);
    }
    if let Ok(c) = sel::ClearSelStatus::decode(data) {
        assert_eq!(c.completed(), c.progress & 0x0F == 1);
    }

    // Sensor data records: the record round trip and the reading conversion.
    if let Ok(r) = sdr::SdrRecord::decode(data) {
        let again = sdr::SdrRecord::decode(&r.encode());
        assert_eq!(again.as_ref(), Ok(&r), "SDR record does not round-trip");
        if let sdr::SdrBody::Full(f) = &r.body {
            full_sensor(f, data);
        }
    }
});
