//! The API's answers that are not the engine's own result types: views of the records the engine reads
//! (so a new column in the store is not a new field in the API by accident, and hashes never serialize), and the small
//! acknowledgements of account actions. Field names and shapes are the contract the web console and the
//! CLI's `--server` mode read: each view serializes exactly as the row it replaced did. Every type here
//! derives `utoipa::ToSchema`, so the OpenAPI document says what each route returns.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use lifeline_engine::ops::audit_log::AuditView;
use lifeline_types::{AuditOutcome, FaultState, LoggedAction};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::auth::Role;
use crate::error::{ApiError, ApiResult};

/// A word the store holds that is not one of its enum's spellings: the store is damaged or newer than this
/// server, which is not the caller's fault.
fn stored<T>(what: &'static str, v: &str, parsed: Option<T>) -> ApiResult<T> {
    parsed.ok_or_else(|| {
        ApiError::Engine(lifeline_engine::EngineError::internal(what, format!("the store holds `{v}`")))
    })
}

/// A fault record.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Fault {
    pub id: i64,
    /// The rule or intake that raised it (`bmc-unreachable`, `agent-report`, `console-kernel-panic`, …):
    /// an open set, documented by `lifeline_types::FaultKind` (the known kinds and the open families).
    #[schema(value_type = lifeline_types::FaultKind)]
    pub kind: String,
    pub device: String,
    /// `critical`, `warning`.
    pub severity: String,
    pub state: FaultState,
    pub message: String,
    /// What the rule saw (its evidence), as it recorded it: any JSON, its shape is the rule's (`kind`).
    pub detail: Value,
    /// How many times the rule fired while this record was open.
    pub count: i64,
    pub opened_at_ms: i64,
    pub updated_at_ms: i64,
    pub acked_by: Option<String>,
    pub acked_at_ms: Option<i64>,
}

impl Fault {
    pub fn from_row(r: lifeline_engine::ops::fault_records::FaultRow) -> ApiResult<Fault> {
        Ok(Fault {
            state: stored("fault state", &r.state, r.state.parse().ok())?,
            id: r.id,
            kind: r.kind,
            device: r.device,
            severity: r.severity,
            message: r.message,
            detail: r.detail,
            count: r.count,
            opened_at_ms: r.opened_at_ms,
            updated_at_ms: r.updated_at_ms,
            acked_by: r.acked_by,
            acked_at_ms: r.acked_at_ms,
        })
    }

    pub fn from_rows(rows: Vec<lifeline_engine::ops::fault_records::FaultRow>) -> ApiResult<Vec<Fault>> {
        rows.into_iter().map(Fault::from_row).collect()
    }
}

/// `POST /api/v1/agent/reports`: what the report did.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ReportTaken {
    pub node: String,
    pub passed: bool,
    /// The fault a failing report opened (or counted again); `null` for a passing report.
    pub fault: Option<Fault>,
}

/// An audit row: who did what to which target, and how it ended.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AuditRecord {
    pub id: i64,
    pub at_ms: i64,
    /// Who asked: `cli:<unix user>`, `web:<user>`, `scheduler`, `runbook:<run id>`, `fault-policy`.
    pub actor: String,
    /// What: `power.cycle`, `backup.restore`, `readmit.resume`, `login`, … (`AuditAction`), or, on a
    /// row another version of Lifeline wrote, its word as written.
    pub action: LoggedAction,
    /// `true`, and present, only when `action` is a word this version does not know (a row of another
    /// version sharing the database): the row is shown as written, never refused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub action_unknown: bool,
    /// Which device (or `fleet`, `server`).
    pub target: String,
    /// `started` is the intent, written before acting; the others say how it ended.
    pub outcome: AuditOutcome,
    /// What the action recorded about itself: any JSON, its shape is the action's.
    pub detail: Value,
    pub request_id: Option<String>,
}

impl AuditRecord {
    /// The view of a stored row: its action read leniently (the engine's [`AuditView`]); an outcome word
    /// this version does not know fails the answer.
    pub fn from_row(r: lifeline_engine::ops::audit_log::AuditRow) -> ApiResult<AuditRecord> {
        let v = AuditView::from(r);
        Ok(AuditRecord {
            outcome: stored("audit outcome", &v.outcome, v.outcome.parse().ok())?,
            id: v.id,
            at_ms: v.at_ms,
            actor: v.actor,
            action: v.action,
            action_unknown: v.action_unknown,
            target: v.target,
            detail: v.detail,
            request_id: v.request_id,
        })
    }
}

/// An event: a BMC log entry, a sweep's change, a pushed Redfish event.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Event {
    pub id: i64,
    pub at_ms: i64,
    pub device: Option<String>,
    /// `sel`, `redfish-sse`, `sim`, `lifeline`.
    pub source: String,
    pub severity: String,
    pub message: String,
    /// The event as its source gave it: any JSON, its shape is the source's.
    pub data: Value,
}

impl From<lifeline_engine::ops::event_log::EventRow> for Event {
    fn from(r: lifeline_engine::ops::event_log::EventRow) -> Self {
        let e = r.event;
        Event {
            id: r.id,
            at_ms: r.at_ms,
            device: e.device,
            source: e.source,
            severity: e.severity,
            message: e.message,
            data: e.data,
        }
    }
}

