//! The Chassis and what hangs off it: legacy `Thermal` and `Power`, and the `Sensors` collection.

use serde_json::{Map, Value, json};

use super::RedfishBmc;
use super::resources::{health, link, power_state_str, rollup};
use crate::sensors::{Sensor, SensorKind};

pub(super) fn chassis(bmc: &RedfishBmc) -> Value {
    let h = &bmc.host;
    let id = &h.bmc_config().identity;
    let path = bmc.chassis_path();
    json!({
        "@odata.id": path,
        "@odata.type": "#Chassis.v1_22_0.Chassis",
        "Id": bmc.flavor.chassis_id,
        "Name": format!("{} chassis", h.name()),
        "ChassisType": "RackMount",
        "Manufacturer": id.manufacturer,
        "Model": id.model,
        "SerialNumber": id.serial,
        "PowerState": power_state_str(h.power_state()),
        "Status": { "State": "Enabled", "Health": health(rollup(&h.sensors())) },
        "Thermal": link(&format!("{path}/Thermal")),
        "Power": link(&format!("{path}/Power")),
        "Sensors": link(&format!("{path}/Sensors")),
        "Links": {
            "ComputerSystems": [link(&bmc.system_path())],
            "ManagedBy": [link(&bmc.manager_path())],
        },
    })
}

pub(super) fn status(s: &Sensor) -> Value {
    match s.reading {
        Some(_) => json!({ "State": "Enabled", "Health": health(s.health) }),
        None => json!({ "State": "UnavailableOffline" }),
    }
}

pub(super) fn thermal(bmc: &RedfishBmc) -> Value {
    let path = format!("{}/Thermal", bmc.chassis_path());
    let sensors = bmc.host.sensors();
    let temps: Vec<Value> = sensors
        .iter()
        .filter(|s| s.kind == SensorKind::Temperature)
        .enumerate()
        .map(|(i, s)| {
            json!({
                "@odata.id": format!("{path}#/Temperatures/{i}"),
                "MemberId": i.to_string(),
                "Name": s.name,
                "SensorNumber": s.number,
                "ReadingCelsius": s.reading,
                "UpperThresholdNonCritical": s.upper_warning,
                "UpperThresholdCritical": s.upper_critical,
                "Status": status(s),
            })
        })
        .collect();
    let fans: Vec<Value> = sensors
        .iter()
        .filter(|s| s.kind == SensorKind::Fan)
        .enumerate()
        .map(|(i, s)| {
            json!({
                "@odata.id": format!("{path}#/Fans/{i}"),
                "MemberId": i.to_string(),
                "Name": s.name,
                "Reading": s.reading.map(|r| r as i64),
                "ReadingUnits": "RPM",
                "LowerThresholdCritical": s.lower_critical.map(|r| r as i64),
                "Status": status(s),
            })
        })
        .collect();
    json!({
        "@odata.id": path,
        "@odata.type": "#Thermal.v1_7_1.Thermal",
        "Id": "Thermal",
        "Name": "Thermal",
        "Temperatures": temps,
        "Temperatures@odata.count": temps.len(),
        "Fans": fans,
        "Fans@odata.count": fans.len(),
    })
}

pub(super) fn power(bmc: &RedfishBmc) -> Value {
    let path = format!("{}/Power", bmc.chassis_path());
    let sensors = bmc.host.sensors();
    let psus: Vec<&Sensor> = sensors.iter().filter(|s| s.kind == SensorKind::Power).collect();
    let total: f64 = psus.iter().filter_map(|s| s.reading).sum();
    let supplies: Vec<Value> = psus
        .iter()
        .enumerate()
        .map(|(i, s)| {
            json!({
                "@odata.id": format!("{path}#/PowerSupplies/{i}"),
                "MemberId": i.to_string(),
                "Name": s.name.trim_end_matches(" Power"),
                "PowerCapacityWatts": 3300,
                "LastPowerOutputWatts": s.reading,
                "Status": status(s),
            })
        })
        .collect();
    let volts: Vec<Value> = sensors
        .iter()
        .filter(|s| s.kind == SensorKind::Voltage)
        .enumerate()
        .map(|(i, s)| {
            json!({
                "@odata.id": format!("{path}#/Voltages/{i}"),
                "MemberId": i.to_string(),
                "Name": s.name,
                "SensorNumber": s.number,
                "ReadingVolts": s.reading,
                "LowerThresholdCritical": s.lower_critical,
                "UpperThresholdCritical": s.upper_critical,
                "Status": status(s),
            })
        })
        .collect();
    json!({
        "@odata.id": path,
        "@odata.type": "#Power.v1_7_1.Power",
        "Id": "Power",
        "Name": "Power",
        "PowerControl": [{
            "@odata.id": format!("{path}#/PowerControl/0"),
            "MemberId": "0",
            "Name": "System Power Control",
            "PowerConsumedWatts": total,
            "PowerCapacityWatts": 6600,
        }],
        "PowerControl@odata.count": 1,
        "PowerSupplies": supplies,
        "PowerSupplies@odata.count": supplies.len(),
        "Voltages": volts,
        "Voltages@odata.count": volts.len(),
    })
}

pub(super) fn sensor(bmc: &RedfishBmc, s: &Sensor) -> Value {
    let (ty, units) = s.kind.redfish();
    let mut th = Map::new();
    if let Some(v) = s.upper_critical {
        th.insert("UpperCritical".into(), json!({ "Reading": v }));
    }
    if let Some(v) = s.upper_warning {
        th.insert("UpperCaution".into(), json!({ "Reading": v }));
    }
    if let Some(v) = s.lower_critical {
        th.insert("LowerCritical".into(), json!({ "Reading": v }));
    }
    json!({
        "@odata.id": format!("{}/Sensors/{}", bmc.chassis_path(), s.id),
        "@odata.type": "#Sensor.v1_7_0.Sensor",
        "Id": s.id,
        "Name": s.name,
        "ReadingType": ty,
        "ReadingUnits": units,
        "Reading": s.reading,
        "Thresholds": th,
        "Status": status(s),
    })
}
