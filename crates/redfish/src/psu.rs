//! Power supplies as vendors really serve them: the modern `PowerSubsystem` (Redfish 2020.4+: one resource
//! per supply with `LineInputStatus`, metrics behind a link, redundancy groups) and the legacy `Power`
//! arrays, where every supply may carry the same `Name` (HPE: "HpeServerPowerSupply") and a PowerControl
//! may have no name at all.
//!
//! Why a module of its own: a failed supply is the one fault an operator must not miss during an outage,
//! and the ways a BMC reports it differ more here than anywhere else. Pure functions over documents, so
//! they are tested without a BMC.

use serde_json::Value;

use lifeline_types::Health;

use crate::doc::{FieldWarning, Fields};
use crate::model::{SensorReading, SensorSource, Status};

/// Health implied by `LineInputStatus`: no input power is a failed supply whatever `Status.Health` says
/// (a redundant supply that lost its feed is often only `Warning`), out of range is a warning.
pub fn line_input_health(line: Option<&str>) -> Option<Health> {
    match line? {
        "LossOfInput" => Some(Health::Critical),
        "OutOfRange" => Some(Health::Warning),
        _ => None,
    }
}

fn worst(a: Option<Health>, b: Option<Health>) -> Option<Health> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.worst(b)),
        (a, b) => a.or(b),
    }
}

