//! Typed model of the Redfish schema subset Lifeline uses, read leniently.
//!
//! Why structs of `Option`s instead of generated schema types: vendors disagree with the schema in small ways
//! and a sweep must survive them. Each `from_value` reads field by field (see [`crate::doc`]) and keeps the
//! warnings on the result, so a caller shows "PowerState unreadable on node17" instead of failing node17.

use serde::Serialize;
use serde_json::Value;

use lifeline_types::{Health, PowerState};

use crate::doc::{FieldWarning, Fields};

/// `Status` object common to most resources.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Status {
    pub state: Option<String>,
    pub health: Option<Health>,
    pub health_rollup: Option<Health>,
}

impl Status {
    pub(crate) fn read(f: &mut Fields<'_, '_>) -> Status {
        let Some(mut s) = f.sub("Status") else { return Status::default() };
        Status {
            state: s.str("State"),
            health: s.health("Health"),
            // The schema says HealthRollup; sushy and some firmwares write HealthRollUp.
            health_rollup: s.health("HealthRollup").or_else(|| s.health("HealthRollUp")),
        }
    }

    /// Rollup if given, else own health.
    pub fn overall(&self) -> Option<Health> {
        self.health_rollup.or(self.health)
    }
}

pub(crate) fn odata_id(f: &mut Fields<'_, '_>, fallback: &str) -> String {
    f.str("@odata.id").unwrap_or_else(|| fallback.to_owned())
}

/// `/redfish/v1/`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ServiceRoot {
    pub id: Option<String>,
    pub name: Option<String>,
    pub redfish_version: Option<String>,
    pub vendor: Option<String>,
    pub product: Option<String>,
    pub uuid: Option<String>,
    /// Keys of the root `Oem` object (`Dell`, `Hpe`, `Supermicro`, ...): the strongest vendor hint.
    pub oem_keys: Vec<String>,
    pub systems: Option<String>,
    pub chassis: Option<String>,
    pub managers: Option<String>,
    pub session_service: Option<String>,
    /// `Links.Sessions`: where to POST a login (required by the spec when sessions exist).
    pub sessions: Option<String>,
    pub event_service: Option<String>,
    pub account_service: Option<String>,
    pub update_service: Option<String>,
    /// `ServiceConditions` (Redfish 2021.4+): every active condition of the service in one document.
    pub service_conditions: Option<String>,
    /// `ProtocolFeaturesSupported.ExpandQuery.NoLinks` (or `ExpandAll`): `$expand=.` embeds a collection's
    /// members, one request instead of one per member.
    pub expand: bool,
    pub warnings: Vec<FieldWarning>,
}

impl ServiceRoot {
    pub fn from_value(v: &Value, at: &str) -> Self {
        let mut warnings = Vec::new();
        let mut f = Fields::new(v, at, &mut warnings);
        let oem_keys = f.sub("Oem").map(|o| o.keys()).unwrap_or_default();
        let sessions = f.sub("Links").and_then(|mut l| l.link("Sessions"));
        let expand = f.sub("ProtocolFeaturesSupported").is_some_and(|mut p| {
            p.sub("ExpandQuery")
                .is_some_and(|mut e| e.bool("NoLinks") == Some(true) || e.bool("ExpandAll") == Some(true))
        });
        let mut r = ServiceRoot {
            id: f.str("Id"),
            name: f.str("Name"),
            redfish_version: f.str("RedfishVersion"),
            vendor: f.str("Vendor"),
            product: f.str("Product"),
            uuid: f.str("UUID"),
            oem_keys,
            systems: f.link("Systems"),
            chassis: f.link("Chassis"),
            managers: f.link("Managers"),
            session_service: f.link("SessionService"),
            sessions,
            event_service: f.link("EventService"),
            account_service: f.link("AccountService"),
            update_service: f.link("UpdateService"),
            service_conditions: f.link("ServiceConditions"),
            expand,
            warnings: Vec::new(),
        };
        r.warnings = warnings;
        r
    }
}

