//! The API's views of the engine's results (BMC reads, power, sweeps, backups, runbook runs, consoles,
//! the inventory): typed, documented in the OpenAPI document, and readable by the CLI's `--server` mode.
//!
//! The engine's types stay the one definition of what an operation returns; a view is made from one
//! through its JSON ([`view`]), and in debug builds (every test) the view must serialize back to exactly
//! that JSON, so a field the engine adds, drops or renames fails the server's tests instead of silently
//! changing the API. Parts the console and scripts read field by field are typed; deep vendor detail
//! (a GPU's conditions, a hygiene finding's evidence) stays an object as the engine wrote it.

use std::collections::BTreeMap;

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

/// An earlier request's outcome as the store recorded it, answered again when its recorded shape is not
/// this version's answer (a replay across an upgrade, or an outcome recorded as a bare value): the
/// recorded fields as they were, beside the request it replays.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Recorded {
    /// The request id whose recorded outcome this is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_of: Option<String>,
    /// The request id of the same action that was in progress; this request waited for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coalesced_with: Option<String>,
    /// The recorded fields (`outcome` when what was recorded is not an object).
    #[serde(flatten)]
    pub fields: BTreeMap<String, Value>,
}

impl Recorded {
    /// A recorded field.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.fields.get(key)
    }

    /// A value below the recorded fields, by JSON pointer (`/outcome/confirmed`).
    pub fn pointer(&self, pointer: &str) -> Option<&Value> {
        let rest = pointer.strip_prefix('/')?;
        let (first, below) = rest.split_once('/').map_or((rest, ""), |(f, b)| (f, b));
        let v = self.fields.get(first)?;
        if below.is_empty() { Some(v) } else { v.pointer(&format!("/{below}")) }
    }
}

// ---- the engine's own results, one type each ----
//
// Deriving `utoipa::ToSchema` on the engine's, the BMC layer's and the console manager's types (their
// `schema` features) makes the result the schema: a field the engine adds, drops or renames is in the
// document the moment it is in the answer. Re-exported here, the path the CLI's `--server` mode reads.

pub use lifeline_bmc::{EventLog, HealthSummary, HygieneRow, PowerReport};
pub use lifeline_console::manager::ConsoleInfo;
pub use lifeline_engine::ops::backup::{BackupDiff, BackupRun, Restore, ScheduledBackup};
pub use lifeline_engine::ops::power::PowerStatus;
pub use lifeline_engine::ops::sweep::Sweep;
pub use lifeline_netcfg::show::HistoryEntry;

row_of!(
    /// A BMC's power state, or why it could not be read.
    PowerStatusRow,
    PowerStatus
);

row_of!(
    /// A BMC's health, or why it could not be read.
    HealthRow,
    HealthSummary
);

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
    Recorded(Recorded),
}

row_of!(
    /// One BMC's power action, or why it failed.
    PowerRow,
    PowerAnswer
);

/// A backup's answer and how it was come by.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct BackupOutcome {
    #[serde(flatten)]
    pub run: BackupRun,
    #[serde(flatten)]
    pub provenance: Provenance,
}

/// A backup's answer, or a replayed outcome as it was recorded.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum BackupAnswer {
    Run(BackupOutcome),
    Recorded(Recorded),
}

/// One switch's backup, or why it failed.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum BackupRow {
    Failed(RowFailure),
    Done(BackupAnswer),
}

/// A restore's answer and how it was come by.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RestoreOutcome {
    #[serde(flatten)]
    pub restore: Restore,
    #[serde(flatten)]
    pub provenance: Provenance,
}

/// A restore's answer, or a replayed outcome as it was recorded.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum RestoreAnswer {
    Restore(RestoreOutcome),
    Recorded(Recorded),
}

// ---- runbooks ----

/// A runbook run and its steps, as the runbook crate builds them from the run's journal.
pub use lifeline_runbook::view::{RunView as RunRecord, StepView as StepRecord};

/// A dry run's plan for one target.
pub use lifeline_runbook::exec::{Plan, PlannedStep};

/// One runbook: its header, parameters and steps (`GET /api/v1/runbooks/{name}`).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RunbookDetail {
    #[serde(flatten)]
    pub runbook: lifeline_runbook::Runbook,
    /// It has `exec` steps: only an administrator may start, approve or abort its runs.
    pub admin_only: bool,
}

// ---- inventory ----

/// An inventory device with every field of its file, as `lifeline inventory show` prints it.
pub use lifeline_engine::ops::inventory::DeviceView as InventoryDevice;

/// `GET /api/v1/devices/{name}`: the inventory fields and the last observations.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct DeviceDetail {
    #[serde(flatten)]
    pub device: InventoryDevice,
    pub observed: crate::api::devices::DeviceSummary,
}
