//! Event log: the newest N entries of the BMC's system event log, normalised to time, severity, message and
//! sensor, from IPMI SEL records or Redfish `LogServices` (SEL-like logs).
//!
//! IPMI SEL records are 16 bytes of codes; turning them into sentences an operator can act on at 3 a.m. is
//! the point of this module. The decoding is a pure function ([`sel_event`]) over the record and the SDR
//! index, so it is unit-tested on records without a BMC.

use std::collections::HashMap;

use chrono::{DateTime, TimeZone, Utc};
use lifeline_ipmi::wire::sdr::FullSensor;
use lifeline_ipmi::wire::sel::SelRecord;
use lifeline_redfish::model::LogKind;
use lifeline_types::{BmcProtocol, Health};
use serde::Serialize;

use crate::conn::{IpmiConn, RedfishConn, ipmi_err, rf_err};
use crate::error::BmcError;

/// One normalised event. `severity`: `ok` = informational.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct EventEntry {
    pub id: String,
    /// `None` when the BMC clock was not set (IPMI pre-init timestamps) or the time is unreadable.
    pub time: Option<DateTime<Utc>>,
    /// The time as the BMC gave it, when it is not a calendar time (`pre-init +1234 s`).
    pub time_note: Option<String>,
    pub severity: Health,
    pub message: String,
    pub sensor: Option<String>,
    /// Which log the entry came from (`SEL` over IPMI; over Redfish the log service's place and id:
    /// `Systems/1/IML`, `Managers/1/IEL`, `Managers/bmc/EventLog`), so an operator can tell the host's
    /// health log from the BMC's own log.
    pub log: Option<String>,
}

/// One log that was read.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct LogSource {
    /// `SEL` (IPMI), or where the Redfish log lives and its id: `Systems/1/IML`, `Managers/bmc/EventLog`
    /// (what [`EventEntry::log`] says).
    pub id: String,
    /// Redfish: the log service's `@odata.id` (under which System or Manager it lives).
    pub path: Option<String>,
    /// `sel`, `event` (a non-SEL event history such as bmcweb's EventLog or HPE's IML), `other`.
    pub kind: String,
    /// Entries read from it (before the newest-N cut).
    pub entries: usize,
    /// It holds more than were read.
    pub truncated: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct EventLog {
    pub bmc: String,
    pub protocol: BmcProtocol,
    /// Newest first.
    pub entries: Vec<EventEntry>,
    /// Every entry read, newest first (before the newest-N cut): what [`crate::marks::window`] selects
    /// the entries new since the last read from. Not serialised.
    #[serde(skip)]
    pub read: Vec<EventEntry>,
    /// Every `Critical` entry of the logs read (newest first), also those older than the newest N: a
    /// critical fault must not scroll out of sight behind logins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub critical: Vec<EventEntry>,
    /// Entries the BMC holds in total (when known).
    pub total: Option<usize>,
    /// The logs read, in the order they were found.
    pub logs: Vec<LogSource>,
    /// No SEL-like or other event log service was found on the BMC: `entries` being empty then means
    /// nothing could be read, not a clean history. A caller must show this, never `0 entries` alone.
    pub no_log_service: bool,
    pub warnings: Vec<String>,
}

/// Threshold event offsets (event/reading type 0x01).
const THRESHOLD_OFFSETS: [&str; 12] = [
    "lower non-critical going low",
    "lower non-critical going high",
    "lower critical going low",
    "lower critical going high",
    "lower non-recoverable going low",
    "lower non-recoverable going high",
    "upper non-critical going low",
    "upper non-critical going high",
    "upper critical going low",
    "upper critical going high",
    "upper non-recoverable going low",
    "upper non-recoverable going high",
];