/// `Boot` of a ComputerSystem (override settings only: what a recovery runbook changes).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Boot {
    pub override_enabled: Option<String>,
    pub override_target: Option<String>,
    pub override_mode: Option<String>,
    pub allowed_targets: Option<Vec<String>>,
}

/// `Actions/#ComputerSystem.Reset`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ResetAction {
    pub target: String,
    /// `ResetType@Redfish.AllowableValues`; `None` when the BMC did not say (then see `action_info`).
    pub allowable: Option<Vec<String>>,
    /// `@Redfish.ActionInfo` link (its `Parameters[Name=ResetType].AllowableValues`).
    pub action_info: Option<String>,
}

/// A ComputerSystem (the host behind the BMC).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ComputerSystem {
    pub odata_id: String,
    pub id: Option<String>,
    pub name: Option<String>,
    pub power_state: Option<PowerState>,
    pub status: Status,
    pub model: Option<String>,
    pub manufacturer: Option<String>,
    pub serial_number: Option<String>,
    pub uuid: Option<String>,
    pub host_name: Option<String>,
    pub boot: Boot,
    pub reset: Option<ResetAction>,
    pub log_services: Option<String>,
    pub chassis: Vec<String>,
    pub managed_by: Vec<String>,
    /// `LastResetTime` as served (ComputerSystem v1_16+): a change across a reset request is the BMC's own
    /// record that the reset happened, when the off phase was too short to see.
    pub last_reset_time: Option<String>,
    /// The collections below the system that hold parts with a health of their own.
    pub storage: Option<String>,
    pub processors: Option<String>,
    pub memory: Option<String>,
    /// `Status.Conditions`.
    pub conditions: Vec<crate::component_model::Condition>,
    pub warnings: Vec<FieldWarning>,
}

impl ComputerSystem {
    pub fn from_value(v: &Value, at: &str) -> Self {
        let mut warnings = Vec::new();
        let mut f = Fields::new(v, at, &mut warnings);
        let boot = match f.sub("Boot") {
            Some(mut b) => Boot {
                override_enabled: b.str("BootSourceOverrideEnabled"),
                override_target: b.str("BootSourceOverrideTarget"),
                override_mode: b.str("BootSourceOverrideMode"),
                allowed_targets: b.strs("BootSourceOverrideTarget@Redfish.AllowableValues"),
            },
            None => Boot::default(),
        };
        let reset = f.sub("Actions").and_then(|mut a| {
            let mut r = a.sub("#ComputerSystem.Reset")?;
            let target = r.str("target");
            if target.is_none() {
                r.warn("target", "reset action has no target");
            }
            Some(ResetAction {
                target: target?,
                allowable: r.strs("ResetType@Redfish.AllowableValues"),
                action_info: r.str("@Redfish.ActionInfo"),
            })
        });
        let (chassis, managed_by) = match f.sub("Links") {
            Some(mut l) => (l.links("Chassis"), l.links("ManagedBy")),
            None => (Vec::new(), Vec::new()),
        };
        let status = Status::read(&mut f);
        let odata_id = odata_id(&mut f, at);
        let mut s = ComputerSystem {
            odata_id,
            id: f.str("Id"),
            name: f.str("Name"),
            power_state: f.power_state("PowerState"),
            status,
            model: f.str("Model"),
            manufacturer: f.str("Manufacturer"),
            serial_number: f.str("SerialNumber"),
            uuid: f.str("UUID"),
            host_name: f.str("HostName"),
            boot,
            reset,
            log_services: f.link("LogServices"),
            chassis,
            managed_by,
            last_reset_time: f.str("LastResetTime"),
            storage: f.link("Storage"),
            processors: f.link("Processors"),
            memory: f.link("Memory"),
            conditions: Vec::new(),
            warnings: Vec::new(),
        };
        s.warnings = warnings;
        s.conditions = crate::component_model::conditions_of(v, &s.odata_id);
        s
    }
}

