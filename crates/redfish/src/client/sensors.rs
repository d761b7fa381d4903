//! Sensors of a chassis: the modern `Sensors` collection, the legacy `Thermal` and `Power` resources, and
//! power supplies wherever the BMC keeps their status.

use serde_json::Value;

use super::Client;
use crate::doc::FieldWarning;
use crate::error::RedfishError;
use crate::model::{self, Chassis, SensorSet};
use crate::psu;

/// Fewer readings than this in a `Sensors` collection make it sparse: legacy `Thermal` is read as well.
const SPARSE_SENSORS: usize = 10;

impl Client {
    /// Sensors of a chassis: the `Sensors` collection when present (with legacy `Thermal` when it is
    /// sparse), else legacy `Thermal` + `Power`; readings of legacy `Power` the collection lacks (supplies,
    /// rails); power supplies from `PowerSubsystem` when the chassis has one, else from legacy `Power`.
    ///
    /// With a `Sensors` collection, the power supplies' status is still read (at the same time): many BMCs
    /// list PSU input power as a sensor but report a failed supply only in `PowerSupplies[].Status` or
    /// `LineInputStatus`, and a sweep that missed a dead PSU would be lying. A BMC that has dropped the
    /// legacy `Power` resource keeps its supplies only in `PowerSubsystem`.
    pub async fn sensors(&self, chassis: &Chassis) -> Result<SensorSet, RedfishError> {
        if chassis.sensors.is_none()
            && chassis.thermal.is_none()
            && chassis.power.is_none()
            && chassis.power_subsystem.is_none()
        {
            return Err(RedfishError::Missing {
                bmc: self.bmc().to_owned(),
                url: chassis.odata_id.clone(),
                what: "Sensors, Thermal, Power or PowerSubsystem link",
            });
        }
        let modern = chassis.sensors.is_some();
        let doc = |link: Option<String>| async move {
            match link {
                Some(l) => Some((l.clone(), self.get_json(&l).await)),
                None => None,
            }
        };
        let sensors = async {
            match &chassis.sensors {
                Some(l) => Some(self.members_expanded(l).await),
                None => None,
            }
        };
        let subsystem = async {
            match &chassis.power_subsystem {
                Some(l) => Some((l.clone(), self.power_subsystem(l).await)),
                None => None,
            }
        };
        let thermal_link = if modern { None } else { chassis.thermal.clone() };
        let (sensors, mut thermal, power, subsystem) =
            tokio::join!(sensors, doc(thermal_link), doc(chassis.power.clone()), subsystem);
        let mut set = SensorSet::default();
        if let Some(l) = sensors {
            let l = l?;
            set.warnings = l.warnings;
            for (id, v) in l.items {
                set.readings.push(model::sensor_from_value(&v, &id, &mut set.warnings));
            }
            // A sparse `Sensors` collection is not the chassis' whole story (AMI lists 4 sensors there and 20
            // temperatures in Thermal): then Thermal is read too, one round trip later, on those BMCs only.
            // What both list is kept once (`merge_legacy`).
            if set.readings.len() < SPARSE_SENSORS {
                thermal = doc(chassis.thermal.clone()).await;
            }
        }
        let unreadable = |at: String, what: &str, e: RedfishError, w: &mut Vec<FieldWarning>| {
            w.push(FieldWarning { at, problem: format!("{what}unreadable: {e}") })
        };
        if let Some((link, r)) = thermal {
            match r {
                Ok((v, notes)) => {
                    set.warnings.extend(notes);
                    let r = model::thermal_from_value(&v, &link, &mut set.warnings);
                    merge_legacy(&mut set.readings, r);
                }
                Err(e) => unreadable(link, "", e, &mut set.warnings),
            }
        }
        let mut supplies_known = false;
        if let Some((link, r)) = subsystem {
            match r {
                Ok((readings, notes)) => {
                    set.warnings.extend(notes);
                    supplies_known = readings.iter().any(|r| r.kind.as_deref() == Some("PowerSupply"));
                    set.readings.extend(readings);
                }
                Err(e) => unreadable(link, "power subsystem ", e, &mut set.warnings),
            }
        }
        if let Some((link, r)) = power {
            match r {
                Ok((v, notes)) => {
                    set.warnings.extend(notes);
                    let mut legacy = model::power_from_value(&v, &link, &mut set.warnings);
                    // Supplies once (PowerSubsystem wins).
                    legacy.retain(|r| {
                        !(supplies_known
                            && matches!(r.kind.as_deref(), Some("PowerSupply" | "PowerRedundancy")))
                    });
                    merge_legacy(&mut set.readings, legacy);
                }
                Err(e) if modern => unreadable(link, "power supplies ", e, &mut set.warnings),
                Err(e) => unreadable(link, "", e, &mut set.warnings),
            }
        }
        let label = chassis.id.clone().unwrap_or_else(|| chassis.odata_id.clone());
        for r in &mut set.readings {
            r.chassis = Some(label.clone());
        }
        Ok(set)
    }

