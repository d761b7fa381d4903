//! The one health verdict: what `health`, `sweep` and everything reading a [`crate::HealthSummary`] call a
//! BMC's health, with the reasons in words.
//!
//! Why one function: `health` and `sweep` once judged the same BMC by different rules (critical against
//! ok, unknown against ok). The rules, in one place:
//! - a part or sensor that is absent, disabled or on standby, or a sensor with neither a reading nor a
//!   health, says nothing about the machine and never counts (Supermicro lists empty DIMM slots as
//!   temperature sensors reading 0 against thresholds of 0);
//! - what was read (sensors, parts below the system, conditions) and the BMC's own rollup (system, chassis,
//!   `ServiceConditions`) are both weighed: the worse wins, and when they disagree the verdict says so;
//! - `unknown` only when nothing at all could be judged.

use lifeline_types::Health;
use serde::Serialize;

use crate::health::{ResourceHealth, SensorReading};

/// A part below the system whose status is not OK (or a GPU, always listed in [`GpuHealth`]).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct ComponentHealth {
    /// `drive`, `storage controller`, `storage`, `processor`, `GPU`, `memory`, `manager`, `firmware`.
    pub kind: String,
    /// Its `@odata.id`.
    pub resource: String,
    pub name: String,
    pub health: Health,
    pub state: Option<String>,
}

/// A condition the BMC reports (`Status.Conditions` of any resource read, `ServiceConditions`).
pub type ConditionEvent = lifeline_redfish::component_model::Condition;

/// The verdict and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub health: Health,
    /// One line per thing that is not OK ("PSU 2: input LossOfInput (critical)").
    pub reasons: Vec<String>,
    /// The BMC's own rollup (worst of the system's and chassis' `HealthRollup`/`Health` and the service's
    /// conditions rollup), when it reports one.
    pub bmc_rollup: Option<Health>,
    /// What was read and the BMC's rollup disagree, in words.
    pub disagreement: Option<String>,
}

/// What the verdict weighs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Inputs<'a> {
    /// The BMC's own rollups of the system and chassis.
    pub resources: &'a [ResourceHealth],
    pub sensors: &'a [SensorReading],
    /// Parts below the system that are not OK.
    pub components: &'a [ComponentHealth],
    pub conditions: &'a [ConditionEvent],
    /// `ServiceConditions.HealthRollup`.
    pub service_rollup: Option<Health>,
    /// Faults found otherwise (IPMI chassis power fault), already in words.
    pub faults: &'a [(Health, String)],
}

/// Whether a `Status.State` (or IPMI state text) is a part in service.
pub fn in_service(state: Option<&str>) -> bool {
    lifeline_redfish::component_model::in_service(state)
}

/// Whether a sensor counts toward the verdict.
pub fn counts(s: &SensorReading) -> bool {
    in_service(s.state.as_deref()) && s.health != Health::Unknown
}

fn worse(a: Option<Health>, b: Health) -> Option<Health> {
    Some(a.map_or(b, |a| a.worst(b)))
}

fn fmt_number(v: f64) -> String {
    // Shortest text that reads back as the same number: the precision the BMC gave (1.059, not 1.1).
    format!("{v}")
}

/// A sensor's reason line: name (chassis), reading against the threshold it crossed, state, health.
pub fn sensor_reason(s: &SensorReading) -> String {
    let units = s.units.as_deref().map(|u| format!(" {u}")).unwrap_or_default();
    let mut what = match s.reading {
        Some(v) => {
            let crossed = [s.thresholds.upper_fatal, s.thresholds.upper_critical, s.thresholds.upper_caution]
                .into_iter()
                .flatten()
                .find(|t| v >= *t);
            match crossed {
                Some(t) => format!("{}{units} > {}", fmt_number(v), fmt_number(t)),
                None => format!("{}{units}", fmt_number(v)),
            }
        }
        None => "no reading".to_owned(),
    };
    if let Some(l) = s.line_input.as_deref().filter(|l| *l != "Normal") {
        what = format!("{what}, input {l}");
    }
    let place = s.chassis.as_deref().map(|c| format!(" [{c}]")).unwrap_or_default();
    format!("{}{place}: {what} ({})", s.name, s.health)
}