/// What tells one supply from another when their names are equal: the bay, else `MemberId`, else the
/// serial number.
fn distinguisher(item: &Value) -> Option<String> {
    let s = |v: Option<&Value>| match v {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let part = item.get("Location").and_then(|l| l.get("PartLocation"));
    let bay = s(part.and_then(|p| p.get("ServiceLabel")))
        .or_else(|| s(part.and_then(|p| p.get("LocationOrdinalValue"))).map(|n| format!("bay {n}")))
        .or_else(|| s(item.pointer("/Oem/Hpe/BayNumber")).map(|n| format!("bay {n}")));
    bay.or_else(|| s(item.get("MemberId")).map(|m| format!("member {m}")))
        .or_else(|| s(item.get("Id")).map(|m| format!("id {m}")))
        .or_else(|| s(item.get("SerialNumber")).map(|n| format!("SN {n}")))
}

/// Give every reading of one array a label an operator can tell apart: missing names become
/// `{what} {MemberId}` (never the URI), and equal names get the bay / member id / serial appended.
fn label(items: &[Value], readings: &mut [&mut SensorReading], what: &str) {
    for (i, (r, item)) in readings.iter_mut().zip(items).enumerate() {
        if r.name.as_deref().is_none_or(|n| n.trim().is_empty()) {
            let id = distinguisher(item).unwrap_or_else(|| i.to_string());
            r.name = Some(format!("{what} {id}"));
        }
    }
    let names: Vec<Option<String>> = readings.iter().map(|r| r.name.clone()).collect();
    for (i, (r, item)) in readings.iter_mut().zip(items).enumerate() {
        let dup = names.iter().filter(|n| **n == names[i]).count() > 1;
        if dup {
            let id = distinguisher(item).unwrap_or_else(|| format!("#{i}"));
            r.name = r.name.take().map(|n| format!("{n} ({id})"));
        }
    }
}

/// Label the PowerControl and PowerSupplies readings of a legacy `Power` document (`out` holds them in
/// document order, as `model::power_from_value` produced them) and fold `LineInputStatus` into health.
pub(crate) fn label_legacy_power(v: &Value, out: &mut [SensorReading]) {
    for (array, kind, what) in
        [("PowerControl", "Power", "PowerControl"), ("PowerSupplies", "PowerSupply", "PSU")]
    {
        let Some(Value::Array(items)) = v.get(array) else { continue };
        let mut readings: Vec<&mut SensorReading> =
            out.iter_mut().filter(|r| r.kind.as_deref() == Some(kind)).collect();
        label(items, &mut readings, what);
    }
    for r in out.iter_mut().filter(|r| r.kind.as_deref() == Some("PowerSupply")) {
        r.health = worst(r.health, line_input_health(r.line_input.as_deref()));
    }
}

/// One `PowerSubsystem/PowerSupplies` member (`#PowerSupply.v1_x`), with its metrics document when it was
/// read (`InputPowerWatts`, `OutputPowerWatts`: `{ "Reading": n }` each).
pub fn power_supply_from_value(
    v: &Value,
    at: &str,
    metrics: Option<&Value>,
    warnings: &mut Vec<FieldWarning>,
) -> SensorReading {
    let mut f = Fields::new(v, at, warnings);
    let status = Status::read(&mut f);
    let line_input = f.str("LineInputStatus");
    let name = f.str("Name");
    let odata_id = f.str("@odata.id");
    let capacity = f.num("PowerCapacityWatts");
    let reading_of = |m: Option<&Value>, key: &str| -> Option<f64> {
        let x = m?.get(key)?;
        x.get("Reading").and_then(Value::as_f64).or_else(|| x.as_f64())
    };
    SensorReading {
        odata_id,
        name,
        kind: Some("PowerSupply".into()),
        reading: reading_of(metrics, "InputPowerWatts"),
        units: Some("W".into()),
        state: status.state,
        health: worst(status.health, line_input_health(line_input.as_deref())),
        upper_caution: None,
        upper_critical: capacity,
        source: SensorSource::PowerSubsystem,
        output_watts: reading_of(metrics, "OutputPowerWatts"),
        line_input,
        id: f.str("Id").or_else(|| f.str("MemberId")),
        chassis: None,
        data_source: None,
    }
}

/// Label the supplies read from a `PowerSupplies` collection as [`label_legacy_power`] does (`items` are the
/// member documents in the same order as `readings`).
pub fn label_power_supplies(items: &[Value], readings: &mut [SensorReading]) {
    let mut r: Vec<&mut SensorReading> = readings.iter_mut().collect();
    label(items, &mut r, "PSU");
}

/// The redundancy groups of a `PowerSubsystem` document (`PowerSupplyRedundancy`), or of a legacy `Power`
/// document (`Redundancy`), one reading each (kind `PowerRedundancy`): a group in `Warning` means the
/// supplies no longer cover a failure, which the operator must see.
pub fn redundancy_from_value(v: &Value, at: &str, warnings: &mut Vec<FieldWarning>) -> Vec<SensorReading> {
    let mut out = Vec::new();
    let (key, groups) = match (v.get("PowerSupplyRedundancy"), v.get("Redundancy")) {
        (Some(g), _) => ("PowerSupplyRedundancy", g),
        (None, Some(g)) => ("Redundancy", g),
        (None, None) => return out,
    };
    let groups = match groups {
        Value::Null => return out,
        Value::Array(a) => a,
        other => {
            warnings.push(FieldWarning {
                at: format!("{at}#/{key}"),
                problem: format!("expected an array, found {}", crate::doc::kind(other)),
            });
            return out;
        }
    };
    for (i, g) in groups.iter().enumerate() {
        let mut f = Fields::new(g, format!("{at}#/{key}/{i}"), warnings);
        let status = Status::read(&mut f);
        let kind = f.str("RedundancyType").or_else(|| f.str("Mode")).unwrap_or_else(|| "redundancy".into());
        let mut members = f.links("RedundancyGroup").len();
        if members == 0 {
            members = f.links("RedundancySet").len();
        }
        let max = f.int("MaxSupportedInGroup").or_else(|| f.int("MaxNumSupported"));
        let members = if members == 0 { max.unwrap_or(0).max(0) as usize } else { members };
        let min = f.int("MinNeededInGroup").or_else(|| f.int("MinNumNeeded"));
        let detail = match min {
            Some(m) => format!("{kind}, {m} of {members} needed"),
            None => format!("{kind}, {members} supplies"),
        };
        out.push(SensorReading {
            odata_id: Some(format!("{at}#/{key}/{i}")),
            name: Some(format!("PSU redundancy ({detail})")),
            kind: Some("PowerRedundancy".into()),
            reading: None,
            units: None,
            state: status.state,
            health: status.health,
            upper_caution: None,
            upper_critical: None,
            source: SensorSource::PowerSubsystem,
            output_watts: None,
            line_input: None,
            id: f.str("MemberId"),
            chassis: None,
            data_source: None,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hpe_supplies_with_one_name_are_told_apart_by_bay() {
        let doc = json!({
            "PowerControl": [{ "MemberId": "0", "PowerConsumedWatts": 310 }],
            "PowerSupplies": [
                { "MemberId": "0", "Name": "HpeServerPowerSupply", "PowerInputWatts": 160, "LastPowerOutputWatts": 150,
                  "Oem": { "Hpe": { "BayNumber": 1 } }, "Status": { "Health": "OK", "State": "Enabled" } },
                { "MemberId": "1", "Name": "HpeServerPowerSupply", "LastPowerOutputWatts": 0,
                  "LineInputStatus": "LossOfInput", "Oem": { "Hpe": { "BayNumber": 2 } },
                  "Status": { "Health": "Warning", "State": "Enabled" } }
            ]
        });
        let mut w = Vec::new();
        let r = crate::model::power_from_value(&doc, "/redfish/v1/Chassis/1/Power", &mut w);
        let names: Vec<_> = r.iter().map(|r| r.name.clone().unwrap()).collect();
        assert_eq!(
            names,
            ["PowerControl member 0", "HpeServerPowerSupply (bay 1)", "HpeServerPowerSupply (bay 2)"]
        );
        assert_eq!(r[1].output_watts, Some(150.0));
        assert_eq!(r[2].health, Some(Health::Critical), "LossOfInput is a failed supply");
        assert_eq!(r[1].health, Some(Health::Ok));
    }

    #[test]
    fn redundancy_in_warning_is_a_warning() {
        let doc = json!({ "PowerSupplyRedundancy": [{ "RedundancyType": "Failover", "MinNeededInGroup": 1,
            "RedundancyGroup": [{ "@odata.id": "/a" }, { "@odata.id": "/b" }],
            "Status": { "Health": "Warning", "State": "Enabled" } }] });
        let mut w = Vec::new();
        let r = redundancy_from_value(&doc, "/redfish/v1/Chassis/1/PowerSubsystem", &mut w);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].health, Some(Health::Warning));
        assert_eq!(r[0].name.as_deref(), Some("PSU redundancy (Failover, 1 of 2 needed)"));
    }

    proptest::proptest! {
        #[test]
        fn never_panics(junk in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            let s = String::from_utf8_lossy(&junk).to_string();
            let docs = [json!({ "PowerSupplies": [s.clone(), { "Name": s.clone() }] }),
                json!({ "PowerSupplyRedundancy": s.clone() }), json!({ "LineInputStatus": [s] })];
            for d in docs {
                let mut w = Vec::new();
                let _ = crate::model::power_from_value(&d, "/x", &mut w);
                let _ = redundancy_from_value(&d, "/x", &mut w);
                let _ = power_supply_from_value(&d, "/x", Some(&d), &mut w);
            }
        }
    }
}
