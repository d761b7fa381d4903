//! Runbooks over the API: the catalogue, the dry-run plan, runs (started in the background, answered at
//! once with the run id and state), their status and journal, approve and abort. Results are the runbook
//! crate's own structs (`RunView`, `Plan`, journal rows). Operators run, approve and abort runbooks; a
//! runbook with `exec` steps (a program on the jump host) is an admin runbook, and only an administrator
//! may start, approve or abort its runs. Every mutating call is audited with the web user as actor by the
//! executor (`runbook.start`, `runbook.approve`, `runbook.abort`); the runs act as `runbook:<id>`.

use std::collections::BTreeMap;

use axum::extract::{Path, Query, State};
use axum::http::Method;
use axum::routing::{get, post};
use axum::{Extension, Json};
use lifeline_runbook::{RunOptions, RunView, Runbook};
use serde::Deserialize;

use crate::access::{Route, operator, route, viewer};
use crate::api::answers::{Plan as PlanView, RunRecord, RunbookDetail};
use crate::api::model::{JournalEntry, RunbookEntry};
use crate::auth::{Caller, Role};
use crate::error::{ApiError, ApiResult};
use crate::runbooks as runner;
use crate::state::AppState;

pub fn routes() -> Vec<Route> {
    vec![
        route(Method::GET, "/api/v1/runbooks", viewer(), "runbooks", "The runbook library: every runbook that checks clean, with `admin_only` (it has `exec` steps).", get(list)).returns_list::<RunbookEntry>(),
        route(Method::GET, "/api/v1/runbooks/{name}", viewer(), "runbooks", "One runbook: header, parameters, steps.", get(show)).returns::<RunbookDetail>(),
        route(Method::POST, "/api/v1/runbooks/{name}/plan", viewer(), "runbooks", "Dry run: the resolved plan per target (steps, which need approval, the blast-radius guard's verdict); nothing acts.", post(plan)).body("RunbookRequest").returns_list::<PlanView>(),
        route(Method::POST, "/api/v1/runbooks/{name}/runs", operator(), "runbooks", "Start one run per target (admin runbooks: admin only). Each is admitted under the guard and answered at once (`running` or `refused` with the reason); the server drives it in the background.", post(start)).body("RunbookRequest").returns_list::<RunRecord>(),
        route(Method::GET, "/api/v1/runs", viewer(), "runbooks", "Runs, newest first (`?target=NAME&limit=N`).", get(runs)).returns_list::<RunRecord>(),
        route(Method::GET, "/api/v1/runs/{id}", viewer(), "runbooks", "One run: its state and each step's state, times, outputs and evidence digest.", get(status)).returns::<RunRecord>(),
        route(Method::GET, "/api/v1/runs/{id}/journal", viewer(), "runbooks", "A run's journal: a row before and after every step (intent, outcome, evidence).", get(journal)).returns_list::<JournalEntry>(),
        route(Method::POST, "/api/v1/runs/{id}/approve", operator(), "runbooks", "Approve the step a run waits on (`{\"skip\": true}`: its effect is in place); the run continues in the background.", post(approve)).body("ApproveRequest").returns::<RunRecord>(),
        route(Method::POST, "/api/v1/runs/{id}/abort", operator(), "runbooks", "Abort a run: it stops before its next step.", post(abort)).returns::<RunRecord>(),
    ]
}

/// Targets and variables of a plan or a run.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct RunbookRequest {
    /// Device names, racks, roles, groups or globs of the inventory.
    pub targets: Vec<String>,
    /// Parameter values (`--var NAME=VALUE`); the runbook's defaults fill the rest.
    #[serde(default)]
    pub vars: BTreeMap<String, String>,
}

/// `POST /api/v1/runs/{id}/approve`; the body may be empty.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
pub struct ApproveRequest {
    /// The operator checked by hand that the waiting step's effect is in place: mark it done, do not run it.
    #[serde(default)]
    pub skip: bool,
}

#[derive(Debug, Deserialize)]
pub struct RunsQuery {
    pub target: Option<String>,
    pub limit: Option<i64>,
}

/// Admin runbooks (with `exec` steps) need an administrator.
fn may_act(c: &Caller, rb: &Runbook, what: &str) -> ApiResult<()> {
    if rb.admin_only() && c.role < Role::Admin {
        return Err(ApiError::Forbidden {
            role: c.role.as_str(),
            what: format!("{what} runbook `{}` (it runs programs on the jump host: admin only)", rb.name),
        });
    }
    Ok(())
}

