//! The audit log over HTTP: query (filters by target, actor, action, outcome) and export as CSV or JSON.

use axum::Json;
use axum::extract::{Query, State};
use axum::http::{Method, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use lifeline_engine::ops::audit_log::AuditRow;
use serde::Deserialize;

use crate::access::{Route, route, viewer};
use crate::api::model::AuditRecord;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

pub fn routes() -> Vec<Route> {
    vec![
        route(
            Method::GET,
            "/api/v1/audit",
            viewer(),
            "audit",
            "Audit rows, newest first (`?target=&actor=&action=&outcome=&limit=`).",
            get(query),
        )
        .returns_list::<AuditRecord>(),
        route(
            Method::GET,
            "/api/v1/audit/export",
            viewer(),
            "audit",
            "The same rows as a download: CSV (`?format=csv`, the default) or JSON (`?format=json`, as `GET /api/v1/audit`).",
            get(export),
        )
        .returns_text("text/csv"),
    ]
}

#[derive(Debug, Deserialize)]
pub struct AuditQuery {
    pub target: Option<String>,
    pub actor: Option<String>,
    pub action: Option<String>,
    pub outcome: Option<String>,
    pub limit: Option<i64>,
    pub format: Option<String>,
}

async fn rows(s: &AppState, q: &AuditQuery) -> ApiResult<Vec<AuditRow>> {
    let limit = q.limit.unwrap_or(200).clamp(1, 100_000);
    // Filters other than the target are applied here over a wider window (the store indexes by target).
    let filtered = q.actor.is_some() || q.action.is_some() || q.outcome.is_some();
    let fetch = if filtered { (limit * 20).min(200_000) } else { limit };
    let rows = s.base.audit_log(q.target.as_deref(), fetch).await?;
    Ok(rows
        .into_iter()
        .filter(|r| q.actor.as_deref().is_none_or(|a| r.entry.actor == a))
        .filter(|r| {
            q.action
                .as_deref()
                .is_none_or(|a| r.entry.action == a || r.entry.action.starts_with(&format!("{a}.")))
        })
        .filter(|r| q.outcome.as_deref().is_none_or(|o| r.entry.outcome == o))
        .take(usize::try_from(limit).unwrap_or(usize::MAX))
        .collect())
}

async fn query(State(s): State<AppState>, Query(q): Query<AuditQuery>) -> ApiResult<Json<Vec<AuditRecord>>> {
    Ok(Json(rows(&s, &q).await?.into_iter().map(AuditRecord::from_row).collect::<ApiResult<_>>()?))
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_owned() }
}

pub fn to_csv(rows: &[AuditRow]) -> String {
    let mut out = String::from("id,at,actor,action,target,outcome,request_id,detail\n");
    for r in rows {
        let at = chrono::DateTime::from_timestamp_millis(r.at_ms).map(|t| t.to_rfc3339()).unwrap_or_default();
        let fields = [
            r.id.to_string(),
            at,
            r.entry.actor.clone(),
            r.entry.action.clone(),
            r.entry.target.clone(),
            r.entry.outcome.clone(),
            r.entry.request_id.clone().unwrap_or_default(),
            r.entry.detail.to_string(),
        ];
        out.push_str(&fields.iter().map(|f| csv_field(f)).collect::<Vec<_>>().join(","));
        out.push('\n');
    }
    out
}

async fn export(State(s): State<AppState>, Query(q): Query<AuditQuery>) -> ApiResult<Response> {
    let rows = rows(&s, &q).await?;
    match q.format.as_deref().unwrap_or("csv") {
        "csv" => Ok((
            [
                (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
                (header::CONTENT_DISPOSITION, "attachment; filename=\"lifeline-audit.csv\""),
            ],
            to_csv(&rows),
        )
            .into_response()),
        "json" => {
            let rows: Vec<AuditRecord> =
                rows.into_iter().map(AuditRecord::from_row).collect::<ApiResult<_>>()?;
            Ok(([(header::CONTENT_DISPOSITION, "attachment; filename=\"lifeline-audit.json\"")], Json(rows))
                .into_response())
        }
        other => Err(ApiError::bad_request(format!("format `{other}`: csv or json"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_what_needs_quoting() {
        let r = AuditRow {
            id: 7,
            at_ms: 0,
            entry: lifeline_engine::ops::audit_log::AuditEntry {
                actor: "web:ann".into(),
                action: "power.cycle".into(),
                target: "n1".into(),
                outcome: "ok".into(),
                detail: serde_json::json!({"a": "x,y"}),
                request_id: None,
            },
        };
        let csv = to_csv(&[r]);
        assert_eq!(
            csv.lines().nth(1).unwrap(),
            "7,1970-01-01T00:00:00+00:00,web:ann,power.cycle,n1,ok,,\"{\"\"a\"\":\"\"x,y\"\"}\""
        );
    }
}
