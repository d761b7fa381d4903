//! Sensor readings of a simulated BMC, computed from the host's state on every read.
//!
//! Computing on read (instead of a ticking task per BMC) keeps 1,000 idle BMCs free; IPMI's SDR/Get Sensor
//! Reading and Redfish's `Sensors`/`Thermal`/`Power` all call [`readings`], so they always agree.

use lifeline_types::Health;
use serde::Serialize;

use crate::console::HostKind;
use crate::host::Phase;
use crate::node_state::NodeState;

/// What a sensor measures; carries the IPMI sensor type and unit codes (IPMI 2.0 tables 42-3, 43-15).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum SensorKind {
    Temperature,
    Fan,
    Voltage,
    Power,
}

impl SensorKind {
    pub fn ipmi_sensor_type(self) -> u8 {
        match self {
            SensorKind::Temperature => 0x01,
            SensorKind::Voltage => 0x02,
            SensorKind::Fan => 0x04,
            SensorKind::Power => 0x08,
        }
    }

    /// IPMI base unit: 1 = degrees C, 4 = Volts, 18 = RPM, 6 = Watts.
    pub fn ipmi_unit(self) -> u8 {
        match self {
            SensorKind::Temperature => 1,
            SensorKind::Voltage => 4,
            SensorKind::Fan => 18,
            SensorKind::Power => 6,
        }
    }

    /// Redfish `ReadingType` / `ReadingUnits`.
    pub fn redfish(self) -> (&'static str, &'static str) {
        match self {
            SensorKind::Temperature => ("Temperature", "Cel"),
            SensorKind::Voltage => ("Voltage", "V"),
            SensorKind::Fan => ("Rotational", "RPM"),
            SensorKind::Power => ("Power", "W"),
        }
    }
}

/// One reading.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sensor {
    /// IPMI sensor number (stable per sensor).
    pub number: u8,
    pub name: String,
    /// Redfish id (`CPU0Temp`).
    pub id: String,
    pub kind: SensorKind,
    /// `None`: no reading (host off: CPU/GPU sensors are not powered).
    pub reading: Option<f64>,
    pub lower_critical: Option<f64>,
    pub upper_warning: Option<f64>,
    pub upper_critical: Option<f64>,
    pub health: Health,
}

fn threshold_health(reading: Option<f64>, lc: Option<f64>, uw: Option<f64>, uc: Option<f64>) -> Health {
    let Some(r) = reading else { return Health::Ok };
    if uc.is_some_and(|u| r >= u) || lc.is_some_and(|l| r <= l) {
        Health::Critical
    } else if uw.is_some_and(|u| r >= u) {
        Health::Warning
    } else {
        Health::Ok
    }
}

#[allow(clippy::too_many_arguments)]
fn sensor(
    number: u8,
    name: String,
    kind: SensorKind,
    reading: Option<f64>,
    lc: Option<f64>,
    uw: Option<f64>,
    uc: Option<f64>,
    extra: Health,
) -> Sensor {
    let id = name.replace(' ', "");
    let health = threshold_health(reading, lc, uw, uc).worst(extra);
    Sensor {
        number,
        name,
        id,
        kind,
        reading,
        lower_critical: lc,
        upper_warning: uw,
        upper_critical: uc,
        health,
    }
}

