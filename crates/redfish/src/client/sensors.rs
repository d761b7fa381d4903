//! Sensors of a chassis: the modern `Sensors` collection, the legacy `Thermal` and `Power` resources, and
//! power supplies wherever the BMC keeps their status.

use serde_json::Value;

use super::Client;
use crate::doc::FieldWarning;
use crate::error::RedfishError;
use crate::model::{self, Chassis, SensorSet};
use crate::psu;

impl Client {
    /// Sensors of a chassis: the `Sensors` collection when present, else legacy `Thermal` + `Power`; power
    /// supplies from `PowerSubsystem` when the chassis has one, else from legacy `Power`.
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
        let (sensors, thermal, power, subsystem) =
            tokio::join!(sensors, doc(thermal_link), doc(chassis.power.clone()), subsystem);
        let mut set = SensorSet::default();
        if let Some(l) = sensors {
            let l = l?;
            set.warnings = l.warnings;
            for (id, v) in l.items {
                set.readings.push(model::sensor_from_value(&v, &id, &mut set.warnings));
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
                    set.readings.extend(r);
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
                    let legacy = model::power_from_value(&v, &link, &mut set.warnings);
                    for r in legacy {
                        let psu = matches!(r.kind.as_deref(), Some("PowerSupply" | "PowerRedundancy"));
                        // Supplies once (PowerSubsystem wins); with a Sensors collection only the supplies.
                        if (psu && supplies_known) || (modern && !psu) {
                            continue;
                        }
                        if !(modern && set.readings.iter().any(|s| s.name.is_some() && s.name == r.name)) {
                            set.readings.push(r);
                        }
                    }
                }
                Err(e) if modern => unreadable(link, "power supplies ", e, &mut set.warnings),
                Err(e) => unreadable(link, "", e, &mut set.warnings),
            }
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