/// `ActionInfo` document: the allowable values of the `ResetType` parameter.
pub fn action_info_reset_types(v: &Value, at: &str, warnings: &mut Vec<FieldWarning>) -> Option<Vec<String>> {
    let f = Fields::new(v, at, warnings);
    let params = f.raw("Parameters")?.as_array()?;
    let p = params.iter().find(|p| p.get("Name").and_then(Value::as_str) == Some("ResetType"))?;
    let mut pf = Fields::new(p, format!("{at}/Parameters/ResetType"), warnings);
    pf.strs("AllowableValues")
}

/// A Chassis (enclosure: where sensors live).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Chassis {
    pub odata_id: String,
    pub id: Option<String>,
    pub name: Option<String>,
    pub chassis_type: Option<String>,
    pub manufacturer: Option<String>,
    pub model: Option<String>,
    pub serial_number: Option<String>,
    pub power_state: Option<PowerState>,
    pub status: Status,
    pub sensors: Option<String>,
    pub thermal: Option<String>,
    pub power: Option<String>,
    /// `PowerSubsystem` (Redfish 2020.4+): power supplies with `LineInputStatus`, and redundancy groups.
    pub power_subsystem: Option<String>,
    pub log_services: Option<String>,
    /// `Oem.Hpe.Links.Devices` (iLO): the PCIe devices, GPUs, NVSwitches and GPU baseboards among them.
    pub oem_devices: Option<String>,
    /// `Status.Conditions`.
    pub conditions: Vec<crate::component_model::Condition>,
    pub warnings: Vec<FieldWarning>,
}

impl Chassis {
    pub fn from_value(v: &Value, at: &str) -> Self {
        let mut warnings = Vec::new();
        let mut f = Fields::new(v, at, &mut warnings);
        let status = Status::read(&mut f);
        let odata_id = odata_id(&mut f, at);
        let mut c = Chassis {
            odata_id,
            id: f.str("Id"),
            name: f.str("Name"),
            chassis_type: f.str("ChassisType"),
            manufacturer: f.str("Manufacturer"),
            model: f.str("Model"),
            serial_number: f.str("SerialNumber"),
            power_state: f.power_state("PowerState"),
            status,
            sensors: f.link("Sensors"),
            thermal: f.link("Thermal"),
            power: f.link("Power"),
            power_subsystem: f.link("PowerSubsystem"),
            log_services: f.link("LogServices"),
            oem_devices: v
                .pointer("/Oem/Hpe/Links/Devices/@odata.id")
                .and_then(Value::as_str)
                .map(str::to_owned),
            conditions: Vec::new(),
            warnings: Vec::new(),
        };
        c.warnings = warnings;
        c.conditions = crate::component_model::conditions_of(v, &c.odata_id);
        c
    }
}

/// Where a reading came from: the modern `Sensors` collection or the legacy `Thermal`/`Power` resources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SensorSource {
    Sensors,
    Thermal,
    Power,
    PowerSubsystem,
}

/// One sensor reading, whatever resource it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SensorReading {
    pub odata_id: Option<String>,
    pub name: Option<String>,
    /// `ReadingType` (Sensors) or the legacy array it came from (`Temperature`, `Fan`, `Power`, `Voltage`).
    pub kind: Option<String>,
    pub reading: Option<f64>,
    pub units: Option<String>,
    pub state: Option<String>,
    pub health: Option<Health>,
    pub upper_caution: Option<f64>,
    pub upper_critical: Option<f64>,
    pub source: SensorSource,
    /// Power supplies: `LastPowerOutputWatts` (legacy) or the metrics' `OutputPowerWatts` (PowerSubsystem).
    pub output_watts: Option<f64>,
    /// Power supplies: `LineInputStatus` (`Normal`, `LossOfInput`, `OutOfRange`) when the BMC reports it.
    pub line_input: Option<String>,
    /// The sensor's own id: `Id` (Sensors), `MemberId` (legacy arrays), so two rows named alike differ.
    pub id: Option<String>,
    /// The chassis it was read under (its `Id`, else its path); set by the client.
    pub chassis: Option<String>,
    /// `DataSourceUri` (Sensors): the legacy member it mirrors, to read each sensor once.
    pub data_source: Option<String>,
}

