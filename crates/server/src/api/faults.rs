//! Fault records (opened by the scheduler's rules, or by agent reports) and their acknowledgement.

use axum::extract::{Path, Query, State};
use axum::http::Method;
use axum::routing::{get, post};
use axum::{Extension, Json};
use serde::Deserialize;

use lifeline_types::FaultState;

use crate::access::{Route, operator, route, viewer};
use crate::api::model::{Fault, ReportTaken};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

pub fn routes() -> Vec<Route> {
    vec![
        route(
            Method::GET,
            "/api/v1/faults",
            viewer(),
            "faults",
            "Fault records, newest first (`?state=open|acked|resolved&limit=N`).",
            get(list),
        )
        .returns_list::<Fault>(),
        route(Method::GET, "/api/v1/faults/{id}", viewer(), "faults", "One fault record.", get(show))
            .returns::<Fault>(),
        route(
            Method::POST,
            "/api/v1/faults/{id}/ack",
            operator(),
            "faults",
            "Acknowledge an open fault (audited).",
            post(ack),
        )
        .returns::<Fault>(),
        route(
            Method::POST,
            "/api/v1/agent/reports",
            operator(),
            "faults",
            "An in-band agent's report: a failing verdict opens an `agent-report` fault.",
            post(agent_report),
        )
        .body("AgentReport")
        .intake()
        .returns::<ReportTaken>(),
    ]
}

#[derive(Debug, Deserialize)]
pub struct FaultQuery {
    pub state: Option<String>,
    pub limit: Option<i64>,
}

async fn list(State(s): State<AppState>, Query(q): Query<FaultQuery>) -> ApiResult<Json<Vec<Fault>>> {
    let state = q
        .state
        .as_deref()
        .map(|st| st.parse::<FaultState>())
        .transpose()
        .map_err(|e| ApiError::bad_request(format!("state: {e}")))?;
    let limit = q.limit.unwrap_or(500).clamp(1, 100_000);
    Ok(Json(Fault::from_rows(s.base.faults(state.map(FaultState::as_str), limit).await?)?))
}

async fn show(State(s): State<AppState>, Path(id): Path<i64>) -> ApiResult<Json<Fault>> {
    let row =
        s.base.fault_record(id).await?.ok_or(ApiError::NotFound { what: "fault", name: id.to_string() })?;
    Ok(Json(Fault::from_row(row)?))
}

async fn ack(
    State(s): State<AppState>,
    Extension(c): Extension<Caller>,
    Path(id): Path<i64>,
) -> ApiResult<Json<Fault>> {
    Ok(Json(Fault::from_row(s.engine_as(&c.actor()).fault_ack(id).await?)?))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct AgentReport {
    /// The node the agent runs on (an inventory name).
    pub node: String,
    /// Whether every check passed.
    pub passed: bool,
    /// The agent's report as it produced it.
    #[serde(default)]
    pub report: serde_json::Value,
}

async fn agent_report(
    State(s): State<AppState>,
    Extension(c): Extension<Caller>,
    Json(r): Json<AgentReport>,
) -> ApiResult<Json<ReportTaken>> {
    if let Some(bound) = c.node.as_deref().filter(|n| *n != r.node) {
        return Err(crate::error::ApiError::Forbidden {
            role: "agent",
            what: format!("report for {} (this token is {bound}'s agent)", r.node),
        });
    }
    let inv = s.base.inventory()?;
    if !inv.devices.iter().any(|d| d.name.as_str() == r.node) {
        return Err(lifeline_engine::EngineError::UnknownDevice { name: r.node }.into());
    }
    s.base
        .record_observation(
            &r.node,
            "agent",
            &serde_json::json!({ "passed": r.passed, "report": r.report, "from": c.actor() }),
        )
        .await?;
    let fault = crate::faults::agent_report(&s, &r.node, r.passed, &r.report).await?;
    Ok(Json(ReportTaken { node: r.node, passed: r.passed, fault: fault.map(Fault::from_row).transpose()? }))
}