/// Every sensor of the BMC now.
pub fn readings(kind: HostKind, phase: Phase, node: &NodeState) -> Vec<Sensor> {
    let powered = phase != Phase::Off;
    let loaded = phase == Phase::OsUp;
    let on = |v: f64| if powered { Some(v) } else { None };
    let mut v = vec![
        sensor(
            0x01,
            "Inlet Temp".into(),
            SensorKind::Temperature,
            Some(23.0),
            None,
            Some(42.0),
            Some(47.0),
            Health::Ok,
        ),
        sensor(
            0x02,
            "CPU0 Temp".into(),
            SensorKind::Temperature,
            on(if loaded { 48.0 } else { 38.0 }),
            None,
            Some(90.0),
            Some(100.0),
            Health::Ok,
        ),
    ];
    if kind == HostKind::Server {
        v.push(sensor(
            0x03,
            "CPU1 Temp".into(),
            SensorKind::Temperature,
            on(if loaded { 46.0 } else { 37.0 }),
            None,
            Some(90.0),
            Some(100.0),
            Health::Ok,
        ));
        for g in &node.gpus {
            let bad = g.ecc_volatile_uncorrected > 0
                || g.xid_events.iter().any(|x| matches!(x.code, 48 | 79 | 94 | 95));
            let temp = if loaded { f64::from(g.temperature_c) } else { 30.0 };
            v.push(sensor(
                0x10 + g.index,
                format!("GPU{} Temp", g.index),
                SensorKind::Temperature,
                on(temp),
                None,
                Some(85.0),
                Some(92.0),
                if bad { Health::Critical } else { Health::Ok },
            ));
        }
    }
    let fan_rpm = if !powered {
        0.0
    } else if loaded {
        9600.0
    } else {
        13800.0
    };
    for i in 0..4u8 {
        v.push(sensor(
            0x30 + i,
            format!("Fan{}", i + 1),
            SensorKind::Fan,
            on(fan_rpm + f64::from(i) * 120.0),
            Some(1200.0),
            None,
            None,
            Health::Ok,
        ));
    }
    let watts = match (kind, phase) {
        (_, Phase::Off) => 18.0,
        (HostKind::Server, Phase::OsUp) => 1450.0 + 90.0 * node.gpus.len() as f64,
        (HostKind::Server, _) => 980.0,
        (HostKind::Switch(_), _) => 610.0,
    };
    v.push(sensor(
        0x40,
        "PSU1 Power".into(),
        SensorKind::Power,
        Some(watts / 2.0),
        None,
        Some(2900.0),
        Some(3300.0),
        Health::Ok,
    ));
    v.push(sensor(
        0x41,
        "PSU2 Power".into(),
        SensorKind::Power,
        Some(watts / 2.0),
        None,
        Some(2900.0),
        Some(3300.0),
        Health::Ok,
    ));
    v.push(sensor(
        0x50,
        "12V".into(),
        SensorKind::Voltage,
        Some(if powered { 12.06 } else { 0.0 }).filter(|_| powered),
        Some(10.8),
        None,
        Some(13.2),
        Health::Ok,
    ));
    v
}

/// Power supplies per machine (sensors `PSU1 Power`, `PSU2 Power`).
pub const PSU_COUNT: u8 = 2;

/// Sensor number of PSU `psu` (from 1).
pub fn psu_sensor_number(psu: u8) -> u8 {
    0x40 + psu.saturating_sub(1)
}

/// PSU `psu` lost its input: it delivers nothing and is critical; the others share its load.
pub fn fail_psu(v: &mut [Sensor], psu: u8) {
    let n = psu_sensor_number(psu);
    let is_psu = |s: &Sensor| s.kind == SensorKind::Power;
    let Some(lost) = v.iter().find(|s| is_psu(s) && s.number == n).and_then(|s| s.reading) else { return };
    let others = v.iter().filter(|s| is_psu(s) && s.number != n && s.health != Health::Critical).count();
    for s in v.iter_mut().filter(|s| is_psu(s)) {
        if s.number == n {
            s.reading = Some(0.0);
            s.health = Health::Critical;
        } else if s.health != Health::Critical && others > 0 {
            s.reading = s.reading.map(|r| r + lost / others as f64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::GpuSpec;

    #[test]
    fn readings_follow_power_and_faults() {
        let mut node = NodeState::new("n", &GpuSpec::default(), &[]);
        let up = readings(HostKind::Server, Phase::OsUp, &node);
        assert_eq!(up.len(), 3 + 8 + 4 + 3);
        assert!(up.iter().all(|s| s.health == Health::Ok), "{up:?}");
        let off = readings(HostKind::Server, Phase::Off, &node);
        assert!(off.iter().find(|s| s.name == "CPU0 Temp").unwrap().reading.is_none());
        node.gpus[3].ecc_volatile_uncorrected = 1;
        let bad = readings(HostKind::Server, Phase::OsUp, &node);
        assert_eq!(bad.iter().find(|s| s.number == 0x13).unwrap().health, Health::Critical);
        let mut numbers: Vec<u8> = bad.iter().map(|s| s.number).collect();
        numbers.dedup();
        assert_eq!(numbers.len(), bad.len(), "sensor numbers are unique");
    }
}