/// Sensors of one chassis, plus everything that could not be read.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SensorSet {
    pub readings: Vec<SensorReading>,
    pub warnings: Vec<FieldWarning>,
}

impl SensorSet {
    /// Worst health among readings (`Unknown` if none had a health).
    pub fn health(&self) -> Health {
        let mut h: Option<Health> = None;
        for r in &self.readings {
            if let Some(x) = r.health {
                h = Some(h.map_or(x, |a| a.worst(x)));
            }
        }
        h.unwrap_or(Health::Unknown)
    }
}

fn threshold(f: &mut Fields<'_, '_>, name: &str) -> Option<f64> {
    f.sub("Thresholds").and_then(|mut t| t.sub(name).and_then(|mut x| x.num("Reading")))
}

/// One member of a `Sensors` collection (`#Sensor.v1_x.Sensor`).
pub fn sensor_from_value(v: &Value, at: &str, warnings: &mut Vec<FieldWarning>) -> SensorReading {
    let mut f = Fields::new(v, at, warnings);
    let status = Status::read(&mut f);
    SensorReading {
        odata_id: f.str("@odata.id"),
        name: f.str("Name"),
        kind: f.str("ReadingType"),
        reading: f.num("Reading"),
        units: f.str("ReadingUnits"),
        state: status.state,
        health: status.health,
        upper_caution: threshold(&mut f, "UpperCaution"),
        upper_critical: threshold(&mut f, "UpperCritical"),
        source: SensorSource::Sensors,
        output_watts: None,
        line_input: None,
        id: f.str("Id"),
        chassis: None,
        data_source: f.str("DataSourceUri"),
    }
}

/// Readings of a legacy `Thermal` document (Temperatures and Fans arrays).
pub fn thermal_from_value(v: &Value, at: &str, warnings: &mut Vec<FieldWarning>) -> Vec<SensorReading> {
    let mut out = Vec::new();
    legacy_array(v, at, "Temperatures", "Temperature", "ReadingCelsius", Some("Cel"), warnings, &mut out);
    legacy_array(v, at, "Fans", "Fan", "Reading", None, warnings, &mut out);
    out
}

/// Readings of a legacy `Power` document (PowerControl, PowerSupplies, Voltages).
pub fn power_from_value(v: &Value, at: &str, warnings: &mut Vec<FieldWarning>) -> Vec<SensorReading> {
    let mut out = Vec::new();
    legacy_array(v, at, "PowerControl", "Power", "PowerConsumedWatts", Some("W"), warnings, &mut out);
    legacy_array(v, at, "PowerSupplies", "PowerSupply", "PowerInputWatts", Some("W"), warnings, &mut out);
    legacy_array(v, at, "Voltages", "Voltage", "ReadingVolts", Some("V"), warnings, &mut out);
    for r in out.iter_mut() {
        r.source = SensorSource::Power;
    }
    crate::psu::label_legacy_power(v, &mut out);
    let mut redundancy = crate::psu::redundancy_from_value(v, at, warnings);
    for r in redundancy.iter_mut() {
        r.source = SensorSource::Power;
    }
    out.extend(redundancy);
    out
}

