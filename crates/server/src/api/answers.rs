//! The API's views of the engine's results (BMC reads, power, sweeps, backups, runbook runs, consoles,
//! the inventory): typed, documented in the OpenAPI document, and readable by the CLI's `--server` mode.
//!
//! The engine's types stay the one definition of what an operation returns; a view is made from one
//! through its JSON ([`view`]), and in debug builds (every test) the view must serialize back to exactly
//! that JSON, so a field the engine adds, drops or renames fails the server's tests instead of silently
//! changing the API. Parts the console and scripts read field by field are typed; deep vendor detail
//! (a GPU's conditions, a step's resolved operation, a hygiene finding's evidence) stays an object as the
//! engine wrote it.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use lifeline_types::{BmcProtocol, Fabric, Health, Platform, PowerAction, PowerState, RunState};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{ApiError, ApiResult};

/// `from`'s view as `V`, through JSON. Debug builds check that nothing is lost or changed on the way.
pub fn view<V: Serialize + DeserializeOwned>(what: &'static str, from: &impl Serialize) -> ApiResult<V> {
    let internal = |e: String| ApiError::Engine(lifeline_engine::EngineError::internal(what, e));
    let json = serde_json::to_value(from).map_err(|e| internal(e.to_string()))?;
    let v: V = serde_json::from_value(json.clone()).map_err(|e| internal(format!("its view: {e}")))?;
    if cfg!(debug_assertions) {
        let back = serde_json::to_value(&v).map_err(|e| internal(e.to_string()))?;
        if back != json {
            return Err(internal(format!("its view changes the answer: engine {json}, view {back}")));
        }
    }
    Ok(v)
}

/// A target's row that failed in a multi-target operation: `{"<bmc|switch|node>": name, "error", "class"}`.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RowFailure {
    /// The target, under the key its kind names (`bmc`, `switch`, `node`).
    #[serde(flatten)]
    pub target: BTreeMap<String, String>,
    pub error: String,
    /// The error class: `usage`, `not-found`, `refused`, `failed`, `conflict`, `unavailable`.
    pub class: String,
}

/// One target's row of a multi-target operation: its result, or why it failed.
macro_rules! row_of {
    ($(#[$m:meta])* $name:ident, $t:ty) => {
        $(#[$m])*
        #[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
        #[serde(untagged)]
        pub enum $name {
            Failed(RowFailure),
            Done($t),
        }
    };
}

/// How an action's answer was come by, beside the result itself: a replay of an earlier request with the
/// same `Idempotency-Key`, a request that waited for the same action in progress, or an outcome the
/// store could not take yet.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Provenance {
    /// The request id whose recorded outcome this is (nothing was done again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_of: Option<String>,
    /// The request id of the same action that was in progress; this request waited for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coalesced_with: Option<String>,
    /// `delayed`: done, but its outcome waits for the store (see `warning`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recording: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

// ---- consoles ----

/// A console the server logs.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConsoleInfo {
    pub name: String,
    /// `ipmi-sol`, `ssh`, `sim`, …
    pub transport: String,
    pub status: ConsoleStatus,
    /// Who is watching.
    pub viewers: Vec<String>,
    /// Who holds the write lock.
    pub writer: Option<String>,
    /// Logged whether or not anyone watches.
    pub pinned: bool,
}

/// Where a console's BMC session is.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum ConsoleStatus {
    /// No session (nobody attached, not pinned).
    Idle,
    Connected {
        detail: String,
    },
    /// The link dropped; reconnecting with backoff.
    Reconnecting {
        reason: String,
    },
    /// Another session holds the console.
    Busy,
}

// ---- BMC reads ----

/// `power status` of one BMC.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PowerStatus {
    pub bmc: String,
    pub power: PowerState,
}

row_of!(
    /// A BMC's power state, or why it could not be read.
    PowerStatusRow,
    PowerStatus
);

