//! Switch configuration backups: history, diff, run now, restore (with dry run), host-key trust, schedule.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method};
use axum::routing::{get, post};
use axum::{Extension, Json};
use serde::Deserialize;

use crate::access::{Route, operator, route, viewer};
use lifeline_engine::ops::{Acted, Row};

use crate::api::answers::{
    BackupDiff, BackupRow, BackupRun, HistoryEntry, Restore, RestoreAnswer, ScheduledBackup,
};
use crate::api::engine;
use crate::auth::Caller;
use crate::error::ApiResult;
use crate::state::AppState;

pub fn routes() -> Vec<Route> {
    vec![
        route(
            Method::GET,
            "/api/v1/backups/schedule",
            viewer(),
            "backups",
            "Each switch's next scheduled backup.",
            get(schedule),
        )
        .returns_list::<ScheduledBackup>(),
        route(
            Method::POST,
            "/api/v1/backups/run",
            operator(),
            "backups",
            "Back up switches now (`targets`, default all).",
            post(run),
        )
        .body("TargetsRequest")
        .returns_list::<BackupRow>(),
        route(
            Method::GET,
            "/api/v1/backups/{switch}",
            viewer(),
            "backups",
            "Versions of a switch's configuration, oldest first.",
            get(history),
        )
        .returns_list::<HistoryEntry>(),
        route(
            Method::GET,
            "/api/v1/backups/{switch}/diff",
            viewer(),
            "backups",
            "Diff between two versions (`?from=&to=`, default the last two).",
            get(diff),
        )
        .returns::<BackupDiff>(),
        route(
            Method::POST,
            "/api/v1/backups/{switch}/restore",
            operator(),
            "backups",
            "Restore a version (`dry_run` shows the diff and checks everything first).",
            post(restore),
        )
        .body("RestoreRequest")
        .returns::<RestoreAnswer>(),
    ]
}

async fn schedule(State(s): State<AppState>) -> ApiResult<Json<Vec<ScheduledBackup>>> {
    Ok(Json(s.base.backup_schedule(s.clock.now())?))
}

async fn run(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Option<Json<super::devices::TargetsRequest>>,
) -> ApiResult<Json<Vec<Row<Acted<BackupRun>>>>> {
    let req = body.map(|b| b.0).unwrap_or_default();
    let l = engine(&s, &caller, &headers)?;
    let targets = l.select_switches(&req.targets)?;
    let rows = l.backup_run(targets, &Default::default(), |_| {}).await?;
    for r in &rows {
        s.metrics.backups.inc(&[("trigger", "api"), ("result", if r.is_ok() { "ok" } else { "failed" })]);
    }
    Ok(Json(rows))
}

async fn history(
    State(s): State<AppState>,
    Path(switch): Path<String>,
) -> ApiResult<Json<Vec<HistoryEntry>>> {
    match s.base.backup_history(&switch).await {
        Ok(v) => Ok(Json(v)),
        // A switch of the inventory that was never backed up has an empty history, not a missing one: the
        // web page lists no versions and offers "Run backup now" (the engine's NotFound suits the CLI).
        Err(lifeline_engine::EngineError::NotFound { .. })
            if s.base
                .inventory()
                .is_ok_and(|inv| inv.devices.iter().any(|d| d.name.to_string() == switch)) =>
        {
            Ok(Json(Vec::new()))
        }
        Err(e) => Err(e.into()),
    }
}

#[derive(Debug, Deserialize)]
pub struct DiffQuery {
    pub from: Option<u32>,
    pub to: Option<u32>,
}

async fn diff(
    State(s): State<AppState>,
    Path(switch): Path<String>,
    Query(q): Query<DiffQuery>,
) -> ApiResult<Json<BackupDiff>> {
    Ok(Json(s.base.backup_diff(&switch, q.from, q.to).await?))
}

#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
pub struct RestoreRequest {
    /// Default: the newest version.
    pub version: Option<u32>,
    /// Another switch to restore onto (a spare); default: the same one.
    pub to: Option<String>,
    #[serde(default)]
    pub dry_run: bool,
    /// Push the scrubbed copy when no sealed raw copy exists (secrets become `<removed>`).
    #[serde(default)]
    pub allow_scrubbed: bool,
}

async fn restore(
    State(s): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    Path(switch): Path<String>,
    body: Option<Json<RestoreRequest>>,
) -> ApiResult<Json<Acted<Restore>>> {
    let r = body.map(|b| b.0).unwrap_or_default();
    let l = engine(&s, &caller, &headers)?;
    let out = l.backup_restore(&switch, r.version, r.to.as_deref(), r.dry_run, r.allow_scrubbed).await?;
    Ok(Json(out))
}