#[allow(clippy::too_many_arguments)]
fn legacy_array(
    v: &Value,
    at: &str,
    array: &str,
    kind: &str,
    reading_key: &str,
    units: Option<&str>,
    warnings: &mut Vec<FieldWarning>,
    out: &mut Vec<SensorReading>,
) {
    let mut f = Fields::new(v, at, warnings);
    let items = match f.raw(array) {
        None => return,
        Some(Value::Array(items)) => items,
        Some(other) => {
            let k = crate::doc::kind(other);
            f.warn(array, format!("expected an array, found {k}"));
            return;
        }
    };
    for (i, item) in items.iter().enumerate() {
        let mut m = Fields::new(item, format!("{at}/{array}/{i}"), warnings);
        let status = Status::read(&mut m);
        let fan_units = if units.is_none() { m.str("ReadingUnits") } else { None };
        let id = m.str("MemberId");
        // Supermicro names fans in `FanName` only; a nameless member is its kind and id, never a pointer.
        // AMI serves `"Name": "nil"` for a supply it knows nothing of: no name (the supplies are labelled later).
        let named = |n: Option<String>| n.filter(|n| !n.trim().is_empty() && !n.eq_ignore_ascii_case("nil"));
        let labelled_later = matches!(kind, "PowerSupply" | "Power");
        let name = named(m.str("Name"))
            .or_else(|| named(m.str("FanName")))
            .or_else(|| id.as_ref().filter(|_| !labelled_later).map(|i| format!("{kind} {i}")));
        out.push(SensorReading {
            odata_id: m.str("@odata.id"),
            name,
            kind: Some(kind.to_owned()),
            reading: m.num(reading_key),
            units: units.map(str::to_owned).or(fan_units),
            state: status.state,
            health: status.health,
            upper_caution: m.num("UpperThresholdNonCritical"),
            upper_critical: m.num("UpperThresholdCritical"),
            source: SensorSource::Thermal,
            output_watts: if kind == "PowerSupply" { m.num("LastPowerOutputWatts") } else { None },
            line_input: if kind == "PowerSupply" { m.str("LineInputStatus") } else { None },
            id,
            chassis: None,
            data_source: None,
        });
    }
}

/// A Manager (the BMC itself).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Manager {
    pub odata_id: String,
    pub id: Option<String>,
    pub name: Option<String>,
    pub manager_type: Option<String>,
    pub model: Option<String>,
    pub firmware_version: Option<String>,
    pub status: Status,
    pub log_services: Option<String>,
    pub network_protocol: Option<String>,
    pub warnings: Vec<FieldWarning>,
}

impl Manager {
    pub fn from_value(v: &Value, at: &str) -> Self {
        let mut warnings = Vec::new();
        let mut f = Fields::new(v, at, &mut warnings);
        let status = Status::read(&mut f);
        let odata_id = odata_id(&mut f, at);
        let mut m = Manager {
            odata_id,
            id: f.str("Id"),
            name: f.str("Name"),
            manager_type: f.str("ManagerType"),
            model: f.str("Model"),
            firmware_version: f.str("FirmwareVersion"),
            status,
            log_services: f.link("LogServices"),
            network_protocol: f.link("NetworkProtocol"),
            warnings: Vec::new(),
        };
        m.warnings = warnings;
        m
    }
}

pub use crate::log_model::{LogEntries, LogEntry, LogKind, LogService, log_entry_from_value};

/// `SessionService`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SessionService {
    pub service_enabled: Option<bool>,
    pub session_timeout: Option<i64>,
    pub sessions: Option<String>,
    pub warnings: Vec<FieldWarning>,
}

impl SessionService {
    pub fn from_value(v: &Value, at: &str) -> Self {
        let mut warnings = Vec::new();
        let mut f = Fields::new(v, at, &mut warnings);
        let mut s = SessionService {
            service_enabled: f.bool("ServiceEnabled"),
            session_timeout: f.int("SessionTimeout"),
            sessions: f.link("Sessions"),
            warnings: Vec::new(),
        };
        s.warnings = warnings;
        s
    }
}

/// `EventService`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct EventService {
    pub service_enabled: Option<bool>,
    pub sse_uri: Option<String>,
    pub subscriptions: Option<String>,
    pub event_types: Option<Vec<String>>,
    pub warnings: Vec<FieldWarning>,
}

