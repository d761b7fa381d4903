//! The Chassis and what hangs off it: legacy `Thermal` and `Power` (or, in the `powersubsystem` flavor,
//! only `PowerSubsystem` with its PSUs and redundancy group), and the `Sensors` collection.

use serde_json::{Map, Value, json};

use super::RedfishBmc;
use super::flavor::PowerLayout;
use super::resources::{health, link, power_state_str, rollup};
use crate::sensors::{Sensor, SensorKind};
use crate::spec::RedfishFlavor;

pub(super) fn chassis(bmc: &RedfishBmc) -> Value {
    let h = &bmc.host;
    let id = &h.bmc_config().identity;
    let path = bmc.chassis_path();
    let mut v = json!({
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
        "Sensors": link(&format!("{path}/Sensors")),
        "Links": {
            "ComputerSystems": [link(&bmc.system_path())],
            "ManagedBy": [link(&bmc.manager_path())],
        },
    });
    match bmc.flavor.power {
        PowerLayout::Legacy => v["Power"] = link(&format!("{path}/Power")),
        PowerLayout::SubsystemOnly => v["PowerSubsystem"] = link(&format!("{path}/PowerSubsystem")),
    }
    v
}

/// One PSU as both layouts describe it: number (from 1), its power sensor, and whether it lost input.
struct Psu<'a> {
    n: u8,
    sensor: &'a Sensor,
    failed: bool,
}

fn psus<'a>(bmc: &RedfishBmc, sensors: &'a [Sensor]) -> Vec<Psu<'a>> {
    let failed = bmc.host.failed_psus();
    (1..=crate::sensors::PSU_COUNT)
        .filter_map(|n| {
            let number = crate::sensors::psu_sensor_number(n);
            let sensor = sensors.iter().find(|s| s.kind == SensorKind::Power && s.number == number)?;
            Some(Psu { n, sensor, failed: failed.contains(&n) })
        })
        .collect()
}

fn psu_serial(bmc: &RedfishBmc, n: u8) -> String {
    format!("{}PS{n}", bmc.host.bmc_config().identity.serial)
}

fn bay(n: u8) -> Value {
    json!({ "PartLocation": {
        "ServiceLabel": format!("Power Supply Bay {n}"),
        "LocationType": "Bay",
        "LocationOrdinalValue": n,
    }})
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
    let psus = psus(bmc, &sensors);
    let total: f64 = psus.iter().filter_map(|p| p.sensor.reading).sum();
    // HPE names every unit the same; MemberId, bay and serial tell them apart.
    let hpe = bmc.flavor.kind == RedfishFlavor::IloLike;
    let supplies: Vec<Value> = psus
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let name = if hpe { "HpeServerPowerSupply".to_owned() } else { format!("PSU{}", p.n) };
            json!({
                "@odata.id": format!("{path}#/PowerSupplies/{i}"),
                "MemberId": i.to_string(),
                "Name": name,
                "SerialNumber": psu_serial(bmc, p.n),
                "Location": bay(p.n),
                "PowerSupplyType": "AC",
                "LineInputVoltage": if p.failed { 0 } else { 230 },
                "PowerCapacityWatts": 3300,
                "LastPowerOutputWatts": p.sensor.reading,
                "Status": status(p.sensor),
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

/// `Chassis/{id}/PowerSubsystem`: capacity, the PSU collection and the redundancy group.
pub(super) fn power_subsystem(bmc: &RedfishBmc) -> Value {
    let path = format!("{}/PowerSubsystem", bmc.chassis_path());
    let sensors = bmc.host.sensors();
    let psus = psus(bmc, &sensors);
    let failed = psus.iter().filter(|p| p.failed).count();
    let redundancy = match failed {
        0 => "OK",
        f if f < psus.len() => "Warning",
        _ => "Critical",
    };
    json!({
        "@odata.id": path,
        "@odata.type": "#PowerSubsystem.v1_1_0.PowerSubsystem",
        "Id": "PowerSubsystem",
        "Name": "Power Subsystem",
        "CapacityWatts": 3300,
        "Status": { "State": "Enabled", "Health": redundancy },
        "PowerSupplies": link(&format!("{path}/PowerSupplies")),
        "PowerSupplyRedundancy": [{
            "RedundancyType": "NPlusM",
            "MaxSupportedInGroup": psus.len(),
            "MinNeededInGroup": 1,
            "RedundancyGroup": psus.iter().map(|p| link(&format!("{path}/PowerSupplies/{}", p.n))).collect::<Vec<_>>(),
            "Status": { "State": "Enabled", "Health": redundancy },
        }],
    })
}

pub(super) fn power_supplies(bmc: &RedfishBmc) -> Value {
    let path = format!("{}/PowerSubsystem/PowerSupplies", bmc.chassis_path());
    let sensors = bmc.host.sensors();
    let members = psus(bmc, &sensors).iter().map(|p| format!("{path}/{}", p.n)).collect();
    super::resources::collection(&path, "PowerSupplyCollection", "Power Supply Collection", members)
}

pub(super) fn power_supply(bmc: &RedfishBmc, id: &str) -> Option<Value> {
    let sensors = bmc.host.sensors();
    let p = psus(bmc, &sensors).into_iter().find(|p| p.n.to_string() == id)?;
    let identity = &bmc.host.bmc_config().identity;
    Some(json!({
        "@odata.id": format!("{}/PowerSubsystem/PowerSupplies/{id}", bmc.chassis_path()),
        "@odata.type": "#PowerSupply.v1_5_0.PowerSupply",
        "Id": id,
        "Name": format!("Power Supply {id}"),
        "Manufacturer": identity.manufacturer,
        "Model": "PWS-3K30-1R",
        "SerialNumber": psu_serial(bmc, p.n),
        "PowerSupplyType": "AC",
        "PowerCapacityWatts": 3300,
        "HotPluggable": true,
        "Location": bay(p.n),
        "LineInputStatus": if p.failed { "LossOfInput" } else { "Normal" },
        "Status": { "State": "Enabled", "Health": if p.failed { "Critical" } else { "OK" } },
    }))
}
