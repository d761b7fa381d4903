//! Health summary: one rollup plus per-sensor readings with units and thresholds, the same shape whether the
//! numbers came from IPMI SDRs + Get Sensor Reading or from Redfish `Sensors` / legacy `Thermal` + `Power`.
//!
//! Lenient by construction: a sensor that cannot be read is listed as `unknown` with its name, never dropped
//! and never fatal to the summary.

use std::collections::HashMap;

use lifeline_ipmi::wire::sdr::{FullSensor, SdrBody, SdrRecord, SensorCommon};
use lifeline_ipmi::wire::sensor::{GetSensorReading, SensorReading as IpmiReading};
use lifeline_types::{BmcProtocol, Health, PowerState};
use serde::Serialize;

use crate::conn::{IpmiConn, RedfishConn, ipmi_err, rf_err};
use crate::error::BmcError;

/// Threshold values in the sensor's units; `None` when the BMC does not publish that threshold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct Thresholds {
    pub lower_fatal: Option<f64>,
    pub lower_critical: Option<f64>,
    pub lower_caution: Option<f64>,
    pub upper_caution: Option<f64>,
    pub upper_critical: Option<f64>,
    pub upper_fatal: Option<f64>,
}

impl Thresholds {
    /// Health implied by a reading, for BMCs that publish thresholds but no per-sensor health.
    pub fn judge(&self, v: f64) -> Health {
        let above = |t: Option<f64>| t.is_some_and(|t| v >= t);
        let below = |t: Option<f64>| t.is_some_and(|t| v <= t);
        if above(self.upper_critical)
            || above(self.upper_fatal)
            || below(self.lower_critical)
            || below(self.lower_fatal)
        {
            Health::Critical
        } else if above(self.upper_caution) || below(self.lower_caution) {
            Health::Warning
        } else {
            Health::Ok
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct SensorReading {
    pub name: String,
    /// Temperature, Fan, Voltage, Power Supply, Current, ...
    pub kind: String,
    pub reading: Option<f64>,
    pub units: Option<String>,
    pub health: Health,
    pub thresholds: Thresholds,
    /// Protocol-specific state text (IPMI discrete state bits, Redfish `Status.State`).
    pub state: Option<String>,
    /// Power supplies (Redfish): the output power (`LastPowerOutputWatts`, PowerSubsystem metrics), while
    /// `reading` is the input power.
    pub output_watts: Option<f64>,
    /// Power supplies (Redfish): `LineInputStatus` (`LossOfInput` makes the supply critical).
    pub line_input: Option<String>,
    /// Redfish: the sensor's id (`Id`, legacy `MemberId`), so rows named alike can be told apart.
    pub id: Option<String>,
    /// Redfish: the chassis it was read under.
    pub chassis: Option<String>,
}

/// A resource's own status as the BMC reports it (Redfish `Status.HealthRollup`, else `Status.Health`).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct ResourceHealth {
    /// `@odata.id` of the resource (a ComputerSystem or Chassis).
    pub resource: String,
    pub health: Health,
}

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct HealthSummary {
    pub bmc: String,
    pub protocol: BmcProtocol,
    /// The verdict ([`crate::verdict::verdict`]): the worse of what was read and the BMC's own rollup.
    pub health: Health,
    /// Why, one line per thing that is not OK.
    pub reasons: Vec<String>,
    /// The BMC's own rollup, when it reports one.
    pub bmc_rollup: Option<Health>,
    /// What was read and the BMC's rollup disagree.
    pub disagreement: Option<String>,
    /// Parts below the system that are not OK (Redfish full read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<crate::verdict::ComponentHealth>,
    /// Conditions the BMC reports (`Status.Conditions`, `ServiceConditions`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<crate::verdict::ConditionEvent>,
    /// Every GPU the BMC lists (Processors of type GPU), with its health.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<crate::below::GpuHealth>,
    /// Fewer GPUs listed than the inventory expects (Redfish full read of a target with an expected count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus_missing: Option<crate::below::GpuCount>,
    /// Every system the BMC lists (Redfish full read): `@odata.id`s.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub systems: Vec<String>,
    /// Every sensor; empty for a rollup-only summary (see [`HealthSummary::rollup_only`]).
    pub sensors: Vec<SensorReading>,
    /// The system's and chassis' own rollups (Redfish; empty over IPMI).
    pub resources: Vec<ResourceHealth>,
    /// `health` is the BMC's own rollup of the system (and chassis), no sensor was read: what a fleet sweep
    /// reads by default (`SweepOptions::all_sensors`).
    pub rollup_only: bool,
    /// What could not be read or was repaired (one line each).
    pub warnings: Vec<String>,
}

/// Raw thresholds of a full record, converted (order in the record: unr, uc, unc, lnr, lc, lnc).
fn ipmi_thresholds(f: &FullSensor) -> Thresholds {
    let m = f.readable_thresholds;
    let get = |bit: u8, idx: usize| (m & (1 << bit) != 0).then(|| f.convert(f.thresholds[idx]));
    Thresholds {
        lower_caution: get(0, 5),
        lower_critical: get(1, 4),
        lower_fatal: get(2, 3),
        upper_caution: get(3, 2),
        upper_critical: get(4, 1),
        upper_fatal: get(5, 0),
    }
}

/// Get Sensor Thresholds reply: readable mask, then lnc, lc, lnr, unc, uc, unr (raw).
pub(crate) fn thresholds_reply(f: &FullSensor, data: &[u8]) -> Option<Thresholds> {
    let (&mask, raw) = data.split_first()?;
    let get =
        |bit: u8| (mask & (1 << bit) != 0).then(|| raw.get(bit as usize).map(|&r| f.convert(r))).flatten();
    Some(Thresholds {
        lower_caution: get(0),
        lower_critical: get(1),
        lower_fatal: get(2),
        upper_caution: get(3),
        upper_critical: get(4),
        upper_fatal: get(5),
    })
}

/// Discrete sensor states that matter to an operator (IPMI sensor-specific offsets, table 42-3).
fn discrete_health(sensor_type: u8, bits: u16) -> Health {
    let set = |b: u8| bits & (1 << b) != 0;
    match sensor_type {
        // Power supply: failure, AC lost (critical); predictive failure (warning).
        0x08 if set(1) || set(3) || set(4) => Health::Critical,
        0x08 if set(2) => Health::Warning,
        // Processor: IERR, thermal trip, FRB failures.
        0x07 if set(0) || set(1) || set(2) || set(3) => Health::Critical,
        // Memory: uncorrectable ECC / parity.
        0x0C if set(1) || set(3) => Health::Critical,
        0x0C if set(0) => Health::Warning,
        // Drive slot: fault; predictive failure.
        0x0D if set(1) => Health::Critical,
        0x0D if set(2) => Health::Warning,
        _ => Health::Ok,
    }
}

/// Turn one SDR + its reading into a normalised reading (pure: the tests feed it records directly).
pub(crate) fn ipmi_sensor(
    common: &SensorCommon,
    full: Option<&FullSensor>,
    rd: Option<IpmiReading>,
) -> SensorReading {
    let available = rd.filter(|r| !r.unavailable());
    let thresholds = full.filter(|_| common.is_threshold()).map(ipmi_thresholds).unwrap_or_default();
    let unit = common.unit_name();
    let (reading, health, state) = match available {
        None => (None, Health::Unknown, Some("unavailable".to_owned())),
        Some(r) if common.is_threshold() => {
            let v = full.map(|f| f.convert(r.raw));
            let bits = r.state1.unwrap_or(0);
            let h = if bits & 0x36 != 0 {
                Health::Critical
            } else if bits & 0x09 != 0 {
                Health::Warning
            } else {
                // Some BMCs never set the state bits: judge the value against the thresholds.
                v.map_or(Health::Ok, |v| thresholds.judge(v))
            };
            (v, h, None)
        }
        Some(r) => {
            let bits = r.state1.unwrap_or(0) as u16 | (r.state2.unwrap_or(0) as u16 & 0x7F) << 8;
            (None, discrete_health(common.sensor_type, bits), Some(format!("state {bits:#06x}")))
        }
    };
    SensorReading {
        name: common.name.clone(),
        kind: common.sensor_type_name(),
        reading,
        units: (!unit.is_empty() && common.is_threshold()).then_some(unit),
        health,
        thresholds,
        state,
        output_watts: None,
        line_input: None,
        id: None,
        chassis: None,
    }
}

/// Sensors read concurrently on one IPMI session (each is one or two requests).
const SENSOR_READS_IN_FLIGHT: usize = 4;

/// One sensor's reading and (threshold sensors) the thresholds the BMC enforces now; a completion code
/// becomes a warning and an `unknown` reading, a transport failure fails the read.
async fn read_sensor(
    session: &lifeline_ipmi::Session,
    bmc: &str,
    common: SensorCommon,
    full: Option<FullSensor>,
) -> Result<(SensorReading, Option<String>), BmcError> {
    let mut warning = None;
    let rd = match session.call(&GetSensorReading { number: common.number }).await {
        Ok(rd) => Some(rd),
        Err(lifeline_ipmi::Error::CompletionCode { code, .. }) => {
            warning = Some(format!("{}: Get Sensor Reading completion code {code:#04x}", common.name));
            None
        }
        // One sensor whose every retransmission was lost is `unknown`, not a failed health read (a BMC that
        // stopped answering fails the whole read in `health`).
        Err(e @ lifeline_ipmi::Error::Timeout { .. }) => {
            warning = Some(format!("{}: {e}", common.name));
            None
        }
        Err(e) => return Err(ipmi_err(bmc)(e)),
    };
    let mut reading = ipmi_sensor(&common, full.as_ref(), rd);
    // The SDR holds nominal thresholds (and often no readable mask); Get Sensor Thresholds is what the BMC
    // enforces now.
    if let (Some(f), true) = (&full, common.is_threshold())
        && let Ok(r) = session.raw(0x04, 0x27, vec![common.number]).await
        && r.completion == 0
        && let Some(t) = thresholds_reply(f, &r.data)
    {
        reading.thresholds = t;
        if let (Some(v), Health::Ok) = (reading.reading, reading.health) {
            reading.health = t.judge(v);
        }
    }
    Ok((reading, warning))
}

impl IpmiConn {
    pub(crate) async fn sdr(&mut self) -> Result<&[SdrRecord], BmcError> {
        if self.sdr.is_none() {
            let recs = match &self.sdr_cache {
                Some((cache, key)) => cache.records(key, &self.session).await,
                None => self.session.sdr_records().await.map(std::sync::Arc::new),
            };
            self.sdr = Some(recs.map_err(ipmi_err(&self.bmc))?);
        }
        Ok(self.sdr.as_deref().map(Vec::as_slice).unwrap_or_default())
    }

    /// Sensor name and full record by sensor number (for naming SEL entries).
    pub(crate) async fn sensor_index(&mut self) -> HashMap<u8, (String, Option<FullSensor>)> {
        match self.sdr().await {
            Ok(recs) => recs
                .iter()
                .filter_map(|r| match &r.body {
                    SdrBody::Full(f) => Some((f.common.number, (f.common.name.clone(), Some(f.clone())))),
                    SdrBody::Compact(c) => Some((c.common.number, (c.common.name.clone(), None))),
                    SdrBody::Other { .. } => None,
                })
                .collect(),
            Err(_) => HashMap::new(),
        }
    }

    pub(crate) async fn health(&mut self) -> Result<HealthSummary, BmcError> {
        use futures::StreamExt;
        self.sdr().await?;
        let records = self.sdr.clone().unwrap_or_default();
        let items: Vec<(SensorCommon, Option<FullSensor>)> = records
            .iter()
            .filter_map(|r| match &r.body {
                SdrBody::Full(f) => Some((f.common.clone(), Some(f.clone()))),
                SdrBody::Compact(c) => Some((c.common.clone(), None)),
                SdrBody::Other { .. } => None,
            })
            .collect();
        let (session, bmc) = (&self.session, self.bmc.as_str());
        // Sensors are read a few at a time (the session keeps them apart by rqSeq): on a lossy link a
        // sensor costs a retransmission timeout now and then, and those overlap instead of adding up.
        let results: Vec<_> = futures::stream::iter(items)
            .map(|(common, full)| read_sensor(session, bmc, common, full))
            .buffered(SENSOR_READS_IN_FLIGHT)
            .collect()
            .await;
        let mut sensors = Vec::new();
        let mut warnings = Vec::new();
        for r in results {
            let (reading, warning) = r?;
            sensors.push(reading);
            warnings.extend(warning);
        }
        // Every sensor unknown: tell a BMC that stopped answering (an error) from one with no readings.
        if !sensors.is_empty()
            && sensors.iter().all(|s| s.reading.is_none() && s.state.is_none())
            && let Err(e) = self.session.device_id().await
        {
            return Err(ipmi_err(&self.bmc)(e));
        }
        let mut faults = Vec::new();
        match self.session.chassis_status().await {
            Ok(cs) if cs.power_fault() => {
                warnings.push("chassis reports a power fault".into());
                faults.push((Health::Critical, "chassis: power fault".to_owned()));
            }
            Ok(_) => {}
            Err(e) => warnings.push(format!("chassis status unreadable: {e}")),
        }
        let v = crate::verdict::verdict(&crate::verdict::Inputs {
            sensors: &sensors,
            faults: &faults,
            ..Default::default()
        });
        let mut h = summary(&self.bmc, BmcProtocol::Ipmi, v, warnings);
        h.sensors = sensors;
        Ok(h)
    }
}

/// A summary carrying verdict `v` and nothing read yet.
fn summary(
    bmc: &str,
    protocol: BmcProtocol,
    v: crate::verdict::Verdict,
    warnings: Vec<String>,
) -> HealthSummary {
    HealthSummary {
        bmc: bmc.to_owned(),
        protocol,
        health: v.health,
        reasons: v.reasons,
        bmc_rollup: v.bmc_rollup,
        disagreement: v.disagreement,
        components: Vec::new(),
        conditions: Vec::new(),
        gpus: Vec::new(),
        gpus_missing: None,
        systems: Vec::new(),
        sensors: Vec::new(),
        resources: Vec::new(),
        rollup_only: false,
        warnings,
    }
}

fn redfish_sensor(r: &lifeline_redfish::model::SensorReading) -> SensorReading {
    let thresholds =
        Thresholds { upper_caution: r.upper_caution, upper_critical: r.upper_critical, ..Default::default() };
    // An absent, disabled or standby part has no reading to judge (Supermicro: empty DIMM slots read 0
    // against thresholds of 0; iLO: absent parts read 0).
    let present = crate::verdict::in_service(r.state.as_deref());
    let reading = r.reading.filter(|_| present);
    let health = match (r.health, reading) {
        _ if !present => Health::Unknown,
        (Some(h), _) => h,
        (None, Some(v)) => thresholds.judge(v),
        (None, None) => Health::Unknown,
    };
    SensorReading {
        name: r
            .name
            .clone()
            .or_else(|| r.id.clone())
            .or_else(|| r.odata_id.clone())
            .unwrap_or_else(|| "?".into()),
        kind: r.kind.clone().unwrap_or_else(|| "Other".into()),
        reading,
        units: r.units.clone(),
        health,
        thresholds,
        state: r.state.clone(),
        output_watts: r.output_watts,
        line_input: r.line_input.clone(),
        id: r.id.clone(),
        chassis: r.chassis.clone(),
    }
}

/// Sensors of one chassis (the redfish client adds legacy `Power` supplies to a `Sensors` collection).
async fn chassis_sensors(
    client: &lifeline_redfish::Client,
    c: &lifeline_redfish::model::Chassis,
) -> (Vec<SensorReading>, Vec<String>) {
    match client.sensors(c).await {
        Ok(set) => (
            set.readings.iter().map(redfish_sensor).collect(),
            set.warnings.iter().map(|w| format!("{}: {}", w.at, w.problem)).collect(),
        ),
        Err(e) => (Vec::new(), vec![format!("{}: sensors unreadable: {e}", c.odata_id)]),
    }
}

fn resource(odata_id: &str, status: &lifeline_redfish::model::Status) -> Option<ResourceHealth> {
    status.overall().map(|health| ResourceHealth { resource: odata_id.to_owned(), health })
}

impl RedfishConn {
    /// System status and every chassis' sensors; the system and chassis listings are read concurrently, as
    /// are the chassis, so a slow BMC costs few round trips.
    pub(crate) async fn health(&mut self) -> Result<HealthSummary, BmcError> {
        self.health_read(true).await
    }

    /// `deep`: also every system the BMC lists and what lies below the system ([`crate::below`]), the
    /// `health` verb's read. Without it (an every-sensor sweep, `sdr`): the system, the chassis and their
    /// sensors, judged by the same verdict over what was read.
    pub(crate) async fn health_read(&mut self, deep: bool) -> Result<HealthSummary, BmcError> {
        let mut warnings = Vec::new();
        let mut resources = Vec::new();
        let client = self.client.clone();
        let listing = async { if deep { Some(client.systems().await) } else { None } };
        let (system, chassis, listed) = tokio::join!(self.system(), client.chassis(), listing);
        let listed = listed.unwrap_or_else(|| Ok(lifeline_redfish::Listing::default()));
        let mut below_systems = Vec::new();
        match &system {
            Ok(s) => {
                resources.extend(resource(&s.odata_id, &s.status));
                below_systems.push(s.clone());
            }
            Err(e) => warnings.push(format!("system unreadable: {e}")),
        }
        let systems: Vec<String> = match &listed {
            Ok(_) if !deep => Vec::new(),
            Ok(l) => l.items.iter().map(|s| s.odata_id.clone()).collect(),
            Err(e) => {
                warnings.push(format!("systems unreadable: {e}"));
                Vec::new()
            }
        };
        if let (Ok(s), Ok(l)) = (&system, &listed) {
            let node = crate::below::node_systems(s, &l.items);
            let name =
                |o: &lifeline_redfish::model::ComputerSystem| o.id.clone().unwrap_or(o.odata_id.clone());
            let read_with: Vec<String> = node.iter().skip(1).map(name).collect();
            let others: Vec<String> = l
                .items
                .iter()
                .filter(|o| {
                    !node.iter().any(|n| n.odata_id.trim_end_matches('/') == o.odata_id.trim_end_matches('/'))
                })
                .map(name)
                .collect();
            let target = name(s);
            if !others.is_empty() {
                warnings.push(format!(
                    "this BMC has {} systems; this target reads {target}{} only ({} not read: name it as the target's system)",
                    l.items.len(),
                    read_with.iter().map(|b| format!(" and its GPU baseboard {b}")).collect::<String>(),
                    others.join(", ")
                ));
            } else if !read_with.is_empty() {
                warnings.push(format!(
                    "this BMC has {} systems: {target} and its GPU baseboard {} (read with it)",
                    l.items.len(),
                    read_with.join(", ")
                ));
            }
            below_systems = node;
        }
        let chassis = chassis.map_err(rf_err(&self.bmc))?;
        warnings.extend(chassis.warnings.iter().map(|w| format!("{}: {}", w.at, w.problem)));
        let with_sensors: Vec<_> = chassis
            .items
            .iter()
            .filter(|c| c.sensors.is_some() || c.thermal.is_some() || c.power.is_some())
            .collect();
        resources.extend(with_sensors.iter().filter_map(|c| resource(&c.odata_id, &c.status)));
        let per_chassis = futures::future::join_all(with_sensors.iter().map(|c| chassis_sensors(&client, c)));
        let below = async {
            if deep {
                crate::below::below(&client, &below_systems, &chassis.items).await
            } else {
                crate::below::Below::default()
            }
        };
        let (per_chassis, below) = tokio::join!(per_chassis, below);
        let mut sensors = Vec::new();
        for (s, w) in per_chassis {
            sensors.extend(s);
            warnings.extend(w);
        }
        warnings.extend(below.warnings);
        let mut conditions = below.conditions;
        for c in &chassis.items {
            conditions.extend(c.conditions.iter().cloned());
        }
        let v = crate::verdict::verdict(&crate::verdict::Inputs {
            resources: &resources,
            sensors: &sensors,
            components: &below.components,
            conditions: &conditions,
            service_rollup: below.service_rollup,
            faults: &[],
        });
        let mut h = summary(&self.bmc, BmcProtocol::Redfish, v, warnings);
        h.sensors = sensors;
        h.resources = resources;
        h.components = below.components;
        h.conditions = conditions;
        h.gpus = below.gpus;
        h.systems = systems;
        Ok(h)
    }

    /// The BMC's own rollup, read from the one ComputerSystem resource (`Status.HealthRollup`, else
    /// `Status.Health`) plus its `PowerState`, in one GET once the system's path is known. Why not every
    /// sensor: a fleet sweep wants "which nodes are unwell", which the BMC already computed; reading ~30
    /// sensor resources per BMC costs 30 round trips on a slow BMC. With `chassis`, and when the system has
    /// no `HealthRollup` (a bare `Health` is, per schema, the resource's own), the chassis the system links
    /// to are read too (concurrently, one more round trip), so fans and power supplies are covered. A BMC that reports no rollup at all falls back to the full sensor read.
    pub(crate) async fn rollup(&mut self, chassis: bool) -> Result<(PowerState, HealthSummary), BmcError> {
        // The chassis an earlier visit needed are read at the same time as the system (one round trip
        // instead of two); wasted only when the system has gained a HealthRollup since.
        let client = self.client.clone();
        let read = |links: Vec<String>| {
            let client = client.clone();
            async move {
                let reads = links.into_iter().map(|link| {
                    let client = client.clone();
                    async move {
                        let r = client.get_json(&link).await;
                        (link, r)
                    }
                });
                futures::future::join_all(reads).await
            }
        };
        let early = if chassis { self.known.chassis.clone() } else { Vec::new() };
        let (sys, mut read_early) = tokio::join!(self.system(), read(early));
        let sys = sys?;
        let power = sys.power_state.unwrap_or(PowerState::Unknown);
        let mut warnings: Vec<String> =
            sys.warnings.iter().map(|w| format!("{}: {}", w.at, w.problem)).collect();
        let mut resources: Vec<ResourceHealth> = resource(&sys.odata_id, &sys.status).into_iter().collect();
        // `HealthRollup` covers the system's dependents by definition; a bare `Health` is the resource's own.
        let needed: Vec<String> =
            if chassis && sys.status.health_rollup.is_none() { sys.chassis.clone() } else { Vec::new() };
        read_early.retain(|(link, _)| needed.contains(link));
        let missing: Vec<String> =
            needed.iter().filter(|l| !read_early.iter().any(|(r, _)| r == *l)).cloned().collect();
        read_early.extend(read(missing).await);
        for link in &needed {
            let Some((_, r)) = read_early.iter().find(|(l, _)| l == link) else { continue };
            match r {
                Ok((v, notes)) => {
                    let c = lifeline_redfish::model::Chassis::from_value(v, link);
                    warnings.extend(notes.iter().map(|w| format!("{}: {}", w.at, w.problem)));
                    resources.extend(resource(&c.odata_id, &c.status));
                }
                Err(e) => warnings.push(format!("{link}: chassis unreadable: {e}")),
            }
        }
        if chassis {
            self.used_chassis = Some(needed);
        }
        if resources.is_empty() {
            warnings
                .push(format!("{}: no Status.Health or HealthRollup; reading every sensor", sys.odata_id));
            let mut full = self.health_read(false).await?;
            full.warnings.splice(0..0, warnings);
            return Ok((power, full));
        }
        let v = crate::verdict::verdict(&crate::verdict::Inputs {
            resources: &resources,
            conditions: &sys.conditions,
            ..Default::default()
        });
        let mut summary = summary(&self.bmc, BmcProtocol::Redfish, v, warnings);
        summary.conditions = sys.conditions.clone();
        summary.resources = resources;
        summary.rollup_only = true;
        Ok((power, summary))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn common(name: &str, sensor_type: u8, threshold: bool) -> SensorCommon {
        SensorCommon {
            owner_id: 0x20,
            owner_lun: 0,
            number: 3,
            entity_id: 3,
            entity_instance: 1,
            sensor_type,
            event_reading_type: if threshold { 0x01 } else { 0x6F },
            units1: 0,
            base_unit: 1,
            modifier_unit: 0,
            name: name.into(),
        }
    }

    fn full(c: SensorCommon) -> FullSensor {
        FullSensor {
            common: c,
            linearization: 0,
            m: 1,
            b: 0,
            r_exp: 0,
            b_exp: 0,
            readable_thresholds: 0b11_1000,
            thresholds: [95, 90, 85, 0, 0, 0],
        }
    }

    fn reading(raw: u8, state: u8) -> IpmiReading {
        IpmiReading { raw, flags: 0xC0, state1: Some(state), state2: None }
    }

    #[test]
    fn threshold_sensor_with_and_without_state_bits() {
        let f = full(common("GPU0 Temp", 0x01, true));
        let ok = ipmi_sensor(&f.common, Some(&f), Some(reading(60, 0)));
        assert_eq!((ok.reading, ok.health), (Some(60.0), Health::Ok));
        assert_eq!(ok.thresholds.upper_critical, Some(90.0));
        assert_eq!(ok.thresholds.upper_fatal, Some(95.0));
        assert_eq!(ok.thresholds.lower_critical, None);
        // uc going high asserted (bit 4).
        let hot = ipmi_sensor(&f.common, Some(&f), Some(reading(92, 0x18)));
        assert_eq!(hot.health, Health::Critical);
        // No state bits from the BMC: judged from thresholds.
        let warm = ipmi_sensor(&f.common, Some(&f), Some(reading(86, 0)));
        assert_eq!(warm.health, Health::Warning);
    }

    #[test]
    fn unavailable_and_discrete() {
        let f = full(common("GPU0 Temp", 0x01, true));
        let na = ipmi_sensor(
            &f.common,
            Some(&f),
            Some(IpmiReading { raw: 0, flags: 0x20, state1: None, state2: None }),
        );
        assert_eq!((na.health, na.reading), (Health::Unknown, None));
        let psu = common("PSU1 Status", 0x08, false);
        let failed = ipmi_sensor(&psu, None, Some(reading(0, 0x03)));
        assert_eq!(failed.health, Health::Critical);
        let present = ipmi_sensor(&psu, None, Some(reading(0, 0x01)));
        assert_eq!(present.health, Health::Ok);
    }
}