/// Sensor-specific offsets (event/reading type 0x6F) for the sensor types that matter on GPU servers, with
/// the severity of an assertion (IPMI 2.0 table 42-3).
fn sensor_specific(sensor_type: u8, offset: u8) -> Option<(&'static str, Health)> {
    use Health::*;
    Some(match (sensor_type, offset) {
        (0x05, 0) => ("general chassis intrusion", Warning),
        (0x07, 0) => ("IERR", Critical),
        (0x07, 1) => ("thermal trip", Critical),
        (0x07, 5) => ("configuration error", Critical),
        (0x07, 7) => ("processor presence detected", Ok),
        (0x07, 10) => ("throttled", Warning),
        (0x07, 11) => ("machine check exception", Critical),
        (0x08, 0) => ("presence detected", Ok),
        (0x08, 1) => ("power supply failure detected", Critical),
        (0x08, 2) => ("predictive failure", Warning),
        (0x08, 3) => ("input lost (AC/DC)", Critical),
        (0x08, 4) => ("input lost or out of range", Critical),
        (0x08, 5) => ("input out of range, but present", Warning),
        (0x08, 6) => ("configuration error", Warning),
        (0x0C, 0) => ("correctable ECC", Warning),
        (0x0C, 1) => ("uncorrectable ECC", Critical),
        (0x0C, 2) => ("parity error", Critical),
        (0x0C, 5) => ("correctable ECC logging limit reached", Warning),
        (0x0D, 0) => ("drive present", Ok),
        (0x0D, 1) => ("drive fault", Critical),
        (0x0D, 2) => ("predictive failure", Warning),
        (0x0F, 0) => ("system firmware error (POST error)", Critical),
        (0x0F, 1) => ("system firmware hang", Critical),
        (0x0F, 2) => ("system firmware progress", Ok),
        (0x10, 1) => ("event type logging disabled", Warning),
        (0x10, 2) => ("log area reset/cleared", Ok),
        (0x10, 4) => ("SEL full", Warning),
        (0x10, 5) => ("SEL almost full", Warning),
        (0x12, 0) => ("system reconfigured", Ok),
        (0x12, 1) => ("OEM system boot event", Ok),
        (0x12, 5) => ("timestamp clock synch", Ok),
        (0x13, 0) => ("front panel NMI / diagnostic interrupt", Warning),
        (0x13, 4) => ("PCI PERR", Critical),
        (0x13, 5) => ("PCI SERR", Critical),
        (0x13, 7) => ("bus correctable error", Warning),
        (0x13, 8) => ("bus uncorrectable error", Critical),
        (0x13, 10) => ("bus fatal error", Critical),
        (0x1D, 0) => ("initiated by power up", Ok),
        (0x1D, 1) => ("initiated by hard reset", Ok),
        (0x1D, 2) => ("initiated by warm reset", Ok),
        (0x20, 0) => ("OS critical stop during OS load", Critical),
        (0x20, 1) => ("OS run-time critical stop", Critical),
        (0x23, 0) => ("watchdog timer expired", Warning),
        (0x23, 1) => ("watchdog hard reset", Critical),
        (0x23, 2) => ("watchdog power down", Critical),
        (0x23, 3) => ("watchdog power cycle", Critical),
        _ => return None,
    })
}

fn sensor_type_name(t: u8) -> String {
    lifeline_ipmi::wire::sel::SelRecord { sensor_type: t, ..empty_record() }.sensor_type_name()
}

fn empty_record() -> SelRecord {
    SelRecord {
        record_id: 0,
        record_type: 0,
        timestamp: 0,
        generator_id: 0,
        evm_rev: 0,
        sensor_type: 0,
        sensor_number: 0,
        event_dir_type: 0,
        event_data: [0; 3],
    }
}

fn fmt_value(v: f64) -> String {
    if (v - v.round()).abs() < 1e-6 { format!("{v:.0}") } else { format!("{v:.2}") }
}

