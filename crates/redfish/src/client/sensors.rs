//! Sensors of a chassis: the modern `Sensors` collection, the legacy `Thermal` and `Power` resources, and
//! power supplies wherever the BMC keeps their status.

use serde_json::Value;

use super::Client;
use crate::doc::FieldWarning;
use crate::error::RedfishError;
use crate::model::{self, Chassis, SensorSet};

impl Client {
    /// Sensors of a chassis: the `Sensors` collection when present, else legacy `Thermal` + `Power`.
    ///
    /// With a `Sensors` collection, the power supplies' status is still read from legacy `Power` (at the same
    /// time): many BMCs list PSU input power as a sensor but report a failed supply only in
    /// `Power.PowerSupplies[].Status`, and a sweep that missed a dead PSU would be lying.
    pub async fn sensors(&self, chassis: &Chassis) -> Result<SensorSet, RedfishError> {
        let mut set = SensorSet::default();
        if let Some(link) = &chassis.sensors {
            let psu = async {
                match &chassis.power {
                    Some(p) => Some((p.clone(), self.get_json(p).await)),
                    None => None,
                }
            };
            let (l, psu) = tokio::join!(self.members(link), psu);
            let l = l?;
            set.warnings = l.warnings;
            for (id, v) in l.items {
                set.readings.push(model::sensor_from_value(&v, &id, &mut set.warnings));
            }
            match psu {
                Some((p, Ok((v, notes)))) => {
                    set.warnings.extend(notes);
                    let legacy = model::power_from_value(&v, &p, &mut set.warnings);
                    for r in legacy.into_iter().filter(|r| r.kind.as_deref() == Some("PowerSupply")) {
                        if !set.readings.iter().any(|s| s.name.is_some() && s.name == r.name) {
                            set.readings.push(r);
                        }
                    }
                }
                Some((p, Err(e))) => set
                    .warnings
                    .push(FieldWarning { at: p, problem: format!("power supplies unreadable: {e}") }),
                None => {}
            }
            return Ok(set);
        }
        if chassis.thermal.is_none() && chassis.power.is_none() {
            return Err(RedfishError::Missing {
                bmc: self.bmc().to_owned(),
                url: chassis.odata_id.clone(),
                what: "Sensors, Thermal or Power link",
            });
        }
        for (link, parse) in [
            (
                &chassis.thermal,
                model::thermal_from_value
                    as fn(&Value, &str, &mut Vec<FieldWarning>) -> Vec<model::SensorReading>,
            ),
            (&chassis.power, model::power_from_value),
        ] {
            let Some(link) = link else { continue };
            match self.get_json(link).await {
                Ok((v, notes)) => {
                    set.warnings.extend(notes);
                    let r = parse(&v, link, &mut set.warnings);
                    set.readings.extend(r);
                }
                Err(e) => {
                    set.warnings.push(FieldWarning { at: link.clone(), problem: format!("unreadable: {e}") })
                }
            }
        }
        Ok(set)
    }
}