/// Threshold values in the sensor's units; `null` when the BMC does not publish one.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Thresholds {
    pub lower_fatal: Option<f64>,
    pub lower_critical: Option<f64>,
    pub lower_caution: Option<f64>,
    pub upper_caution: Option<f64>,
    pub upper_critical: Option<f64>,
    pub upper_fatal: Option<f64>,
}

/// One sensor as read.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Sensor {
    pub name: String,
    /// `Temperature`, `Fan`, `Voltage`, `Power Supply`, `Current`, …
    pub kind: String,
    pub reading: Option<f64>,
    pub units: Option<String>,
    pub health: Health,
    pub thresholds: Thresholds,
    /// Protocol-specific state text (IPMI discrete state bits, Redfish `Status.State`).
    pub state: Option<String>,
    /// Power supplies (Redfish): the output power, while `reading` is the input power.
    pub output_watts: Option<f64>,
    /// Power supplies (Redfish): `LineInputStatus`.
    pub line_input: Option<String>,
    /// Redfish: the sensor's id.
    pub id: Option<String>,
    /// Redfish: the chassis it was read under.
    pub chassis: Option<String>,
}

/// A resource's own status as the BMC reports it.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ResourceHealth {
    /// `@odata.id` of the resource (a ComputerSystem or Chassis).
    pub resource: String,
    pub health: Health,
}

/// The GPUs a BMC lists against the inventory's count.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct GpuCount {
    pub expected: u32,
    /// GPUs listed (NVSwitches and baseboards are not GPUs).
    pub listed: u32,
}

/// A BMC's health: the verdict, why, and what was read.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct HealthReport {
    pub bmc: String,
    pub protocol: BmcProtocol,
    /// The worse of what was read and the BMC's own rollup.
    pub health: Health,
    /// One line per thing that is not OK.
    pub reasons: Vec<String>,
    /// The BMC's own rollup, when it reports one.
    pub bmc_rollup: Option<Health>,
    /// What was read and the BMC's rollup disagree, in words.
    pub disagreement: Option<String>,
    /// Parts below the system that are not OK (Redfish full read): `kind`, `resource`, `name`,
    /// `health`, `state`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<Object>)]
    pub components: Vec<Value>,
    /// Conditions the BMC reports (`Status.Conditions`, `ServiceConditions`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<Object>)]
    pub conditions: Vec<Value>,
    /// Every GPU the BMC lists, with its health and driver events.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<Object>)]
    pub gpus: Vec<Value>,
    /// Fewer GPUs listed than the inventory expects (Redfish full read of a target with an expected count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus_missing: Option<GpuCount>,
    /// Every system the BMC lists (Redfish full read): `@odata.id`s.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub systems: Vec<String>,
    /// Every sensor; empty for a rollup-only summary.
    pub sensors: Vec<Sensor>,
    /// The system's and chassis' own rollups (Redfish; empty over IPMI).
    pub resources: Vec<ResourceHealth>,
    /// `health` is the BMC's own rollup, no sensor was read (what a sweep reads by default).
    pub rollup_only: bool,
    /// What could not be read or was repaired.
    pub warnings: Vec<String>,
}

row_of!(
    /// A BMC's health, or why it could not be read.
    HealthRow,
    HealthReport
);

/// One entry of a BMC's event log. `severity` `ok` is informational.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BmcLogEntry {
    pub id: String,
    /// `null` when the BMC clock was not set or the time is unreadable.
    pub time: Option<DateTime<Utc>>,
    /// The time as the BMC gave it, when it is not a calendar time (`pre-init +1234 s`).
    pub time_note: Option<String>,
    pub severity: Health,
    pub message: String,
    pub sensor: Option<String>,
    /// Which log it came from (`SEL`, `Systems/1/IML`, `Managers/bmc/EventLog`).
    pub log: Option<String>,
}

/// One log that was read.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BmcLog {
    pub id: String,
    /// Redfish: the log service's `@odata.id`.
    pub path: Option<String>,
    /// `sel`, `event`, `other`.
    pub kind: String,
    /// Entries read from it (before the newest-N cut).
    pub entries: usize,
    /// It holds more than were read.
    pub truncated: bool,
}