    /// `PowerSubsystem`: its redundancy groups and every supply (with its metrics, read concurrently).
    pub async fn power_subsystem(
        &self,
        link: &str,
    ) -> Result<(Vec<model::SensorReading>, Vec<FieldWarning>), RedfishError> {
        let (doc, mut warnings) = self.get_json(link).await?;
        let mut out = psu::redundancy_from_value(&doc, link, &mut warnings);
        let Some(supplies) = doc.pointer("/PowerSupplies/@odata.id").and_then(Value::as_str) else {
            return Ok((out, warnings));
        };
        let l = self.members_expanded(supplies).await?;
        warnings.extend(l.warnings);
        let metrics = l.items.iter().map(|(_, v)| async move {
            match v.pointer("/Metrics/@odata.id").and_then(Value::as_str) {
                Some(m) => Some((m.to_owned(), self.get_json(m).await)),
                None => None,
            }
        });
        let metrics = futures::future::join_all(metrics).await;
        let mut readings = Vec::new();
        for ((id, v), m) in l.items.iter().zip(metrics) {
            let m = match m {
                Some((_, Ok((doc, notes)))) => {
                    warnings.extend(notes);
                    Some(doc)
                }
                Some((at, Err(e))) => {
                    warnings.push(FieldWarning { at, problem: format!("metrics unreadable: {e}") });
                    None
                }
                None => None,
            };
            readings.push(psu::power_supply_from_value(v, id, m.as_ref(), &mut warnings));
        }
        let docs: Vec<Value> = l.items.into_iter().map(|(_, v)| v).collect();
        psu::label_power_supplies(&docs, &mut readings);
        out.splice(0..0, readings);
        Ok((out, warnings))
    }
}

/// Adds the legacy readings (`Thermal`, `Power`) that no reading already in `into` stands for: one whose
/// `DataSourceUri` is the legacy member, or with the same name and kind group (bmcweb lists every sensor in
/// both places; AMI only some). Names compare without case, spaces and punctuation.
pub(crate) fn merge_legacy(into: &mut Vec<model::SensorReading>, legacy: Vec<model::SensorReading>) {
    fn key(n: &str) -> String {
        n.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect()
    }
    fn group(r: &model::SensorReading) -> &'static str {
        match (r.kind.as_deref().unwrap_or(""), r.units.as_deref().unwrap_or("")) {
            ("Temperature", _) | (_, "Cel") => "temp",
            ("Fan", _) | (_, "RPM") | (_, "%") => "fan",
            ("Voltage", _) | (_, "V") => "volt",
            ("PowerSupply" | "PowerRedundancy", _) => "psu",
            ("Power", _) | (_, "W") => "power",
            _ => "other",
        }
    }
    let uris: std::collections::HashSet<String> = into.iter().filter_map(|r| r.data_source.clone()).collect();
    let names: std::collections::HashSet<(String, &'static str)> =
        into.iter().filter_map(|r| r.name.as_deref().map(|n| (key(n), group(r)))).collect();
    for r in legacy {
        let mirrored = r.odata_id.as_ref().is_some_and(|u| uris.contains(u));
        let same_name = r.name.as_deref().is_some_and(|n| names.contains(&(key(n), group(&r))));
        if !mirrored && !same_name {
            into.push(r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{SensorReading, SensorSource};

    fn reading(name: &str, kind: &str, source: SensorSource, uri: Option<&str>) -> SensorReading {
        SensorReading {
            odata_id: Some(format!("/x/{name}")),
            name: Some(name.into()),
            kind: Some(kind.into()),
            reading: Some(1.0),
            units: None,
            state: None,
            health: None,
            upper_caution: None,
            upper_critical: None,
            source,
            output_watts: None,
            line_input: None,
            id: None,
            chassis: None,
            data_source: uri.map(str::to_owned),
        }
    }

    #[test]
    fn legacy_readings_already_listed_are_kept_once() {
        let mut into = vec![
            reading("CPU 1 Temp", "Temperature", SensorSource::Sensors, None),
            reading("Inlet", "Temperature", SensorSource::Sensors, Some("/x/Ambient")),
        ];
        let legacy = vec![
            reading("cpu1_temp", "Temperature", SensorSource::Thermal, None),
            reading("Ambient", "Temperature", SensorSource::Thermal, None),
            reading("CPU 1 Temp", "Voltage", SensorSource::Power, None),
            reading("DIMM A1", "Temperature", SensorSource::Thermal, None),
        ];
        merge_legacy(&mut into, legacy);
        let names: Vec<_> = into.iter().map(|r| (r.name.clone().unwrap(), r.kind.clone().unwrap())).collect();
        assert_eq!(names.len(), 4, "{names:?}");
        assert!(names.contains(&("CPU 1 Temp".into(), "Voltage".into())));
        assert!(names.contains(&("DIMM A1".into(), "Temperature".into())));
    }
}