impl EventService {
    pub fn from_value(v: &Value, at: &str) -> Self {
        let mut warnings = Vec::new();
        let mut f = Fields::new(v, at, &mut warnings);
        let mut s = EventService {
            service_enabled: f.bool("ServiceEnabled"),
            sse_uri: f.str("ServerSentEventUri"),
            subscriptions: f.link("Subscriptions"),
            event_types: f.strs("EventTypesForSubscription"),
            warnings: Vec::new(),
        };
        s.warnings = warnings;
        s
    }
}

/// An event subscription (`EventDestination`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct EventDestination {
    pub odata_id: Option<String>,
    pub id: Option<String>,
    pub destination: Option<String>,
    pub protocol: Option<String>,
    pub context: Option<String>,
    pub event_types: Option<Vec<String>>,
    /// `SendHeartbeat` (EventDestination v1_11): the service sends `HeartbeatEvent` messages to this
    /// subscription, so their absence says the subscription (or the path to it) is gone.
    pub send_heartbeat: Option<bool>,
    /// `HeartbeatIntervalMinutes` (EventDestination v1_11).
    pub heartbeat_minutes: Option<u64>,
}

pub fn event_destination_from_value(
    v: &Value,
    at: &str,
    warnings: &mut Vec<FieldWarning>,
) -> EventDestination {
    let mut f = Fields::new(v, at, warnings);
    EventDestination {
        odata_id: f.str("@odata.id"),
        id: f.str("Id"),
        destination: f.str("Destination"),
        protocol: f.str("Protocol"),
        context: f.str("Context"),
        event_types: f.strs("EventTypes"),
        send_heartbeat: f.bool("SendHeartbeat"),
        heartbeat_minutes: f.int("HeartbeatIntervalMinutes").and_then(|m| u64::try_from(m).ok()),
    }
}

/// One record of an `Event` payload (pushed or streamed over SSE).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct EventRecord {
    pub event_id: Option<String>,
    pub event_type: Option<String>,
    pub timestamp: Option<String>,
    pub severity: Option<Health>,
    pub message: Option<String>,
    pub message_id: Option<String>,
    pub origin: Option<String>,
}

/// An `Event` document.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Event {
    pub id: Option<String>,
    pub context: Option<String>,
    pub records: Vec<EventRecord>,
    pub warnings: Vec<FieldWarning>,
}

impl Event {
    pub fn from_value(v: &Value, at: &str) -> Self {
        let mut warnings = Vec::new();
        let mut f = Fields::new(v, at, &mut warnings);
        let id = f.str("Id");
        let context = f.str("Context");
        let items = f.raw("Events").and_then(Value::as_array).cloned().unwrap_or_default();
        let mut records = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let mut r = Fields::new(item, format!("{at}/Events/{i}"), &mut warnings);
            // MessageSeverity superseded Severity in Event v1.3; accept either.
            let severity = r.health("MessageSeverity").or_else(|| r.health("Severity"));
            let origin = r.link("OriginOfCondition");
            records.push(EventRecord {
                event_id: r.str("EventId"),
                event_type: r.str("EventType"),
                timestamp: r.str("EventTimestamp"),
                severity,
                message: r.str("Message"),
                message_id: r.str("MessageId"),
                origin,
            });
        }
        Event { id, context, records, warnings }
    }
}

