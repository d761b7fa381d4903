//! One device's story, newest first, for its page: its state in words now (the same [`Snapshot`] row the
//! overview counts), then every fault record, every runbook run with each step's outcome and evidence
//! digest, and every audited action on it (power, drain and re-admission, approvals, escalations), in time
//! order. Long reasons come summarized ([`summarize_reason`]) with the whole text beside.
//!
//! [`Snapshot`]: crate::api::overview::Snapshot

use axum::Json;
use axum::extract::{Path, State};
use axum::http::Method;
use axum::routing::get;
use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::access::{Route, route, viewer};
use crate::api::overview::{FleetRow, snapshot};
use crate::error::{ApiError, ApiResult};
use crate::fleet_state::{summarize_reason, ts};
use crate::state::AppState;

pub fn routes() -> Vec<Route> {
    vec![
        route(
            Method::GET,
            "/api/v1/devices/{name}/timeline",
            viewer(),
            "devices",
            "A device's state in words and its timeline, newest first: fault records, runbook runs and their steps (with evidence digests), audited actions.",
            get(timeline),
        )
        .returns::<Timeline>(),
    ]
}

/// How many entries a timeline carries (newest kept).
const ENTRIES: usize = 300;
/// How many of the device's newest runs are opened step by step.
const RUNS_DETAILED: usize = 20;

/// One thing that happened to the device.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Entry {
    pub at: Option<DateTime<Utc>>,
    /// `fault`, `run`, `step`, `action`.
    pub kind: String,
    pub title: String,
    /// In a few words; `full` holds the whole text when it was summarized.
    pub detail: Option<String>,
    pub full: Option<String>,
    pub run: Option<String>,
    pub fault: Option<i64>,
    pub evidence_digest: Option<String>,
}

/// `GET /api/v1/devices/{name}/timeline`.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Timeline {
    pub device: FleetRow,
    pub entries: Vec<Entry>,
}

fn summarized(text: Option<&str>) -> (Option<String>, Option<String>) {
    match text.map(str::trim).filter(|t| !t.is_empty()) {
        None => (None, None),
        Some(t) => {
            let s = summarize_reason(t);
            let full = (s != t).then(|| t.to_owned());
            (Some(s), full)
        }
    }
}

fn entry(at_ms: i64, kind: &str, title: String) -> Entry {
    Entry {
        at: ts(at_ms),
        kind: kind.into(),
        title,
        detail: None,
        full: None,
        run: None,
        fault: None,
        evidence_digest: None,
    }
}

async fn timeline(State(s): State<AppState>, Path(name): Path<String>) -> ApiResult<Json<Timeline>> {
    let snap = snapshot(&s).await?;
    let device = snap.rows.iter().find(|r| r.name == name).cloned().ok_or_else(|| {
        ApiError::Engine(lifeline_engine::EngineError::UnknownDevice { name: name.clone() })
    })?;
    let mut out: Vec<(i64, Entry)> = Vec::new();
    for f in s.base.faults(None, 100_000).await?.into_iter().filter(|f| f.device == name) {
        let mut e = entry(f.opened_at_ms, "fault", format!("fault opened: {} ({})", f.kind, f.severity));
        (e.detail, e.full) = summarized(Some(&f.message));
        e.fault = Some(f.id);
        out.push((f.opened_at_ms, e));
        if f.state == "resolved" {
            let mut e = entry(f.updated_at_ms, "fault", format!("fault resolved: {}", f.kind));
            e.fault = Some(f.id);
            out.push((f.updated_at_ms, e));
        } else if let (Some(by), Some(at)) = (&f.acked_by, f.acked_at_ms) {
            let mut e = entry(at, "fault", format!("fault acknowledged by {by}: {}", f.kind));
            e.fault = Some(f.id);
            out.push((at, e));
        }
    }
    let runs: Vec<_> = s.base.runs_recent(10_000).await?.into_iter().filter(|r| r.target == name).collect();
    for (i, r) in runs.iter().enumerate() {
        let mut e = entry(r.created_at_ms, "run", format!("run {} started by {}", r.runbook, r.actor));
        e.run = Some(r.id.clone());
        out.push((r.created_at_ms, e));
        if let Some(end) = r.ended_at_ms {
            let mut e = entry(end, "run", format!("run {} ended {}", r.runbook, r.state));
            (e.detail, e.full) = summarized(r.reason.as_deref());
            e.run = Some(r.id.clone());
            out.push((end, e));
        }
        if i >= RUNS_DETAILED {
            continue;
        }
        for j in s.base.run_journal(&r.id).await? {
            if j.phase != "outcome" {
                continue;
            }
            let mut e = entry(j.at_ms, "step", format!("step {} {}", j.step, j.state));
            (e.detail, e.full) = summarized(j.detail.get("message").and_then(|m| m.as_str()));
            e.run = Some(r.id.clone());
            e.evidence_digest = j.evidence.get("digest").and_then(|d| d.as_str()).map(str::to_owned);
            out.push((j.at_ms, e));
        }
    }
    for a in s.base.audit_log(Some(&name), 500).await? {
        let mut e =
            entry(a.at_ms, "action", format!("{} {} by {}", a.entry.action, a.entry.outcome, a.entry.actor));
        let why =
            a.entry.detail.get("reason").or_else(|| a.entry.detail.get("message")).and_then(|v| v.as_str());
        (e.detail, e.full) = summarized(why);
        if let Some(run) = a.entry.actor.strip_prefix("runbook:") {
            e.run = Some(run.split('/').next().unwrap_or(run).to_owned());
        }
        out.push((a.at_ms, e));
    }
    out.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
    Ok(Json(Timeline { device, entries: out.into_iter().take(ENTRIES).map(|(_, e)| e).collect() }))
}
