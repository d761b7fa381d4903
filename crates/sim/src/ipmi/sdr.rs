//! The SDR repository and sensor readings, derived from the host's sensors on each
//! request (nothing cached: the readings follow power state and faults, and 1,000 idle
//! BMCs hold no SDR bytes).

use lifeline_ipmi::wire::{
    sdr::{FullSensor, SdrBody, SdrRecord, SensorCommon},
    sensor::SensorReading,
};

use crate::sensors::{Sensor, SensorKind};

/// (M, R exponent) per kind so that 8-bit raw values cover the sensor's range.
fn scale(kind: SensorKind) -> (i16, i8) {
    match kind {
        SensorKind::Temperature => (1, 0), // 0-255 °C in 1 °C steps
        SensorKind::Fan => (60, 0),        // 0-15300 RPM in 60 RPM steps
        SensorKind::Power => (15, 0),      // 0-3825 W in 15 W steps
        SensorKind::Voltage => (6, -2),    // 0-15.3 V in 60 mV steps
    }
}

fn full(s: &Sensor) -> FullSensor {
    let (m, r_exp) = scale(s.kind);
    let mut f = FullSensor {
        common: SensorCommon {
            owner_id: 0x20,
            owner_lun: 0,
            number: s.number,
            entity_id: 0x07,
            entity_instance: 1,
            sensor_type: s.kind.ipmi_sensor_type(),
            event_reading_type: 0x01,
            units1: 0,
            base_unit: s.kind.ipmi_unit(),
            modifier_unit: 0,
            name: s.name.chars().take(16).collect(),
        },
        linearization: 0,
        m,
        b: 0,
        r_exp,
        b_exp: 0,
        readable_thresholds: 0,
        thresholds: [0; 6],
    };
    // [unr, uc, unc, lnr, lc, lnc]; readable mask bit 0 lnc, 1 lc, 3 unc, 4 uc.
    let mut mask = 0u8;
    if let Some(v) = s.upper_critical {
        f.thresholds[1] = f.raw_for(v);
        mask |= 0x10;
    }
    if let Some(v) = s.upper_warning {
        f.thresholds[2] = f.raw_for(v);
        mask |= 0x08;
    }
    if let Some(v) = s.lower_critical {
        f.thresholds[4] = f.raw_for(v);
        mask |= 0x02;
    }
    f.readable_thresholds = mask;
    f
}

/// (record id, record bytes) for every sensor, record ids from 1.
pub(super) fn records(sensors: &[Sensor]) -> Vec<(u16, Vec<u8>)> {
    sensors
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let id = i as u16 + 1;
            (id, SdrRecord { record_id: id, version: 0x51, body: SdrBody::Full(full(s)) }.encode())
        })
        .collect()
}

/// Get Sensor Reading for sensor `number`.
pub(super) fn reading(sensors: &[Sensor], number: u8) -> Option<SensorReading> {
    let s = sensors.iter().find(|s| s.number == number)?;
    let f = full(s);
    let Some(v) = s.reading else {
        // Scanning enabled, reading unavailable (host off).
        return Some(SensorReading { raw: 0, flags: 0x40 | 0x20, state1: Some(0), state2: Some(0x80) });
    };
    let mut state = 0u8;
    if s.lower_critical.is_some_and(|t| v <= t) {
        state |= 0x03;
    }
    if s.upper_warning.is_some_and(|t| v >= t) {
        state |= 0x08;
    }
    if s.upper_critical.is_some_and(|t| v >= t) {
        state |= 0x18;
    }
    Some(SensorReading { raw: f.raw_for(v), flags: 0xC0, state1: Some(state), state2: Some(0x80) })
}

/// Get Sensor Thresholds response data: readable mask, then lnc lc lnr unc uc unr.
pub(super) fn thresholds(sensors: &[Sensor], number: u8) -> Option<Vec<u8>> {
    let f = full(sensors.iter().find(|s| s.number == number)?);
    let t = f.thresholds;
    Some(vec![f.readable_thresholds, t[5], t[4], t[3], t[2], t[1], t[0]])
}