/// A BMC's event logs, newest first.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BmcEventLog {
    pub bmc: String,
    pub protocol: BmcProtocol,
    /// Newest first.
    pub entries: Vec<BmcLogEntry>,
    /// Every critical entry of the logs read, also those older than the newest N.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub critical: Vec<BmcLogEntry>,
    /// Entries the BMC holds in total (when known).
    pub total: Option<usize>,
    pub logs: Vec<BmcLog>,
    /// No event log service was found: an empty `entries` means nothing could be read.
    pub no_log_service: bool,
    pub warnings: Vec<String>,
}

/// One BMC's line of a sweep.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SweepRow {
    pub name: String,
    pub address: String,
    pub protocol: Option<BmcProtocol>,
    pub power: Option<PowerState>,
    pub health: Option<Health>,
    pub sensors: usize,
    /// Sensors that are not `ok`, as `name=reading units (health)`.
    pub alerts: Vec<String>,
    pub events: Vec<BmcLogEntry>,
    /// `part: error` for every part that failed (`connect`, `power`, `health`, `events`).
    pub errors: Vec<String>,
    /// Parts that ran out of time.
    pub out_of_time: Vec<String>,
    /// What to do about it, when a part ran out of time.
    pub hint: Option<String>,
    pub budget_ms: u64,
    /// IPMI: transmissions per answered request (1.0 on a clean link).
    pub transmissions_per_request: Option<f64>,
    pub elapsed_ms: u64,
    /// The GPUs the BMC lists against the inventory's count (Redfish, a target with an expected count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus: Option<GpuCount>,
}

/// `POST /api/v1/sweep`.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Sweep {
    pub rows: Vec<SweepRow>,
    /// Rows that are unreachable, failing, or critical.
    pub failing: usize,
    /// False when the sweep was stopped before every BMC answered.
    pub complete: bool,
}

/// One observed power state change while confirming.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Transition {
    pub after_ms: u64,
    pub state: PowerState,
}

/// Everything about one power action: what was sent, what was read back, whether it is confirmed.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PowerReport {
    pub bmc: String,
    pub protocol: BmcProtocol,
    pub action: PowerAction,
    pub request_id: Option<String>,
    /// The state the action waits for.
    pub requested: PowerState,
    pub before: PowerState,
    /// The last state read.
    pub observed: PowerState,
    /// Whether any command was put on the wire.
    pub action_sent: bool,
    /// Whether the BMC acknowledged every command.
    pub acknowledged: bool,
    pub commands: Vec<String>,
    /// `already-in-state`, `state-reached`, `transition-observed`, `acknowledged-and-on`,
    /// `reset-recorded` (confirmed); `off-not-observed`, `unconfirmed` (not).
    pub confirmation: String,
    pub confirmed: bool,
    pub transitions: Vec<Transition>,
    pub started_at: DateTime<Utc>,
    pub ack_after_ms: Option<u64>,
    pub confirmed_after_ms: Option<u64>,
    pub total_ms: u64,
    /// Power-state reads that failed while polling.
    pub poll_errors: u32,
    /// A retry with the same request id: the first attempt's report, nothing was sent now.
    pub replayed: bool,
    /// What the BMC's answer leaves open, in words (e.g. an action it accepted but did not confirm).
    pub note: Option<String>,
}

/// A power action's answer: its report, and how the answer was come by.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PowerOutcome {
    #[serde(flatten)]
    pub report: PowerReport,
    #[serde(flatten)]
    pub provenance: Provenance,
}

/// A power action's answer, or (a replay of an outcome recorded in another shape) the outcome as it was
/// recorded.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum PowerAnswer {
    Report(PowerOutcome),
    #[schema(value_type = Object)]
    Recorded(Value),
}

row_of!(
    /// One BMC's power action, or why it failed.
    PowerRow,
    PowerAnswer
);

