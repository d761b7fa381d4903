//! `GET /api/v1/lemons`: nodes that fail again after re-admission, with their history (probation and
//! lemons, `lifeline_engine::probation`). The same list as `lifeline fault lemons --json`.

use axum::Json;
use axum::extract::{Query, State};
use axum::http::Method;
use axum::routing::get;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::access::{Route, route, viewer};
use crate::error::ApiResult;
use crate::fleet_state::ts;
use crate::state::AppState;

pub fn routes() -> Vec<Route> {
    vec![
        route(
            Method::GET,
            "/api/v1/lemons",
            viewer(),
            "faults",
            "Nodes whose faults recur after re-admission (recurrence score at or over `[probation] lemon-threshold`), worst first, with their probation, recurrences and releases; `?all=true` adds every node on probation or with a recurrence.",
            get(list),
        )
        .returns::<Lemons>(),
    ]
}

#[derive(Debug, Deserialize)]
pub struct LemonQuery {
    #[serde(default)]
    pub all: bool,
}

/// A node's newest probation.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Probation {
    /// `on`, `passed` or `recurred`.
    pub state: String,
    pub readmitted_at: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    pub checks: i64,
    pub last_check: Option<DateTime<Utc>>,
    /// The report that justified the re-admission.
    pub report_digest: Option<String>,
}

/// One recurrence: a fault or a failing check within the node's probation.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Recurrence {
    pub at: Option<DateTime<Utc>>,
    /// The fault kind, or `probation-check`.
    pub cause: String,
    pub fault: Option<i64>,
    pub readmitted_at: Option<DateTime<Utc>>,
    pub message: Option<String>,
}

/// A person's word that the node may be re-admitted once.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Release {
    pub by: String,
    pub reason: String,
    pub at: Option<DateTime<Utc>>,
    pub used_at: Option<DateTime<Utc>>,
}

/// One node's standing.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Lemon {
    pub node: String,
    /// Recurrences within `[probation] lemon-window`.
    pub score: u32,
    pub threshold: u32,
    pub lemon: bool,
    /// Its re-admission waits for a person's release.
    pub readmit_refused: bool,
    pub probation: Option<Probation>,
    pub history: Vec<Recurrence>,
    pub releases: Vec<Release>,
}

/// `GET /api/v1/lemons`.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Lemons {
    pub lemons: Vec<Lemon>,
}

impl From<lifeline_engine::probation::Standing> for Lemon {
    fn from(s: lifeline_engine::probation::Standing) -> Lemon {
        Lemon {
            node: s.node,
            score: s.score,
            threshold: s.threshold,
            lemon: s.lemon,
            readmit_refused: s.readmit_refused,
            probation: s.probation.map(|p| Probation {
                state: p.state,
                readmitted_at: ts(p.readmitted_at_ms),
                until: ts(p.until_ms),
                checks: p.checks,
                last_check: p.last_check_ms.and_then(ts),
                report_digest: p.report_digest,
            }),
            history: s
                .history
                .into_iter()
                .map(|r| Recurrence {
                    at: ts(r.at_ms),
                    message: r.detail.get("message").and_then(|m| m.as_str()).map(str::to_owned),
                    cause: r.cause,
                    fault: r.fault,
                    readmitted_at: ts(r.readmitted_at_ms),
                })
                .collect(),
            releases: s
                .releases
                .into_iter()
                .map(|r| Release {
                    by: r.by,
                    reason: r.reason,
                    at: ts(r.at_ms),
                    used_at: r.used_at_ms.and_then(ts),
                })
                .collect(),
        }
    }
}

async fn list(State(s): State<AppState>, Query(q): Query<LemonQuery>) -> ApiResult<Json<Lemons>> {
    let lemons = s.base.lemons(q.all).await?;
    Ok(Json(Lemons { lemons: lemons.into_iter().map(Lemon::from).collect() }))
}