/// A row of a run's journal: written before (`intent`) and after (`outcome`) every step.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct JournalEntry {
    pub id: i64,
    pub run_id: String,
    pub step_index: i64,
    pub step: String,
    pub attempt: i64,
    /// `intent`, `outcome`, `decision`, `run`.
    pub phase: String,
    pub state: String,
    pub at_ms: i64,
    pub request_id: Option<String>,
    /// The phase's record (`message`, `outputs`, the resolved `operation`): any JSON, its shape is the
    /// phase's and the step kind's.
    pub detail: Value,
    /// What the step observed, as it recorded it (its digest is the step's evidence digest): any JSON.
    pub evidence: Value,
}

impl From<lifeline_engine::ops::runs::JournalRow> for JournalEntry {
    fn from(r: lifeline_engine::ops::runs::JournalRow) -> Self {
        JournalEntry {
            id: r.id,
            run_id: r.run_id,
            step_index: r.step_index,
            step: r.step,
            attempt: r.attempt,
            phase: r.phase,
            state: r.state,
            at_ms: r.at_ms,
            request_id: r.request_id,
            detail: r.detail,
            evidence: r.evidence,
        }
    }
}

/// A local user (never the password hash).
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct User {
    pub name: String,
    pub role: Role,
    pub disabled: bool,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
}

impl User {
    pub fn from_row(r: lifeline_engine::ops::users::UserRow) -> ApiResult<User> {
        Ok(User {
            role: stored("user role", &r.role, Role::parse(&r.role))?,
            name: r.name,
            disabled: r.disabled,
            created_at_ms: r.created_at_ms,
            updated_at_ms: r.updated_at_ms,
        })
    }
}

/// An API token (never its secret or hash).
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Token {
    /// Public id (the token's prefix), safe to show and to revoke by.
    pub id: String,
    pub username: String,
    /// A role (`viewer`, `operator`, `admin`), or `agent:<node>` for a node's agent token.
    pub role: String,
    pub created_at_ms: i64,
    pub expires_at_ms: Option<i64>,
    pub revoked_at_ms: Option<i64>,
}

impl From<lifeline_engine::ops::users::TokenRow> for Token {
    fn from(r: lifeline_engine::ops::users::TokenRow) -> Self {
        Token {
            id: r.id,
            username: r.username,
            role: r.role,
            created_at_ms: r.created_at_ms,
            expires_at_ms: r.expires_at_ms,
            revoked_at_ms: r.revoked_at_ms,
        }
    }
}

/// `POST /api/v1/users/{name}/password`.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PasswordChanged {
    pub user: String,
    /// Always `changed`.
    pub password: String,
}

/// `POST /api/v1/users/{name}/disable`.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct UserDisabled {
    pub user: String,
    pub disabled: bool,
}

/// `DELETE /api/v1/tokens/{id}`.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TokenRevoked {
    pub id: String,
    pub revoked: bool,
}

/// `POST /api/v1/logout`.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LoggedOut {
    /// The user whose session ended.
    pub logged_out: String,
}

/// One runbook of the library (`GET /api/v1/runbooks`).
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunbookEntry {
    pub name: String,
    pub description: String,
    /// The device roles it applies to (`gpu-node`, `switch`, …).
    #[schema(value_type = Vec<String>)]
    pub targets: Vec<lifeline_types::Role>,
    /// Which fault it answers.
    pub fault: String,
    pub steps: usize,
    /// Steps that wait for a person's approval.
    pub approval_steps: usize,
    /// It has `exec` steps (programs on the jump host): only an administrator may start, approve or abort.
    pub admin_only: bool,
    /// Its file under the runbook directory.
    pub file: String,
}

/// The newest observation of one kind.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Observed {
    pub observed_at: Option<DateTime<Utc>>,
    /// As the observer recorded it (an agent report, a verification, the scheduler's view): any JSON, its
    /// shape is the observer's.
    pub value: Value,
}

/// `GET /api/v1/devices/{name}/evidence`: what the server has recorded about a device.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Evidence {
    pub name: String,
    /// `redfish` or `ipmi`; `null` without a BMC.
    pub protocol: Option<String>,
    /// The pinned BMC certificate's fingerprint.
    pub tls_pin: Option<String>,
    /// The newest observation of each kind recorded (`agent`, `verify`, `scheduler`, `drain`).
    pub observations: BTreeMap<String, Observed>,
}

/// `GET /api/v1/openapi.json`: an OpenAPI 3.1 document (this one).
pub struct OpenApiDocument;

impl utoipa::PartialSchema for OpenApiDocument {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, SchemaType, Type};
        let text = || ObjectBuilder::new().schema_type(Type::String);
        // Its top level as the OpenAPI 3.1 specification defines it; what lies below `paths` and
        // `components` is that specification's, not restated here.
        let map = |what: &str| {
            ObjectBuilder::new().schema_type(Type::Object).description(Some(what)).additional_properties(
                Some(AdditionalProperties::RefOr(
                    ObjectBuilder::new().schema_type(SchemaType::AnyValue).into(),
                )),
            )
        };
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .description(Some("An OpenAPI 3.1 document (https://spec.openapis.org/oas/v3.1.0)."))
            .property("openapi", text().description(Some("The specification's version: `3.1.0`.")))
            .required("openapi")
            .property(
                "info",
                ObjectBuilder::new()
                    .schema_type(Type::Object)
                    .property("title", text())
                    .property("version", text())
                    .property("description", text())
                    .required("title")
                    .required("version"),
            )
            .required("info")
            .property("paths", map("Each path's operations (a Path Item Object per path)."))
            .required("paths")
            .property("components", map("Reusable objects: `schemas` (every type the operations name)."))
            .build()
            .into()
    }
}

impl utoipa::ToSchema for OpenApiDocument {}