/// One BMC's hygiene audit: default credentials tried, IPMI and certificate findings.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct HygieneRow {
    pub bmc: String,
    pub address: String,
    pub vendor_hint: Option<String>,
    /// Default credentials the BMC accepted.
    #[schema(value_type = Vec<Object>)]
    pub accepted_defaults: Vec<Value>,
    #[schema(value_type = Vec<Object>)]
    pub attempts: Vec<Value>,
    pub failed_attempts: usize,
    /// Why login attempts stopped before the list ran out.
    pub stopped: Option<String>,
    /// Cipher 0, anonymous login, …
    #[schema(value_type = Option<Object>)]
    pub ipmi: Option<Value>,
    #[schema(value_type = Option<Object>)]
    pub certificate: Option<Value>,
    /// Redfish is reached over plain HTTP.
    pub redfish_plain_http: bool,
    /// Each finding with its severity and evidence.
    #[schema(value_type = Vec<Object>)]
    pub findings: Vec<Value>,
    pub errors: Vec<String>,
}

// ---- switch configuration backups ----

/// One switch's next scheduled backup.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ScheduledBackup {
    pub switch: String,
    pub cron: String,
    pub next: DateTime<Utc>,
    pub retries: u32,
}

/// One version of a switch's configuration.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BackupVersion {
    pub device: String,
    pub version: u32,
    pub platform: Platform,
    /// SHA-256 (hex) of the normalised, scrubbed text.
    pub sha256: String,
    /// Bytes of the normalised text.
    pub size: u64,
    pub taken_at: DateTime<Utc>,
    /// A sealed raw copy exists (a faithful restore is possible).
    pub raw_sealed: bool,
}

/// A diff between two versions.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BackupDiff {
    pub switch: String,
    pub from: u32,
    pub to: u32,
    /// Unified diff text.
    pub diff: String,
    /// The same diff as hunks (`old_start`, `old_len`, `new_start`, `new_len`, `lines`).
    #[schema(value_type = Vec<Object>)]
    pub hunks: Vec<Value>,
}

/// One switch's backup.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BackupRun {
    pub switch: String,
    pub platform: Platform,
    /// `ok` (a new version), `unchanged`.
    pub outcome: String,
    /// The version, its blob, the previous version, whether a sealed raw copy was kept.
    #[schema(value_type = Object)]
    pub detail: Value,
    pub ms: u64,
}

/// A backup's answer and how it was come by.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BackupOutcome {
    #[serde(flatten)]
    pub run: BackupRun,
    #[serde(flatten)]
    pub provenance: Provenance,
}

/// A backup's answer, or a replayed outcome as it was recorded.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum BackupAnswer {
    Run(BackupOutcome),
    #[schema(value_type = Object)]
    Recorded(Value),
}

row_of!(
    /// One switch's backup, or why it failed.
    BackupRow,
    BackupAnswer
);

/// A restore (dry run or real).
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Restore {
    pub switch: String,
    /// The switch restored onto (a spare, or the same one).
    pub to: String,
    pub version: u32,
    pub dry_run: bool,
    /// Unified diff from the running config to the version.
    pub diff: String,
    /// The faithful (sealed raw) copy is what would be or was pushed.
    pub raw: bool,
    pub applied: bool,
    /// The running config read back matches.
    pub verified: bool,
    pub outcome: String,
    pub steps: Vec<String>,
    #[serde(flatten)]
    pub provenance: Provenance,
}

/// A restore's answer, or a replayed outcome as it was recorded.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum RestoreAnswer {
    Restore(Restore),
    #[schema(value_type = Object)]
    Recorded(Value),
}

// ---- runbooks ----

/// One step of a run.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct StepRecord {
    pub name: String,
    pub kind: String,
    /// `pending`, `running`, `ok`, `failed`, `timeout`, `skipped`, `unknown`, `waiting-approval`.
    pub state: String,
    pub started: Option<DateTime<Utc>>,
    pub ended: Option<DateTime<Utc>>,
    pub attempts: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// What the step produced (named outputs later steps may use).
    #[schema(value_type = Object)]
    pub outputs: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence_digest: Option<String>,
    /// A `[[verify]]` check, run after the last step on fresh observations.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub post_condition: bool,
}