/// The verdict over `i`.
pub fn verdict(i: &Inputs<'_>) -> Verdict {
    let mut own: Option<Health> = None;
    let mut reasons = Vec::new();
    for s in i.sensors.iter().filter(|s| counts(s)) {
        own = worse(own, s.health);
        if s.health != Health::Ok {
            reasons.push(sensor_reason(s));
        }
    }
    for c in i.components.iter().filter(|c| in_service(c.state.as_deref())) {
        own = worse(own, c.health);
        if c.health != Health::Ok {
            let state = c.state.as_deref().map(|s| format!(", {s}")).unwrap_or_default();
            reasons.push(format!("{} {}: {}{state}", c.kind, c.name, c.health));
        }
    }
    for c in i.conditions {
        let h = c.severity.unwrap_or(Health::Warning);
        own = worse(own, h);
        if h != Health::Ok {
            let what =
                c.message.clone().or_else(|| c.message_id.clone()).unwrap_or_else(|| "condition".into());
            reasons.push(format!("{}: {what} ({h})", c.origin));
        }
    }
    for (h, why) in i.faults {
        own = worse(own, *h);
        reasons.push(why.clone());
    }
    let mut bmc: Option<Health> = None;
    let mut bmc_bad = Vec::new();
    for r in i.resources.iter().filter(|r| r.health != Health::Unknown) {
        bmc = worse(bmc, r.health);
        if r.health != Health::Ok {
            bmc_bad.push(format!("{}: the BMC reports {}", r.resource, r.health));
        }
    }
    if let Some(h) = i.service_rollup.filter(|h| *h != Health::Unknown) {
        bmc = worse(bmc, h);
        if h != Health::Ok {
            bmc_bad.push(format!("ServiceConditions: the BMC reports {h}"));
        }
    }
    let disagreement = match (own, bmc) {
        (Some(o), Some(Health::Ok)) if o != Health::Ok => {
            Some(format!("the BMC's own rollup is ok, but what was read is {o}"))
        }
        (Some(Health::Ok), Some(b)) if b != Health::Ok => {
            Some(format!("the BMC's own rollup is {b}, but nothing read below it is: the BMC alone says why"))
        }
        _ => None,
    };
    // The BMC's word goes after what was read: an operator reads the parts first.
    reasons.extend(bmc_bad);
    let health = match (own, bmc) {
        (None, None) => Health::Unknown,
        (Some(h), None) | (None, Some(h)) => h,
        (Some(a), Some(b)) => a.worst(b),
    };
    Verdict { health, reasons, bmc_rollup: bmc, disagreement }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::Thresholds;
    use proptest::prelude::*;

    fn sensor(name: &str, reading: Option<f64>, health: Health, state: Option<&str>) -> SensorReading {
        SensorReading {
            name: name.into(),
            kind: "Temperature".into(),
            reading,
            units: Some("Cel".into()),
            health,
            thresholds: Thresholds { upper_critical: Some(90.0), ..Thresholds::default() },
            state: state.map(str::to_owned),
            output_watts: None,
            line_input: None,
            id: None,
            chassis: Some("1".into()),
        }
    }

    fn res(h: Health) -> ResourceHealth {
        ResourceHealth { resource: "/redfish/v1/Systems/1".into(), health: h }
    }

    #[test]
    fn absent_and_reading_less_sensors_never_count() {
        let sensors = [
            sensor("DIMM A2 Temp", Some(0.0), Health::Critical, Some("Absent")),
            sensor("GPU power", None, Health::Unknown, Some("Enabled")),
            sensor("CPU Temp", Some(40.0), Health::Ok, Some("Enabled")),
        ];
        let v = verdict(&Inputs { sensors: &sensors, resources: &[res(Health::Ok)], ..Inputs::default() });
        assert_eq!(v.health, Health::Ok);
        assert!(v.reasons.is_empty() && v.disagreement.is_none(), "{v:?}");
    }

    #[test]
    fn reasons_in_words_and_disagreement_shown() {
        let sensors = [sensor("GPU 3 Temp", Some(92.5), Health::Critical, Some("Enabled"))];
        let v = verdict(&Inputs { sensors: &sensors, resources: &[res(Health::Ok)], ..Inputs::default() });
        assert_eq!(v.health, Health::Critical);
        assert_eq!(v.reasons, ["GPU 3 Temp [1]: 92.5 Cel > 90 (critical)"]);
        // The precision the BMC gave.
        let mut rail = sensor("VDD 1V05", Some(1.059), Health::Warning, Some("Enabled"));
        (rail.units, rail.thresholds) = (Some("V".into()), Thresholds::default());
        assert_eq!(sensor_reason(&rail), "VDD 1V05 [1]: 1.059 V (warning)");
        assert!(v.disagreement.as_deref().unwrap().contains("rollup is ok"), "{v:?}");
        let v = verdict(&Inputs { resources: &[res(Health::Warning)], ..Inputs::default() });
        assert_eq!((v.health, v.disagreement.is_none()), (Health::Warning, true));
        assert_eq!(v.reasons, ["/redfish/v1/Systems/1: the BMC reports warning"]);
        assert_eq!(verdict(&Inputs::default()).health, Health::Unknown);
    }

    fn arb_health() -> impl Strategy<Value = Health> {
        prop_oneof![Just(Health::Ok), Just(Health::Warning), Just(Health::Critical), Just(Health::Unknown)]
    }

    proptest! {
        /// The verdict is never better than the BMC's rollup nor than any counted sensor, it is `unknown`
        /// only when nothing counted, and every non-OK counted sensor has a reason.
        #[test]
        fn never_better_than_what_counts(
            hs in proptest::collection::vec((arb_health(), prop_oneof![Just(None), Just(Some("Absent")), Just(Some("Enabled"))]), 0..8),
            rollup in proptest::option::of(arb_health()),
        ) {
            let sensors: Vec<_> = hs.iter().map(|(h, s)| sensor("s", Some(1.0), *h, *s)).collect();
            let resources: Vec<_> = rollup.into_iter().map(res).collect();
            let v = verdict(&Inputs { sensors: &sensors, resources: &resources, ..Inputs::default() });
            let counted: Vec<_> = sensors.iter().filter(|s| counts(s)).collect();
            for s in &counted {
                prop_assert_eq!(v.health.worst(s.health), v.health);
            }
            if let Some(r) = rollup.filter(|r| *r != Health::Unknown) {
                prop_assert_eq!(v.health.worst(r), v.health);
            }
            let nothing = counted.is_empty() && rollup.is_none_or(|r| r == Health::Unknown);
            prop_assert_eq!(v.health == Health::Unknown, nothing);
            prop_assert!(v.reasons.len() >= counted.iter().filter(|s| s.health != Health::Ok).count());
        }
    }
}
