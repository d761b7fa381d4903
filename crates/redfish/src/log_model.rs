//! Log services and their entries as the schema (and the vendors) shape them: which services hold the
//! event history (typed SEL, bmcweb `EventLog`, HPE `IML` / `IEL`) and which do not (journals, dumps), and
//! entries read field by field. Re-exported from [`crate::model`].

use serde::Serialize;
use serde_json::Value;

use lifeline_types::Health;

use crate::doc::{FieldWarning, Fields};
use crate::model::odata_id;

/// A LogService (SEL, EventLog, ...).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LogService {
    pub odata_id: String,
    pub id: Option<String>,
    pub name: Option<String>,
    /// `LogEntryType` (`SEL`, `Event`, `Multiple`, `OEM`).
    pub log_entry_type: Option<String>,
    pub entries: Option<String>,
    pub clear_target: Option<String>,
    pub warnings: Vec<FieldWarning>,
}

impl LogService {
    pub fn from_value(v: &Value, at: &str) -> Self {
        let mut warnings = Vec::new();
        let mut f = Fields::new(v, at, &mut warnings);
        let clear_target = f
            .sub("Actions")
            .and_then(|mut a| a.sub("#LogService.ClearLog").and_then(|mut c| c.str("target")));
        let odata_id = odata_id(&mut f, at);
        let mut l = LogService {
            odata_id,
            id: f.str("Id"),
            name: f.str("Name"),
            log_entry_type: f.str("LogEntryType"),
            entries: f.link("Entries"),
            clear_target,
            warnings: Vec::new(),
        };
        l.warnings = warnings;
        l
    }

    /// The service as a minimal document that [`LogService::from_value`] reads back the same (identity, type,
    /// `Entries`, the ClearLog target): what is remembered to read the log directly next time.
    pub fn to_document(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("@odata.id".into(), Value::from(self.odata_id.clone()));
        let mut put = |k: &str, v: &Option<String>| {
            if let Some(v) = v {
                m.insert(k.into(), Value::from(v.clone()));
            }
        };
        put("Id", &self.id);
        put("Name", &self.name);
        put("LogEntryType", &self.log_entry_type);
        if let Some(e) = &self.entries {
            m.insert("Entries".into(), serde_json::json!({ "@odata.id": e }));
        }
        if let Some(t) = &self.clear_target {
            m.insert("Actions".into(), serde_json::json!({ "#LogService.ClearLog": { "target": t } }));
        }
        Value::Object(m)
    }

    /// What kind of log this is, for reading the event history: SEL, another event log, or neither.
    pub fn kind(&self) -> LogKind {
        if self.is_sel() {
            return LogKind::Sel;
        }
        let t = self.log_entry_type.as_deref().unwrap_or("").to_ascii_lowercase();
        let id = self.id.as_deref().unwrap_or("").to_ascii_lowercase();
        let name = self.name.as_deref().unwrap_or("").to_ascii_lowercase();
        // Dumps, journals and POST codes are diagnostics, not the event history (and can be huge).
        const NOT_EVENTS: [&str; 7] =
            ["journal", "dump", "postcode", "hostlogger", "audit", "crash", "fault"];
        if NOT_EVENTS.iter().any(|w| id.contains(w)) {
            return LogKind::Other;
        }
        // bmcweb `EventLog` (`LogEntryType: Event`); HPE iLO `IML` (Integrated Management Log, the health
        // log) and `IEL` (iLO Event Log), whose entries are `EntryType: Oem` with `OemRecordFormat: Hpe-IML`;
        // Dell iDRAC's `Lclog` (Lifecycle log, `LogEntryType: OEM`), where the iDRAC records the hardware
        // events (temperature and PSU warnings) beside jobs and logins, the newest events of the box.
        let event_name = ["event log", "integrated management log", "eventlog"];
        if t == "event"
            || matches!(id.as_str(), "eventlog" | "event" | "iml" | "iel" | "lclog")
            || event_name.iter().any(|n| name.contains(n))
        {
            return LogKind::Event;
        }
        LogKind::Other
    }