/// Decode one SEL record. `sensors` maps sensor numbers to names (and full records, to convert the
/// trigger reading and threshold carried in event data 2/3).
pub fn sel_event(rec: &SelRecord, sensors: &HashMap<u8, (String, Option<FullSensor>)>) -> EventEntry {
    let id = format!("{:#06x}", rec.record_id);
    let (time, time_note) = if rec.record_type >= 0xE0 {
        (None, Some("no timestamp (OEM non-timestamped record)".to_owned()))
    } else if rec.timestamp == 0xFFFF_FFFF {
        (None, Some("unspecified".to_owned()))
    } else if rec.timestamp_is_pre_init() {
        (None, Some(format!("pre-init +{} s", rec.timestamp)))
    } else {
        (Utc.timestamp_opt(rec.timestamp as i64, 0).single(), None)
    };
    if !rec.is_system_event() {
        let bytes = rec.encode();
        return EventEntry {
            id,
            time,
            time_note,
            severity: Health::Ok,
            message: format!("OEM record type {:#04x}: {}", rec.record_type, hex(&bytes[3..])),
            sensor: None,
            log: Some("SEL".into()),
        };
    }
    let known = sensors.get(&rec.sensor_number);
    let type_name = sensor_type_name(rec.sensor_type);
    let sensor_name =
        known.map(|(n, _)| n.clone()).unwrap_or_else(|| format!("{type_name} #{:#04x}", rec.sensor_number));
    let event_type = rec.event_dir_type & 0x7F;
    let offset = rec.event_data[0] & 0x0F;
    let asserted = rec.asserted();
    let dir = if asserted { "asserted" } else { "deasserted" };
    let (what, severity) = match event_type {
        0x01 => {
            let what = THRESHOLD_OFFSETS.get(offset as usize).copied().unwrap_or("threshold event");
            let sev = match offset {
                0 | 1 | 6 | 7 => Health::Warning,
                _ => Health::Critical,
            };
            let mut s = what.to_owned();
            // Event data 2/3 hold the trigger reading and threshold when data 1 bits 7:6 / 5:4 say so.
            if let Some((_, Some(full))) = known {
                let unit = full.common.unit_name();
                let mut extra = Vec::new();
                if rec.event_data[0] >> 6 == 1 {
                    extra.push(format!("reading {} {unit}", fmt_value(full.convert(rec.event_data[1]))));
                }
                if (rec.event_data[0] >> 4) & 3 == 1 {
                    extra.push(format!("threshold {} {unit}", fmt_value(full.convert(rec.event_data[2]))));
                }
                if !extra.is_empty() {
                    s = format!("{s} ({})", extra.join(", ").replace("  ", " "));
                }
            }
            (s, sev)
        }
        0x6F => match sensor_specific(rec.sensor_type, offset) {
            Some((w, sev)) => (w.to_owned(), sev),
            None => (format!("{type_name} state offset {offset}"), Health::Ok),
        },
        0x02..=0x0C => (format!("generic event type {event_type:#04x} offset {offset}"), Health::Ok),
        _ => (format!("event type {event_type:#04x} offset {offset}"), Health::Ok),
    };
    // A deassertion is the condition going away: informational.
    let severity = if asserted { severity } else { Health::Ok };
    EventEntry {
        id,
        time,
        time_note,
        severity,
        message: format!("{sensor_name}: {what} {dir}"),
        sensor: Some(sensor_name),
        log: Some("SEL".into()),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(" ")
}

impl IpmiConn {
    pub(crate) async fn events(&mut self, newest: usize) -> Result<EventLog, BmcError> {
        let records = self.session.sel_entries().await.map_err(ipmi_err(&self.bmc))?;
        let index = if records.is_empty() { HashMap::new() } else { self.sensor_index().await };
        let total = records.len();
        let mut entries: Vec<EventEntry> = records.iter().rev().map(|r| sel_event(r, &index)).collect();
        let critical = entries.iter().filter(|e| e.severity == Health::Critical).cloned().collect();
        let read = entries.clone();
        entries.truncate(newest);
        Ok(EventLog {
            bmc: self.bmc.clone(),
            protocol: BmcProtocol::Ipmi,
            read,
            entries,
            critical,
            total: Some(total),
            logs: vec![LogSource {
                id: "SEL".into(),
                path: None,
                kind: "sel".into(),
                entries: total,
                truncated: false,
            }],
            no_log_service: false,
            warnings: vec![],
        })
    }

    pub(crate) async fn clear_events(&mut self) -> Result<(), BmcError> {
        self.session.clear_sel().await.map_err(ipmi_err(&self.bmc))
    }
}

/// A log's label for operators: where it lives and its id (`Systems/1/IML`, `Managers/bmc/EventLog`), since
/// bmcweb names the System's and the Manager's logs alike.
/// The newest `newest` events over Redfish: read from the log services an earlier visit used (`known`, their
/// documents) when there are any, else found by navigating from the root (also when a remembered one
/// fails: a 404 after a firmware update must not hide the log). Returns the documents of the services read,
/// to remember. Takes the client, not the connection, so a sweep reads events while the health rollup
/// runs on the same connection. A log with a high-water mark in `marks` is read only back to it (what is
/// new, and the newest `newest`), not whole ([`lifeline_redfish::Client::log_entries_since`]).
pub(crate) async fn redfish_events(
    client: &lifeline_redfish::Client,
    bmc: &str,
    known: &[serde_json::Value],
    newest: usize,
    marks: &[crate::marks::LogMark],
) -> Result<(EventLog, Vec<serde_json::Value>), BmcError> {
    let marks: Vec<lifeline_redfish::EntryMark> = marks
        .iter()
        .filter(|m| !m.id.is_empty())
        .filter_map(|m| {
            Some(lifeline_redfish::EntryMark {
                log: log_path_of_label(&m.log)?,
                id: m.id.clone(),
                created: m.time,
            })
        })
        .collect();
    use lifeline_redfish::model::LogService;
    // BMCs list oldest first (HPE iLO, HPE Cray) or newest first, so the newest are only known once every
    // entry is read: the whole log, up to a bound that keeps one BMC's visit finite.
    let window = LOG_ENTRIES_READ;
    let remembered: Vec<LogService> = known
        .iter()
        .map(|v| LogService::from_value(v, v.get("@odata.id").and_then(|x| x.as_str()).unwrap_or("")))
        .filter(|l| !l.odata_id.is_empty() && l.entries.is_some())
        .collect();
    let logs = if remembered.is_empty() {
        None
    } else {
        match client.event_logs_at_since(&remembered, window, newest, &marks).await {
            Ok(l) => Some(l),
            Err(e) => {
                tracing::debug!(%bmc, error = %e, "a remembered log service failed; finding the logs again");
                None
            }
        }
    };
    let logs = match logs {
        Some(l) => l,
        None => client.event_logs_since(window, newest, &marks).await.map_err(rf_err(bmc))?,
    };
    let used = logs.read.iter().map(LogService::to_document).collect();
    Ok((event_log(bmc, &logs, newest), used))
}

/// Entries read from one log at most (each is a few hundred bytes: ~2 MB of JSON at the bound). A log
/// longer than this is reported `truncated`, with a warning.
pub const LOG_ENTRIES_READ: usize = 4096;

/// Orders entries newest first: by time, then (same second, as HPE logs a burst) by id, numerically where
/// both are numbers; entries without a time last, in the reverse of the BMC's order (most list oldest
/// first).
pub fn newest_first(all: &mut [EventEntry]) {
    fn id_key(id: &str) -> (u8, u64, &str) {
        match id.parse::<u64>() {
            Ok(n) => (1, n, ""),
            Err(_) => (0, 0, id),
        }
    }
    all.sort_by(|a, b| match (a.time, b.time) {
        (Some(x), Some(y)) => y.cmp(&x).then_with(|| id_key(&b.id).cmp(&id_key(&a.id))),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    let dated = all.iter().filter(|e| e.time.is_some()).count();
    all[dated..].reverse();
}

/// Entries of every log read, newest first, cut to `newest`.
fn event_log(bmc: &str, logs: &lifeline_redfish::EventLogs, newest: usize) -> EventLog {
    let mut warnings: Vec<String> =
        logs.warnings.iter().map(|w| format!("{}: {}", w.at, w.problem)).collect();
    let mut all = Vec::new();
    let mut sources = Vec::new();
    for l in &logs.logs {
        warnings.extend(l.warnings.iter().map(|w| format!("{}: {}", w.at, w.problem)));
        let id = log_label(&l.log, l.log_id.as_deref());
        let kind = match l.kind {
            Some(LogKind::Sel) => "sel",
            Some(LogKind::Event) => "event",
            _ => "other",
        };
        if l.truncated {
            warnings.push(format!("{id}: not read to its end ({} entries read)", l.entries.len()));
        }
        sources.push(LogSource {
            id: id.clone(),
            path: Some(l.log.clone()),
            kind: kind.into(),
            entries: l.entries.len(),
            truncated: l.truncated,
        });
        for e in &l.entries {
            all.push(redfish_entry(e, &id));
        }
    }
    let total = all.len();
    newest_first(&mut all);
    let critical = all.iter().filter(|e| e.severity == Health::Critical).cloned().collect();
    let read = all.clone();
    all.truncate(newest);
    let no_log_service = logs.services == 0;
    if no_log_service {
        warnings.push("no SEL-like log service found".into());
    }
    EventLog {
        bmc: bmc.to_owned(),
        protocol: BmcProtocol::Redfish,
        read,
        entries: all,
        critical,
        total: Some(total),
        logs: sources,
        no_log_service,
        warnings,
    }
}

/// The log service a label names, for the schema's URIs (`Systems/1/IML` is
/// `/redfish/v1/Systems/1/LogServices/IML`): the inverse of [`log_label`]. A log at another URI gets no
/// match, and is read whole.
fn log_path_of_label(label: &str) -> Option<String> {
    let (holder, log) = label.rsplit_once('/')?;
    Some(format!("/redfish/v1/{holder}/LogServices/{log}"))
}

fn log_label(path: &str, id: Option<&str>) -> String {
    let p = path.trim_end_matches('/');
    let p = p.strip_prefix("/redfish/v1/").unwrap_or(p).replace("/LogServices/", "/");
    if p.is_empty() { id.unwrap_or("log").to_owned() } else { p }
}

/// One Redfish log entry, normalised. Vendor OEM records (HPE IML) carry their text in `Message` like any
/// other; an entry the BMC marks resolved / repaired is informational, with the fact in its message.
fn redfish_entry(e: &lifeline_redfish::model::LogEntry, log: &str) -> EventEntry {
    let mut message = e.message.clone().or_else(|| e.message_id.clone()).unwrap_or_default();
    let mut severity = e.severity.unwrap_or(Health::Ok);
    if e.resolved == Some(true) {
        message.push_str(" (resolved)");
        severity = Health::Ok;
    }
    EventEntry {
        id: e.id.clone().or_else(|| e.odata_id.clone()).unwrap_or_default(),
        time: e.created_at.map(|t| t.with_timezone(&Utc)),
        time_note: if e.created_at.is_none() { e.created.clone() } else { None },
        severity,
        message,
        sensor: e.sensor_type.clone(),
        log: Some(log.to_owned()),
    }
}

impl RedfishConn {
    pub(crate) async fn events(&mut self, newest: usize) -> Result<EventLog, BmcError> {
        let (log, used) = redfish_events(&self.client, &self.bmc, &self.known.logs, newest, &[]).await?;
        self.used_logs = Some(used);
        Ok(log)
    }

    pub(crate) async fn clear_events(&mut self) -> Result<(), BmcError> {
        let bmc = self.bmc.clone();
        let mut holders = Vec::new();
        if let Ok(m) = self.client.managers().await {
            holders.extend(m.items.into_iter().filter_map(|m| m.log_services));
        }
        if let Ok(s) = self.system().await
            && let Some(l) = s.log_services
        {
            holders.push(l);
        }
        let mut cleared = 0;
        for h in holders {
            let services = self.client.log_services(&h).await.map_err(rf_err(&bmc))?;
            for log in services
                .items
                .iter()
                .filter(|l| l.is_sel() || (l.kind() == LogKind::Event && l.clear_target.is_some()))
            {
                self.client.clear_log(log).await.map_err(rf_err(&bmc))?;
                cleared += 1;
            }
        }
        if cleared == 0 {
            return Err(BmcError::Unsupported {
                bmc,
                protocol: BmcProtocol::Redfish,
                what: "clearing the SEL (no SEL log service)",
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lifeline_ipmi::wire::sdr::SensorCommon;

    /// The two records `shared/peers/ipmi-sim/bmc.emu` adds.
    fn gpu_hot() -> SelRecord {
        SelRecord::decode(&[
            0x01, 0x00, 0x02, 0x00, 0xf1, 0x53, 0x65, 0x20, 0x00, 0x04, 0x01, 0x03, 0x01, 0x59, 0x5c, 0x5a,
        ])
        .unwrap()
    }

    fn gpu_sensor() -> HashMap<u8, (String, Option<FullSensor>)> {
        let common = SensorCommon {
            owner_id: 0x20,
            owner_lun: 0,
            number: 3,
            entity_id: 3,
            entity_instance: 1,
            sensor_type: 1,
            event_reading_type: 1,
            units1: 0,
            base_unit: 1,
            modifier_unit: 0,
            name: "GPU0 Temp".into(),
        };
        let full = FullSensor {
            common,
            linearization: 0,
            m: 1,
            b: 0,
            r_exp: 0,
            b_exp: 0,
            readable_thresholds: 0x38,
            thresholds: [95, 90, 85, 0, 0, 0],
        };
        HashMap::from([(3, ("GPU0 Temp".to_owned(), Some(full)))])
    }

    #[test]
    fn a_marks_label_names_its_log_service_again() {
        for path in ["/redfish/v1/Systems/1/LogServices/IML", "/redfish/v1/Managers/bmc/LogServices/EventLog"]
        {
            let label = log_label(path, None);
            assert_eq!(log_path_of_label(&label).as_deref(), Some(path), "{label}");
        }
        assert_eq!(log_path_of_label("SEL"), None);
    }

    #[test]
    fn threshold_event_is_named_and_critical() {
        let e = sel_event(&gpu_hot(), &gpu_sensor());
        assert_eq!(e.severity, Health::Critical);
        assert_eq!(e.sensor.as_deref(), Some("GPU0 Temp"));
        assert!(e.message.starts_with("GPU0 Temp: upper critical going high"), "{}", e.message);
        assert!(e.time.is_some(), "0x6553f100 is a calendar time");
    }

    #[test]
    fn unknown_sensor_and_deassertion() {
        let mut r = gpu_hot();
        r.event_dir_type |= 0x80;
        let e = sel_event(&r, &HashMap::new());
        assert_eq!(e.severity, Health::Ok);
        assert!(e.message.contains("#0x03") && e.message.ends_with("deasserted"), "{}", e.message);
    }

    #[test]
    fn psu_failure_and_pre_init_time() {
        let mut r = SelRecord::decode(&[
            0x02, 0x00, 0x02, 0x10, 0x00, 0x00, 0x00, 0x20, 0x00, 0x04, 0x08, 0x05, 0x6f, 0x01, 0xff, 0xff,
        ])
        .unwrap();
        let e = sel_event(&r, &HashMap::new());
        assert_eq!(e.severity, Health::Critical);
        assert!(e.message.contains("power supply failure detected"), "{}", e.message);
        assert_eq!(e.time, None);
        assert_eq!(e.time_note.as_deref(), Some("pre-init +16 s"));
        r.record_type = 0xC1;
        let oem = sel_event(&r, &HashMap::new());
        assert!(oem.message.starts_with("OEM record type 0xc1"));
    }

    proptest::proptest! {
        #[test]
        fn never_panics(bytes in proptest::array::uniform16(proptest::prelude::any::<u8>())) {
            let r = SelRecord::decode(&bytes).unwrap();
            let _ = sel_event(&r, &gpu_sensor());
        }
    }
}