/// A runbook run: its state and each step's (`run`, `state`, `steps[].{name,state,started,ended}` are
/// the `--json` contract too).
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunRecord {
    pub run: String,
    pub runbook: String,
    pub target: String,
    pub state: RunState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub actor: String,
    /// `sha256:` of the runbook text the run follows.
    pub digest: String,
    #[schema(value_type = Object)]
    pub vars: Value,
    pub created: DateTime<Utc>,
    pub updated: DateTime<Utc>,
    pub ended: Option<DateTime<Utc>>,
    pub steps: Vec<StepRecord>,
    /// A `running` run that no live process drives: what to do about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stalled: Option<String>,
}

/// One step of a plan.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PlannedStep {
    pub name: String,
    pub kind: String,
    /// The step's operation with its parameters resolved.
    #[schema(value_type = Object)]
    pub operation: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// `{"then": "stop" | "continue" | "escalate"}` or `{"then": "goto", "step": NAME}`.
    #[schema(value_type = Object)]
    pub on_failure: Value,
    pub timeout: String,
    pub approval_required: bool,
    pub idempotent: bool,
    /// A `[[verify]]` check: the run succeeds only when it passes.
    pub post_condition: bool,
}

/// A dry run's plan for one target.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Plan {
    pub runbook: String,
    pub target: String,
    pub vars: BTreeMap<String, String>,
    pub steps: Vec<PlannedStep>,
    /// The blast-radius guard's verdict: `allowed`, `reason`, the counts it weighed.
    #[schema(value_type = Object)]
    pub guard: Value,
}

/// One runbook: its header, parameters and steps.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunbookDetail {
    pub name: String,
    pub description: String,
    /// The device roles it applies to.
    #[schema(value_type = Vec<String>)]
    pub targets: Vec<lifeline_types::Role>,
    /// Which fault it answers.
    pub fault: String,
    pub touches: String,
    pub never_touches: String,
    pub worst_case: String,
    #[schema(value_type = Vec<Object>)]
    pub params: Vec<Value>,
    #[schema(value_type = Vec<Object>)]
    pub steps: Vec<Value>,
    /// The post-conditions (`[[verify]]`).
    #[schema(value_type = Vec<Object>)]
    pub post: Vec<Value>,
    pub digest: String,
    /// It has `exec` steps: only an administrator may start, approve or abort its runs.
    pub admin_only: bool,
}

// ---- inventory ----

/// An inventory device with every field of its file (site, rack, fabrics, rails), as
/// `lifeline inventory show` prints it.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct InventoryDevice {
    pub name: String,
    pub role: lifeline_types::Role,
    pub rack: String,
    pub site: String,
    pub model: Option<String>,
    pub description: Option<String>,
    pub groups: Vec<String>,
    /// A switch's fabric, tier and platform.
    #[schema(value_type = Option<Object>)]
    pub switch: Option<Value>,
    /// The BMC: address, port, protocol, user, credential reference, pinned fingerprint, TLS.
    #[schema(value_type = Option<Object>)]
    pub bmc: Option<Value>,
    /// A switch's management (SSH) access.
    #[schema(value_type = Option<Object>)]
    pub management: Option<Value>,
    #[schema(value_type = Option<Object>)]
    pub frontend: Option<Value>,
    #[schema(value_type = Option<Object>)]
    pub gpus: Option<Value>,
    /// RDMA rails: HCA, netdev, fabric, subnet, address, rate, MTU, link layer, leaf and port.
    #[schema(value_type = Vec<Object>)]
    pub rails: Vec<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pdus: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvlink_domain: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oob_switch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oob_port: Option<String>,
    /// Every fabric the device is attached to.
    pub fabrics: Vec<Fabric>,
}

/// `GET /api/v1/devices/{name}`: the inventory fields and the last observations.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DeviceDetail {
    #[serde(flatten)]
    pub device: InventoryDevice,
    pub observed: crate::api::devices::DeviceSummary,
}