    /// Whether this log is the IPMI-style System Event Log (by type, else by id/name as vendors name it).
    pub fn is_sel(&self) -> bool {
        let t = self.log_entry_type.as_deref().unwrap_or("");
        let id = self.id.as_deref().unwrap_or("");
        t.eq_ignore_ascii_case("SEL")
            || id.eq_ignore_ascii_case("SEL")
            || id.eq_ignore_ascii_case("IPMISEL")
            || self.name.as_deref().is_some_and(|n| n.to_ascii_lowercase().contains("system event log"))
    }
}

/// How a log service is used when reading the event history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LogKind {
    /// The IPMI-style System Event Log (typed or named SEL).
    Sel,
    /// Another event history: bmcweb `EventLog`, HPE `IML` / `IEL`.
    Event,
    /// Journals, dumps, POST codes, vendor logs of other kinds.
    Other,
}

/// One log entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LogEntry {
    pub odata_id: Option<String>,
    pub id: Option<String>,
    /// `Created` as served (RFC 3339 when the BMC follows the schema).
    pub created: Option<String>,
    /// `Created` parsed; `None` with a warning when the BMC served something else.
    pub created_at: Option<chrono::DateTime<chrono::FixedOffset>>,
    pub severity: Option<Health>,
    pub message: Option<String>,
    pub message_id: Option<String>,
    pub entry_type: Option<String>,
    /// `OemRecordFormat` of `EntryType: Oem` entries (`Hpe-IML`).
    pub oem_record_format: Option<String>,
    pub sensor_type: Option<String>,
    pub entry_code: Option<String>,
    /// `Resolved` (bmcweb) or `Oem.Hpe.Repaired` (iLO IML): the condition was cleared or repaired.
    pub resolved: Option<bool>,
    /// `Links.OriginOfCondition`: the resource the entry is about (NVIDIA's HGX firmware names the GPU's
    /// chassis, `Chassis/HGX_GPU_0`, on every XID it logs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// `MessageArgs`, as text (a number served where the schema says string is kept as its digits).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub message_args: Vec<String>,
}

pub fn log_entry_from_value(v: &Value, at: &str, warnings: &mut Vec<FieldWarning>) -> LogEntry {
    let mut f = Fields::new(v, at, warnings);
    let created = f.str("Created");
    let created_at = created.as_deref().and_then(|c| match chrono::DateTime::parse_from_rfc3339(c.trim()) {
        Ok(t) => Some(t),
        Err(e) => {
            f.warn("Created", format!("not an RFC 3339 time ({e})"));
            None
        }
    });
    let resolved = f
        .bool("Resolved")
        .or_else(|| f.sub("Oem").and_then(|mut o| o.sub("Hpe").and_then(|mut h| h.bool("Repaired"))));
    LogEntry {
        odata_id: f.str("@odata.id"),
        id: f.str("Id"),
        created,
        created_at,
        severity: f.health("Severity"),
        message: f.str("Message"),
        message_id: f.str("MessageId"),
        entry_type: f.str("EntryType"),
        oem_record_format: f.str("OemRecordFormat"),
        sensor_type: f.str("SensorType"),
        entry_code: f.str("EntryCode"),
        origin: f
            .sub("Links")
            .and_then(|mut l| l.link("OriginOfCondition"))
            .or_else(|| f.link("OriginOfCondition")),
        message_args: message_args(f.raw("MessageArgs")),
        resolved,
    }
}

/// `MessageArgs` as text, leniently: strings as served, numbers and booleans as written, anything else
/// (and a non-array) skipped, since an argument is context for a message already read, not a reading.
fn message_args(v: Option<&Value>) -> Vec<String> {
    let Some(Value::Array(items)) = v else { return Vec::new() };
    items
        .iter()
        .filter_map(|a| match a {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        })
        .collect()
}

/// Entries of one log, plus what could not be read.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LogEntries {
    pub log: String,
    /// The log service's `Id` (else `Name`): `SEL`, `IML`, `IEL`, `EventLog`.
    pub log_id: Option<String>,
    pub kind: Option<LogKind>,
    pub entries: Vec<LogEntry>,
    /// More entries exist than were read (entry limit or a page that could not be fetched).
    pub truncated: bool,
    /// Read back to a mark only (the entries new since a previous read, and the newest few), not whole.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_to_mark: bool,
    pub warnings: Vec<FieldWarning>,
}