/// Member links of a collection, and `@odata.nextLink` if the collection is paged.
pub fn collection_members(
    v: &Value,
    at: &str,
    warnings: &mut Vec<FieldWarning>,
) -> (Vec<Value>, Option<String>) {
    let mut f = Fields::new(v, at, warnings);
    let members = match f.raw("Members") {
        None => {
            f.warn("Members", "collection has no Members");
            Vec::new()
        }
        Some(Value::Array(items)) => items.clone(),
        Some(other) => {
            let k = crate::doc::kind(other);
            f.warn("Members", format!("expected an array, found {k}"));
            Vec::new()
        }
    };
    let next = f.str("Members@odata.nextLink").or_else(|| f.str("@odata.nextLink"));
    (members, next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn system_doc() -> Value {
        json!({
            "@odata.id": "/redfish/v1/Systems/1",
            "Id": "1",
            "Name": "node",
            "PowerState": "On",
            "Model": "GPU-8X",
            "Manufacturer": "Example",
            "SerialNumber": "SN1",
            "UUID": "u",
            "Status": {"State": "Enabled", "Health": "OK", "HealthRollup": "Warning"},
            "Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideTarget@Redfish.AllowableValues": ["Pxe", "Hdd"]},
            "Actions": {"#ComputerSystem.Reset": {
                "target": "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset",
                "ResetType@Redfish.AllowableValues": ["On", "ForceOff"]}},
            "Links": {"Chassis": [{"@odata.id": "/redfish/v1/Chassis/1"}]}
        })
    }

    #[test]
    fn reads_a_well_formed_system() {
        let s = ComputerSystem::from_value(&system_doc(), "/redfish/v1/Systems/1");
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        assert_eq!(s.power_state, Some(PowerState::On));
        assert_eq!(s.status.overall(), Some(Health::Warning));
        assert_eq!(s.reset.as_ref().unwrap().allowable.as_deref().unwrap(), ["On", "ForceOff"]);
        assert_eq!(s.chassis, ["/redfish/v1/Chassis/1"]);
        assert_eq!(s.boot.allowed_targets.as_deref().unwrap(), ["Pxe", "Hdd"]);
    }

    /// Fields that `reads_a_well_formed_system` checks, with a way to observe each on the parsed struct.
    const FIELDS: &[&str] =
        &["PowerState", "Model", "Manufacturer", "SerialNumber", "Status", "Actions", "Boot", "Links"];

    fn garbage() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(json!(42)),
            Just(json!(true)),
            Just(json!([1, {"x": null}])),
            Just(json!({"@odata.id": 7})),
            Just(json!("\u{0}\u{ffff}")),
            any::<i64>().prop_map(|n| json!(n)),
            ".{0,30}".prop_map(|s| json!({ "nested": s })),
        ]
    }

    proptest! {
        /// Garbage in one field degrades that field (with a warning) and leaves every other field intact.
        #[test]
        fn garbage_in_one_field_keeps_the_others(which in 0..FIELDS.len(), junk in garbage()) {
            let field = FIELDS[which];
            let mut doc = system_doc();
            doc[field] = junk.clone();
            let s = ComputerSystem::from_value(&doc, "/redfish/v1/Systems/1");
            let good = ComputerSystem::from_value(&system_doc(), "/redfish/v1/Systems/1");
            if field != "PowerState" { prop_assert_eq!(s.power_state, good.power_state); }
            if field != "Model" { prop_assert_eq!(&s.model, &good.model); }
            if field != "Manufacturer" { prop_assert_eq!(&s.manufacturer, &good.manufacturer); }
            if field != "SerialNumber" { prop_assert_eq!(&s.serial_number, &good.serial_number); }
            if field != "Status" { prop_assert_eq!(&s.status, &good.status); }
            if field != "Actions" { prop_assert_eq!(&s.reset, &good.reset); }
            if field != "Boot" { prop_assert_eq!(&s.boot, &good.boot); }
            if field != "Links" { prop_assert_eq!(&s.chassis, &good.chassis); }
            prop_assert_eq!(&s.id, &good.id);
            prop_assert_eq!(&s.name, &good.name);
            // A malformed field must be reported, never silently dropped.
            let expect_warning = match field {
                "PowerState" => true, // junk is never a valid power state word
                "Model" | "Manufacturer" | "SerialNumber" => !junk.is_string(),
                _ => !junk.is_object(),
            };
            if expect_warning {
                prop_assert!(s.warnings.iter().any(|w| w.at.contains(field)), "no warning for {}: {:?}", field, s.warnings);
            }
            if field == "PowerState" && junk.is_string() {
                // An unknown word is kept as Unknown plus a warning, not dropped.
                prop_assert_eq!(s.power_state, Some(PowerState::Unknown));
            }
        }

        /// Any JSON value at all parses without panicking.
        #[test]
        fn never_panics(junk in garbage(), key in "[A-Za-z@.#]{1,12}") {
            let mut doc = system_doc();
            doc[key] = junk.clone();
            let _ = ComputerSystem::from_value(&doc, "/x");
            let _ = ComputerSystem::from_value(&junk, "/x");
            let _ = Chassis::from_value(&junk, "/x");
            let _ = thermal_from_value(&junk, "/x", &mut Vec::new());
            let _ = Event::from_value(&junk, "/x");
        }
    }

    /// Supermicro's legacy Thermal names fans in `FanName` only and lists empty DIMM slots as absent
    /// temperature sensors; AMI names unknown supplies "nil". Rows keep their member id and name.
    #[test]
    fn fan_name_member_id_and_absent_slots() {
        let v = json!({
            "Fans": [{"@odata.id": "/redfish/v1/Chassis/1/Thermal#/Fans/0", "MemberId": "0", "FanName": "FAN1",
                "Reading": 3360, "ReadingUnits": "RPM", "Status": {"State": "Enabled", "Health": "OK"}},
                {"MemberId": "1", "Reading": 0, "ReadingUnits": "RPM", "Status": {"State": "Absent"}}],
            "Temperatures": [{"MemberId": "7", "Name": "P1-DIMMA2 Temp", "ReadingCelsius": 0,
                "UpperThresholdCritical": 0, "Status": {"State": "Absent"}}]
        });
        let mut w = Vec::new();
        let r = thermal_from_value(&v, "/redfish/v1/Chassis/1/Thermal", &mut w);
        let names: Vec<_> =
            r.iter().map(|x| (x.name.as_deref(), x.id.as_deref(), x.state.as_deref())).collect();
        assert_eq!(
            names,
            [
                (Some("P1-DIMMA2 Temp"), Some("7"), Some("Absent")),
                (Some("FAN1"), Some("0"), Some("Enabled")),
                (Some("Fan 1"), Some("1"), Some("Absent")),
            ]
        );
        let p =
            json!({"PowerSupplies": [{"MemberId": "0", "Name": "nil"}, {"MemberId": "1", "Name": "nil"}]});
        let r = power_from_value(&p, "/p", &mut w);
        let names: Vec<_> = r.iter().map(|x| x.name.clone().unwrap_or_default()).collect();
        assert_eq!(names, ["PSU member 0", "PSU member 1"]);
        assert!(w.is_empty(), "{w:?}");
    }

    #[test]
    fn legacy_thermal_with_a_string_reading() {
        let v = json!({"Temperatures": [
            {"Name": "CPU", "ReadingCelsius": "41", "Status": {"Health": "OK"}},
            {"Name": "GPU", "ReadingCelsius": 90, "UpperThresholdCritical": 85, "Status": {"Health": "Critical"}}
        ], "Fans": "broken"});
        let mut w = Vec::new();
        let r = thermal_from_value(&v, "/t", &mut w);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].reading, None);
        assert_eq!(r[1].reading, Some(90.0));
        assert_eq!(w.len(), 2, "{w:?}");
        let set = SensorSet { readings: r, warnings: w };
        assert_eq!(set.health(), Health::Critical);
    }

    #[test]
    fn log_entry_with_bad_time_keeps_the_rest() {
        let v = json!({"Id": "1", "Created": "yesterday", "Severity": "Critical", "Message": "m", "MessageId": "X.1"});
        let mut w = Vec::new();
        let e = log_entry_from_value(&v, "/e", &mut w);
        assert_eq!(e.created.as_deref(), Some("yesterday"));
        assert!(e.created_at.is_none());
        assert_eq!(e.severity, Some(Health::Critical));
        assert_eq!(e.message_id.as_deref(), Some("X.1"));
        assert_eq!(w.len(), 1);
    }
}