async fn list(State(s): State<AppState>) -> ApiResult<Json<Vec<RunbookEntry>>> {
    let lib = runner::library(&s);
    let mut out = Vec::new();
    for (file, c) in lib.check_all()? {
        if c.has_errors() {
            continue;
        }
        let Some(rb) = c.runbook else { continue };
        out.push(RunbookEntry {
            steps: rb.steps.len(),
            approval_steps: rb.steps.iter().filter(|s| s.approve).count(),
            admin_only: rb.admin_only(),
            name: rb.name,
            description: rb.description,
            targets: rb.targets,
            fault: rb.fault,
            file: file.to_string_lossy().into_owned(),
        });
    }
    Ok(Json(out))
}

async fn show(State(s): State<AppState>, Path(name): Path<String>) -> ApiResult<Json<RunbookDetail>> {
    let (rb, _) = runner::load(&s, &name)?;
    Ok(Json(RunbookDetail { admin_only: rb.admin_only(), runbook: rb }))
}

/// The request's targets, expanded through the inventory (names, racks, roles, groups, globs).
fn targets(s: &AppState, req: &RunbookRequest) -> ApiResult<Vec<String>> {
    if req.targets.is_empty() {
        return Err(ApiError::bad_request("`targets` is empty: name at least one device"));
    }
    let inv = s.base.inventory()?;
    let picked =
        lifeline_inventory::select(&inv, &req.targets).map_err(lifeline_engine::EngineError::Select)?;
    Ok(picked.iter().map(|d| d.name.to_string()).collect())
}

fn options(req: &RunbookRequest) -> RunOptions {
    RunOptions { vars: req.vars.iter().map(|(k, v)| (k.clone(), v.clone())).collect(), cause: None }
}

async fn plan(
    State(s): State<AppState>,
    Extension(c): Extension<Caller>,
    Path(name): Path<String>,
    Json(req): Json<RunbookRequest>,
) -> ApiResult<Json<Vec<PlanView>>> {
    let (rb, _) = runner::load(&s, &name)?;
    let x = s.runbooks.executor(s.engine_for(&c, None));
    let opts = options(&req);
    let mut plans = Vec::new();
    for t in targets(&s, &req)? {
        plans.push(x.plan(&rb, &t, &opts).await?);
    }
    Ok(Json(plans))
}

async fn start(
    State(s): State<AppState>,
    Extension(c): Extension<Caller>,
    Path(name): Path<String>,
    Json(req): Json<RunbookRequest>,
) -> ApiResult<Json<Vec<RunRecord>>> {
    let (rb, text) = runner::load(&s, &name)?;
    may_act(&c, &rb, "start")?;
    let opts = options(&req);
    let mut views = Vec::new();
    for t in targets(&s, &req)? {
        views.push(runner::admit(&s, s.engine_for(&c, None), &rb, &text, &t, &opts, false).await?);
    }
    Ok(Json(views))
}

async fn runs(State(s): State<AppState>, Query(q): Query<RunsQuery>) -> ApiResult<Json<Vec<RunRecord>>> {
    let limit = q.limit.unwrap_or(200).clamp(1, 10_000);
    let rows = s.base.runs_recent(if q.target.is_some() { 10_000 } else { limit }).await?;
    let views: Vec<RunView> = rows
        .iter()
        .filter(|r| q.target.as_ref().is_none_or(|t| &r.target == t))
        .take(usize::try_from(limit).unwrap_or(200))
        .map(|r| RunView::build(r, None, &[]))
        .collect();
    Ok(Json(views))
}

async fn status(
    State(s): State<AppState>,
    Extension(c): Extension<Caller>,
    Path(id): Path<String>,
) -> ApiResult<Json<RunRecord>> {
    Ok(Json(s.runbooks.executor(s.engine_for(&c, None)).status(&id).await?))
}

async fn journal(
    State(s): State<AppState>,
    Extension(c): Extension<Caller>,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<JournalEntry>>> {
    let (_, _, journal) = s.runbooks.executor(s.engine_for(&c, None)).load(&id).await?;
    Ok(Json(journal.into_iter().map(JournalEntry::from).collect()))
}

async fn approve(
    State(s): State<AppState>,
    Extension(c): Extension<Caller>,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> ApiResult<Json<RunRecord>> {
    let req: ApproveRequest = if body.iter().all(u8::is_ascii_whitespace) {
        ApproveRequest::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| ApiError::bad_request(format!("approve body: {e}")))?
    };
    let x = s.runbooks.executor(s.engine_for(&c, None));
    let (_, rb, _) = x.load(&id).await?;
    may_act(&c, &rb, "approve runs of")?;
    let v = x.record_approval(&id, req.skip).await?;
    runner::spawn_drive(&s, &id);
    Ok(Json(v))
}

async fn abort(
    State(s): State<AppState>,
    Extension(c): Extension<Caller>,
    Path(id): Path<String>,
) -> ApiResult<Json<RunRecord>> {
    let x = s.runbooks.executor(s.engine_for(&c, None));
    let (_, rb, _) = x.load(&id).await?;
    may_act(&c, &rb, "abort runs of")?;
    Ok(Json(x.abort(&id).await?))
}
